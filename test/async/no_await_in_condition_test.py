"""No co_await inside an if, while or switch condition in this repository.

g++ 12.2 (Debian 12's compiler, the one this project builds with) sizes the
frame of a coroutine that awaits inside such a condition too small: the
await writes past the frame (found with ASan in test/async, see
src/async/exchange.h). The rule for our code and our users' is to await
into a local first; this test keeps src/, test/ and examples/ to it.

Usage: no_await_in_condition_test.py PATH_TO_WORKSPACE_FILE (its runfile,
which resolves to the source tree).
"""
import os
import re
import sys

# A condition that holds a co_await before its closing parenthesis (on one
# line, which is how such code is written here).
PATTERN = re.compile(r"\b(if|while|switch)\s*\((?:[^;{}]*?)\bco_await\b")


def main():
    root = os.path.dirname(os.path.realpath(sys.argv[1]))
    found = []
    scanned = 0
    for top in ("src", "test", "examples", "include"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                scanned += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        code = line.split("//", 1)[0]
                        if PATTERN.search(code):
                            found.append(f"{os.path.relpath(path, root)}:{number}: {line.strip()}")
    # The scan saw the tree (not an empty runfiles directory).
    assert scanned > 100, f"only {scanned} files under {root}"
    assert PATTERN.search("if (!(co_await ex.Sleep(d)).ok()) co_return;")
    assert not PATTERN.search("absl::Status s = co_await ex.Sleep(d);")
    if found:
        print("co_await inside a condition (g++ 12 miscompiles it; await into a local first):")
        print("\n".join(found))
        sys.exit(1)
    print(f"{scanned} files, no co_await in a condition")


if __name__ == "__main__":
    main()
