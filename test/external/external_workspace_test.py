"""The README's "Using it from your own Bazel workspace", done for real.

Writes the README's files (WORKSPACE, .bazelrc, BUILD.bazel, hello.cc) into a
throwaway workspace whose local_repository points at this repository's source
tree, builds //:hello there with a nested Bazel, and checks that:
  - the program builds against @uring_http//:uring_http and serves GET /;
  - no target under @uring_http//src/... is visible to that workspace, and a
    dependency on one fails with Bazel's visibility error;
  - the README's "Testing your handlers" example builds there against
    @uring_http//:testing and passes, in the same build as //:hello, and a
    non-test target cannot depend on that testonly target.

Usage: external_workspace_test.py PATH_TO_WORKSPACE_FILE PATH_TO_README
(the runfiles of //:WORKSPACE and //:README.md; the first resolves, through
its symlinks, to the source tree).
"""
import os
import re
import shutil
import subprocess
import sys

from example_server import ExampleServer

SECTION = "## Using it from your own Bazel workspace"
TESTING_SECTION = "## Testing your handlers"
# "`NAME`:" or "`NAME` (why):", a blank line, then a fenced block.
FILE_BLOCK = re.compile(r"^`([^`\s]+)`[^\n]*:\n\n```\w*\n(.*?)^```$", re.M | re.S)
PLACEHOLDER = "/path/to/uring-http"


def readme_section(readme_path, title):
    text = open(readme_path, encoding="utf-8").read()
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:end if end >= 0 else len(text)]


def readme_files(readme_path):
    section = readme_section(readme_path, SECTION)
    return {name: body for name, body in FILE_BLOCK.findall(section)}


def readme_test_example(readme_path):
    section = readme_section(readme_path, TESTING_SECTION)
    blocks = re.findall(r"^```cpp\b[^\n]*\n(.*?)^```$", section, re.M | re.S)
    assert len(blocks) == 1, "%d C++ blocks under %s" % (len(blocks), TESTING_SECTION)
    return blocks[0]


def source_tree(workspace_file):
    root = os.path.dirname(os.path.realpath(workspace_file))
    with open(os.path.join(root, "WORKSPACE"), encoding="utf-8") as f:
        assert 'workspace(name = "uring_http")' in f.read(), root
    assert os.path.isfile(os.path.join(root, "deps.bzl")), root
    return root


class NestedBazel:
    """`bazel --batch` with its own output root: nothing shared with the Bazel
    that runs this test, and no server left behind."""

    def __init__(self, workspace, scratch):
        self.workspace = workspace
        binary = shutil.which("bazel") or "/usr/bin/bazel"
        # The system rc stays: Debian's names the install base and the JDK.
        self.startup = [binary, "--batch", "--output_user_root=" + os.path.join(scratch, "root"),
                        "--nohome_rc"]
        # The outer test's environment (runfiles variables and the like) is
        # not a user's shell's.
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch,
                    "TMPDIR": scratch, "USER": os.environ.get("USER", "user"),
                    "LANG": "C.UTF-8"}

    def run(self, *args):
        common = ["--color=no", "--curses=no"]
        if args[0] == "build":
            # The test already runs in the outer Bazel's sandbox; a sandbox
            # nested in it is not something to count on.
            common.append("--spawn_strategy=local")
            # CI names the machine's disk cache: the nested build's compiles
            # are then done once per change, not on every run.
            if os.environ.get("URING_HTTP_DISK_CACHE"):
                common.append("--disk_cache=" + os.environ["URING_HTTP_DISK_CACHE"])
        return subprocess.run(self.startup + [args[0], *common, *args[1:]],
                              cwd=self.workspace, env=self.env, capture_output=True,
                              text=True, timeout=800)

    def ok(self, *args):
        result = self.run(*args)
        assert result.returncode == 0, "bazel %s failed (%d):\n%s" % (
            " ".join(args), result.returncode, result.stderr[-6000:])
        return result.stdout


