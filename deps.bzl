"""What a workspace that uses uring-http must declare, in one call.

In the user's WORKSPACE, after the local_repository (or equivalent) named
"uring_http":

    load("@uring_http//:deps.bzl", "uring_http_deps")
    uring_http_deps()

Bazel 4.2.3 offline needs stand-ins for the three repositories its
@bazel_tools would otherwise download (rules_cc, rules_java,
remote_coverage_tools), and the library needs @system (Debian's -dev
packages under /usr). A repository already declared under one of these names
is left alone, so a workspace that has its own keeps it.
"""

def _stand_in_impl(rctx):
    # A macro cannot turn a label into a path; a repository rule can. The
    # stand-ins are separate workspaces under third_party/, so they are
    # reached from a file of the third_party package next to them.
    directory = rctx.path(rctx.attr._anchor).dirname.get_child(rctx.attr.directory)
    for entry in directory.readdir():
        rctx.symlink(entry, entry.basename)

_stand_in = repository_rule(
    implementation = _stand_in_impl,
    local = True,
    attrs = {
        "directory": attr.string(mandatory = True),
        "_anchor": attr.label(default = Label("//third_party:system.BUILD")),
    },
)

def uring_http_deps():
    existing = native.existing_rules()
    for name in ["rules_cc", "rules_java", "remote_coverage_tools"]:
        if name not in existing:
            _stand_in(name = name, directory = name)
    if "system" not in existing:
        native.new_local_repository(
            name = "system",
            path = "/usr",
            build_file = str(Label("//third_party:system.BUILD")),
        )
