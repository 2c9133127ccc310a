"""The README shows test/public's example files verbatim.

Usage: readme_snippet_test.py README FILE...: each FILE (a path from the
workspace root, as $(location) gives it) must appear in README as the fenced
block "```cpp FILE", exactly as it is, so that the README's example is the
one that compiles and passes in this package. (The info string after `cpp`
also keeps the block out of the README-wide compile of C++ fragments: it is
a whole gtest file, compiled here.)
"""
import difflib
import re
import sys


def main():
    readme = open(sys.argv[1], encoding="utf-8").read()
    for path in sys.argv[2:]:
        text = open(path, encoding="utf-8").read()
        fence = re.escape("```cpp " + path) + r"\n(.*?)^```$"
        blocks = re.findall(fence, readme, re.M | re.S)
        assert len(blocks) == 1, "README.md has %d blocks \"```cpp %s\", not 1" % (
            len(blocks), path)
        if blocks[0] != text:
            diff = difflib.unified_diff(text.splitlines(True), blocks[0].splitlines(True),
                                        path, "README.md")
            sys.exit("README.md no longer shows %s as it is:\n%s" % (path, "".join(diff)))
    print("readme_snippet_test: ok")


if __name__ == "__main__":
    main()
