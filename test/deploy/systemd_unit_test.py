"""deploy/systemd/uring-http.service: the keys a drain-friendly Type=notify
service needs, its ExecStart flags accepted by the real binary, and
`systemd-analyze verify` when that works here.

Type=notify itself (READY=1, STOPPING=1) is tested with the binary in
test/serving/systemd_test.py.

Usage: systemd_unit_test.py PATH_TO_UNIT PATH_TO_SERVER
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading


def parse_unit(text):
    """{section: {key: [values]}}: systemd's syntax minus line continuations."""
    sections, section = {}, None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        assert not line.endswith("\\"), "line %d: continuation lines are not expected" % number
        if line.startswith("["):
            assert line.endswith("]"), "line %d: bad section header %r" % (number, line)
            section = sections.setdefault(line[1:-1], {})
            continue
        assert section is not None, "line %d: key outside a section" % number
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Za-z0-9]+", key.strip()), "line %d: %r" % (number, line)
        section.setdefault(key.strip(), []).append(value.strip())
    return sections


def seconds(duration):
    """systemd's or the server's durations: "35s", "1min 5s", "500ms", "30"."""
    units = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
    total, rest = 0.0, duration.replace(" ", "")
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)([a-z]*)", rest):
        total += float(number) * units[unit or "s"]
    assert re.fullmatch(r"(\d+(\.\d+)?[a-z]*)+", rest), "bad duration %r" % duration
    return total


def one(service, key):
    values = service.get(key)
    assert values, "[Service] has no %s=" % key
    return values[-1]


def check_keys(unit):
    service = unit["Service"]
    assert one(service, "Type") == "notify", "Type= must be notify"
    assert one(service, "KillSignal") == "SIGTERM", "SIGTERM starts the drain"
    assert one(service, "Restart") == "on-failure"
    assert int(one(service, "LimitNOFILE")) >= 65536, "the fixed-file tables need descriptors"
    assert one(service, "NoNewPrivileges") == "yes"
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]

    argv = shlex.split(one(service, "ExecStart"))
    assert argv[0].startswith("/"), "ExecStart needs an absolute path"
    assert not {"-d", "--daemonize"} & set(argv), "Type=notify runs in the foreground"
    drain = 30.0  # the server's default --shutdown-timeout
    for i, arg in enumerate(argv):
        if arg.startswith("--shutdown-timeout="):
            drain = seconds(arg.split("=", 1)[1])
        elif arg == "--shutdown-timeout":
            drain = seconds(argv[i + 1])
    stop = seconds(one(service, "TimeoutStopSec"))
    assert drain < stop <= drain + 30, "TimeoutStopSec=%s: a bit above the drain (%ss)" % (
        stop, drain)

    # io_uring must stay reachable: a filter has to keep @aio (which holds
    # io_uring_* on systemd 252) or @system-service (which includes @aio), or
    # name the three system calls.
    for value in service.get("SystemCallFilter", []):
        assert not value.startswith("~") or "io_uring" not in value and "@aio" not in value, value
        if not value.startswith("~"):
            names = set(value.split())
            assert names & {"@system-service", "@aio", "@known"} or {
                "io_uring_setup", "io_uring_enter", "io_uring_register"} <= names, value
    for value in service.get("RestrictAddressFamilies", []):
        assert {"AF_INET", "AF_UNIX"} <= set(value.split()), value
    return argv


def check_flags(server, argv):
    """The binary accepts ExecStart's flags (the port and address replaced)."""
    args = [a for a in argv[1:] if not re.match(r"(-p|--port|--address)(=|$)", a)]
    process = subprocess.Popen([server, *args, "-p", "0", "--address", "127.0.0.1", "-A", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(20, process.kill)
    timer.start()
    line = process.stdout.readline()
    timer.cancel()
    try:
        assert line.startswith("uring-http ready:"), "ExecStart flags %s: %r %s" % (
            args, line, process.stderr.read() if process.poll() is not None else "")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def systemd_analyze_verify(unit_text, server):
    """None when systemd-analyze cannot verify here, else its complaints."""
    tool = shutil.which("systemd-analyze")
    if not tool:
        return None
    tmp = tempfile.mkdtemp()
    # First a unit that is surely fine: if that fails, the tool does not work
    # in this sandbox, which says nothing about our unit.
    probe = os.path.join(tmp, "probe.service")
    with open(probe, "w") as f:
        f.write("[Service]\nType=simple\nExecStart=%s --help\n" % server)
    result = subprocess.run([tool, "verify", probe], capture_output=True, text=True, timeout=60)
    if result.returncode != 0 or result.stderr.strip() or result.stdout.strip():
        print("systemd_unit_test: systemd-analyze does not work here (%s); skipping verify"
              % (result.stderr.strip() or result.returncode))
        return None
    unit = os.path.join(tmp, "uring-http.service")
    with open(unit, "w") as f:
        # ExecStart must name an executable that exists: the one under test.
        f.write(re.sub(r"^(ExecStart=)\S+", lambda m: m.group(1) + server, unit_text,
                       flags=re.M))
    result = subprocess.run([tool, "verify", unit], capture_output=True, text=True, timeout=60)
    complaints = (result.stdout + result.stderr).strip()
    if result.returncode != 0 and not complaints:
        complaints = "exit status %d" % result.returncode
    return complaints


def main():
    unit_path, server = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(unit_path) as f:
        text = f.read()
    argv = check_keys(parse_unit(text))
    print("systemd_unit_test: keys ok (Type=notify, SIGTERM, TimeoutStopSec > drain, ...)")
    check_flags(server, argv)
    print("systemd_unit_test: the server accepts ExecStart's flags")
    complaints = systemd_analyze_verify(text, server)
    if complaints is None:
        print("systemd_unit_test: verified by the checks above only")
    else:
        assert not complaints, "systemd-analyze verify: " + complaints
        print("systemd_unit_test: systemd-analyze verify: clean")
    print("systemd_unit_test: ok")


if __name__ == "__main__":
    main()
