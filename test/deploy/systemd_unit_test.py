"""deploy/systemd/uring-http.service: the keys a drain-friendly Type=notify
service needs, its ExecStart flags accepted by the real binary, and
`systemd-analyze verify` when that works here.

With a .socket unit too (uring-http-activated.socket and its service): the
socket's keys (an IPv4 ListenStream, the service it starts), and the server
started as systemd would start it with ExecStart's flags, on a socket this
test opens in the socket's place (LISTEN_FDS=1): it serves there, and leaves
the socket listening when it stops.

Type=notify itself (READY=1, STOPPING=1) is tested with the binary in
test/serving/systemd_test.py, socket activation in
test/serving/socket_activation_test.py.

Usage: systemd_unit_test.py PATH_TO_UNIT PATH_TO_SERVER [PATH_TO_SOCKET_UNIT]
"""
import os
import re
import shlex
import shutil
import signal
import socket
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


def check_socket(socket_unit, socket_path, unit, unit_path):
    """The .socket unit: one IPv4 ListenStream, and it starts this service."""
    sock = socket_unit["Socket"]
    streams = sock.get("ListenStream", [])
    assert len(streams) == 1, "one ListenStream= (the -p listener): %s" % streams
    assert re.fullmatch(r"(\d{1,3}\.){3}\d{1,3}:\d+", streams[0]), (
        "ListenStream=%s: the server is IPv4 only, name an IPv4 address and a port" % streams[0])
    service = os.path.basename(unit_path)
    named = sock.get("Service", [os.path.splitext(os.path.basename(socket_path))[0] + ".service"])
    assert named[-1] == service, "the socket starts %s, not %s" % (named[-1], service)
    assert sock.get("Accept", ["no"])[-1] in ("no", "false"), "Accept=no: one server, many clients"
    assert socket_unit["Install"]["WantedBy"] == ["sockets.target"]
    socket_name = os.path.basename(socket_path)
    assert socket_name in " ".join(unit["Unit"].get("Requires", [])), "Requires=%s" % socket_name
    assert socket_name in " ".join(unit["Unit"].get("After", [])), "After=%s" % socket_name


def check_activation(server, argv):
    """ExecStart's flags on a socket passed as systemd passes it."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    port = listening.getsockname()[1]

    def give_socket():
        if listening.fileno() == 3:
            os.set_inheritable(3, True)
        else:
            os.dup2(listening.fileno(), 3)

    process = subprocess.Popen(
        ["/bin/sh", "-c", 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"', server, *argv[1:], "-A",
         "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=give_socket, close_fds=False)
    timer = threading.Timer(20, process.kill)
    timer.start()
    line = process.stdout.readline()
    timer.cancel()
    try:
        assert "listening on 127.0.0.1:%d, 1 socket(s) from systemd," % port in line, (
            "ExecStart %s under socket activation: %r %s" % (
                argv[1:], line, process.stderr.read() if process.poll() is not None else ""))
        with socket.create_connection(("127.0.0.1", port), timeout=20) as c:
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            assert c.recv(4096).startswith(b"HTTP/1.1 200"), "no answer on systemd's socket"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=40) == 0
    assert listening.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1, (
        "the server shut systemd's socket down")
    listening.close()


def systemd_analyze_verify(unit_text, server, unit_name="uring-http.service", others=()):
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
    unit = os.path.join(tmp, unit_name)
    with open(unit, "w") as f:
        # ExecStart must name an executable that exists: the one under test.
        f.write(re.sub(r"^(ExecStart=)\S+", lambda m: m.group(1) + server, unit_text,
                       flags=re.M))
    paths = [unit]
    for name, text in others:  # units beside it (a .socket), by the names they refer to
        paths.append(os.path.join(tmp, name))
        with open(paths[-1], "w") as f:
            f.write(text)
    result = subprocess.run([tool, "verify", *paths], capture_output=True, text=True, timeout=60)
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
    others = ()
    if len(sys.argv) > 3:
        socket_path = sys.argv[3]
        with open(socket_path) as f:
            socket_text = f.read()
        check_socket(parse_unit(socket_text), socket_path, parse_unit(text), unit_path)
        check_activation(server, argv)
        print("systemd_unit_test: %s starts this service, which serves on its socket and "
              "leaves it listening" % os.path.basename(socket_path))
        others = ((os.path.basename(socket_path), socket_text),)
    complaints = systemd_analyze_verify(text, server, os.path.basename(unit_path), others)
    if complaints is None:
        print("systemd_unit_test: verified by the checks above only")
    else:
        assert not complaints, "systemd-analyze verify: " + complaints
        print("systemd_unit_test: systemd-analyze verify: clean")
    print("systemd_unit_test: ok")


if __name__ == "__main__":
    main()
