"""The README's flag tables against the shipped binary's --help.

Every "| flag | default | meaning |" table row of README.md must name flags
that --help lists, with the default --help shows; and every flag --help lists
must have a row. So the tables cannot drift from the code (issue 23 item 10:
-w's and --tls-offload's defaults disagreed, --recv-buffer-size and
--recv-buffers were missing). --help prints each default from the field the
flag sets (src/serving/flags.h), so this checks the README against the code.

Defaults are compared by meaning where the README writes them in another
form: sizes by their bytes ("1048576", "1 MiB", "1MiB"), durations by their
milliseconds ("60s", "1m").

Usage: readme_flags_test.py PATH_TO_SERVER PATH_TO_README
"""

import re
import subprocess
import sys

SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
    "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4,
}
DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def normalise(value, kind):
    """A default in a comparable form: bytes for a SIZE, milliseconds for a
    DURATION, else the text."""
    text = value.strip().strip("`").strip()
    if kind == "DURATION":
        match = re.fullmatch(r"(\d+)\s*(ms|s|m|h)?", text)
        if match:
            return int(match.group(1)) * DURATION_UNITS[match.group(2) or "s"]
    if kind == "SIZE":
        match = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", text)
        if match and match.group(2).lower() in SIZE_UNITS:
            return int(match.group(1)) * SIZE_UNITS[match.group(2).lower()]
    return text


def help_flags(server):
    """{canonical long name: (names, default or None, value word)} from --help."""
    result = subprocess.run([server, "--help"], capture_output=True, text=True, check=True)
    entries = []  # the joined text of each flag's lines
    open_entry = False
    for line in result.stdout.splitlines():
        if re.match(r"^  (-\S, )?--\S", line) or re.match(r"^      --\S", line):
            entries.append(line.strip())
            open_entry = True
        elif open_entry and line.startswith("          "):
            entries[-1] += " " + line.strip()
        else:
            open_entry = False
    flags = {}
    for entry in entries:
        head = re.match(r"(?:-(\S), )?--([a-z0-9-]+)", entry)
        short, name = head.group(1), head.group(2)
        names = {"--" + name}
        if short:
            names.add("-" + short)
        for alias in re.findall(r"\(also (--[a-z0-9-]+)", entry):
            names.add(alias)
        if name == "help":
            names.add("-?")
        default = re.search(r"\(default: (.*?)\)$", entry)
        word = re.match(r"(?:-\S, )?--[a-z0-9-]+\[?=([A-Z|a-z0-9-]+)", entry)
        flags["--" + name] = (names, default.group(1) if default else None,
                              word.group(1) if word else "")
    return flags


def readme_rows(readme):
    """(line number, [flag names], default cell) of every flag table row."""
    rows = []
    in_table = False
    with open(readme, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if re.match(r"^\| flag \| default \| meaning \|", line):
                in_table = True
                continue
            if in_table and not line.startswith("|"):
                in_table = False
            if not in_table or line.startswith("| ---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            names = [re.sub(r"\[?=.*", "", n) for n in re.findall(r"`(-[^`]+)`", cells[0])]
            rows.append((number, names, cells[1]))
    return rows


def main():
    server, readme = sys.argv[1], sys.argv[2]
    flags = help_flags(server)
    by_name = {}
    for canonical, (names, _, _) in flags.items():
        for n in names:
            by_name[n] = canonical
    errors = []
    documented = set()
    rows = readme_rows(readme)
    if len(rows) < 40:
        errors.append(f"only {len(rows)} flag rows found in the README's tables")
    for number, names, default_cell in rows:
        canonicals = []
        for n in names:
            if n not in by_name:
                errors.append(f"README.md:{number}: {n} is not in --help")
            elif by_name[n] not in canonicals:
                canonicals.append(by_name[n])
        documented.update(canonicals)
        # "auto, accept threads" for a row of two flags; one default for a
        # pair that shares it (--tls-cert, --tls-key: none).
        parts = [p.strip() for p in default_cell.split(",")] if len(canonicals) > 1 else []
        if len(parts) != len(canonicals):
            parts = [default_cell] * len(canonicals)
        for canonical, readme_default in zip(canonicals, parts):
            _, help_default, kind = flags[canonical]
            if help_default is None:
                if readme_default.strip():
                    errors.append(f"README.md:{number}: {canonical} has no default in --help, "
                                  f"the README says '{readme_default}'")
                continue
            if normalise(readme_default, kind) != normalise(help_default, kind):
                errors.append(f"README.md:{number}: {canonical}: the README's default is "
                              f"'{readme_default}', --help's is '{help_default}'")
    for canonical in flags:
        if canonical not in documented:
            errors.append(f"{canonical} (in --help) has no row in the README's flag tables")
    for error in errors:
        print(error)
    if errors:
        sys.exit(1)
    print(f"PASS: {len(flags)} flags, {len(rows)} rows")


if __name__ == "__main__":
    main()