def make_writable_and_remove(path):
    # Bazel leaves its output base read-only in places.
    for directory, _, _ in os.walk(path):
        try:
            os.chmod(directory, 0o755)
        except OSError:
            pass
    shutil.rmtree(path, ignore_errors=True)


def main():
    source = source_tree(sys.argv[1])
    files = readme_files(sys.argv[2])
    assert set(files) == {"WORKSPACE", ".bazelrc", "BUILD.bazel", "hello.cc"}, sorted(files)
    assert PLACEHOLDER in files["WORKSPACE"], files["WORKSPACE"]

    scratch = os.path.join(os.environ["TEST_TMPDIR"], "external")
    make_writable_and_remove(scratch)
    workspace = os.path.join(scratch, "workspace")
    os.makedirs(workspace)
    for name, body in files.items():
        if name == "WORKSPACE":
            body = body.replace(PLACEHOLDER, source)
        with open(os.path.join(workspace, name), "w", encoding="utf-8") as f:
            f.write(body)
    # Not from the README: a target a user should not be able to write.
    os.makedirs(os.path.join(workspace, "probe"))
    with open(os.path.join(workspace, "probe", "BUILD.bazel"), "w", encoding="utf-8") as f:
        f.write('cc_library(name = "internal", deps = ["@uring_http//src/io:ring"])\n')
        # The test helpers: a test may use them, a production binary not.
        testing_deps = ('["@uring_http//:testing", "@uring_http//:uring_http", '
                        '"@system//:gtest_main"]')
        f.write('cc_test(name = "users_test", srcs = ["users_test.cc"], deps = %s)\n'
                % testing_deps)
        f.write('cc_binary(name = "production", srcs = ["users_test.cc"], deps = %s)\n'
                % testing_deps)
    with open(os.path.join(workspace, "probe", "users_test.cc"), "w", encoding="utf-8") as f:
        f.write(readme_test_example(sys.argv[2]))

    bazel = NestedBazel(workspace, scratch)
    try:
        bazel.ok("build", "//:hello")
        # The README's .bazelrc builds a user's program optimised (issue 23
        # item 10: it did not, and Bazel's default is fastbuild).
        bin_dir = bazel.ok("info", "bazel-bin").strip()
        assert os.path.basename(os.path.dirname(bin_dir)).endswith("-opt"), bin_dir
        # The README's testing example compiles and runs in this workspace
        # (test/public:readme_testing_example_test); here analysis shows a
        # user's workspace can depend on @uring_http//:testing and gtest
        # (compiling it again would add a minute and a half to CI).
        bazel.ok("build", "--nobuild", "//probe:users_test")

        # The public surface, as Bazel sees it from outside: of every target
        # under src/ and the top-level one, only the top-level one.
        internal = bazel.ok("query", "@uring_http//src/...").split()
        assert len(internal) > 20, internal  # the pattern did reach the library
        visible = bazel.ok("query", "visible(//:hello, @uring_http//src/... + "
                           "@uring_http//:uring_http + @uring_http//:testing)").split()
        assert sorted(visible) == ["@uring_http//:testing", "@uring_http//:uring_http"], visible

        refused = bazel.run("build", "--nobuild", "--keep_going", "//probe:internal",
                            "//probe:production")
        assert refused.returncode != 0, "an internal target was accepted"
        assert ("target '@uring_http//src/io:ring' is not visible from target "
                "'//probe:internal'") in refused.stderr, refused.stderr[-3000:]
        assert ("non-test target '//probe:production' depends on testonly target "
                "'@uring_http//:testing'") in refused.stderr, refused.stderr[-3000:]

        hello = os.path.join(workspace, "bazel-bin", "hello")
        with ExampleServer(hello) as server:
            status, _, body = server.request("GET", "/")
            assert (status, body) == (200, "hello from my workspace\n"), (status, body)
            status, _, _ = server.request("GET", "/nope")
            assert status == 404, status
    finally:
        make_writable_and_remove(scratch)
    print("external_workspace_test: ok")


if __name__ == "__main__":
    main()
