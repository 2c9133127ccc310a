"""deploy/seccomp.json: the container profile that allows io_uring.

Always: the JSON is in the format Docker and Podman load (and containerd for
a Kubernetes Localhost profile); it refuses what it does not name with
ENOSYS; it allows io_uring_setup, io_uring_enter, io_uring_register and
every call in REQUIRED below (what the server, glibc and a container runtime
were seen to make); every name is a real system call; and it allows none of
the calls in FORBIDDEN.

Where Python's libseccomp binding is installed (Debian's python3-seccomp;
the test installs nothing and says so when it is missing): the server runs
under the profile, loaded with libseccomp as a runtime would, serves every
kind of request and drains on SIGTERM with status 0; and under the same
profile without the three io_uring calls it exits 1 with the one message
that names the seccomp filter and deploy/seccomp.json.

Usage: seccomp_profile_test.py PATH_TO_PROFILE PATH_TO_SERVER
"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading

IO_URING = ["io_uring_setup", "io_uring_enter", "io_uring_register"]

# What the profile must allow, and where each call was seen (x86_64, Linux
# 6.18, Debian 12's glibc 2.36).
REQUIRED = {
    # strace -f of the server: starting with -A 2 -w 4 --root --access-log
    # --pid-file, serving every endpoint and static files, failing to bind a
    # port in use, draining on SIGTERM and SIGINT.
    "server": [
        "access", "arch_prctl", "bind", "brk", "clock_nanosleep", "clone3", "close", "execve",
        "exit", "exit_group", "fcntl", "futex", "getpid", "getrandom", "getsockname", "listen",
        "lseek", "madvise", "mmap", "mprotect", "munmap", "newfstatat", "openat", "pipe2",
        "prctl", "pread64", "prlimit64", "read", "rseq", "rt_sigaction", "rt_sigprocmask",
        "sched_setscheduler", "set_robust_list", "set_tid_address", "setsockopt", "shutdown",
        "signalfd4", "socket", "uname", "unlink", "write",
    ],
    # strace -f of runc 1.1 from the filter's installation to the server's
    # execve, as UID 65532, with and without no_new_privileges (without it,
    # the filter is in place before the user changes and stdio is chowned).
    "runtime": [
        "capget", "capset", "chdir", "close", "epoll_ctl", "epoll_pwait", "execve", "faccessat2",
        "fchown", "fcntl", "fstat", "fstatfs", "futex", "getcwd", "getdents64", "getpid",
        "getppid", "nanosleep", "openat", "prctl", "read", "sched_yield", "setgid", "setgroups",
        "setuid", "write",
    ],
}

# Calls that would widen what a compromised server can do to its host; none
# is needed (Docker's own default allows some only with CAP_SYS_ADMIN).
FORBIDDEN = [
    "acct", "add_key", "bpf", "chroot", "clock_settime", "delete_module", "finit_module",
    "init_module", "ioperm", "iopl", "kexec_file_load", "kexec_load", "keyctl", "mount",
    "move_mount", "open_by_handle_at", "perf_event_open", "personality", "pivot_root",
    "process_vm_readv", "process_vm_writev", "ptrace", "reboot", "request_key", "setns",
    "settimeofday", "swapoff", "swapon", "umount2", "unshare", "userfaultfd",
]

ENOSYS = 38

# Where the kernel headers name the system calls of x86_64 and of the
# architectures that use the generic table (arm64).
UNISTD_HEADERS = [
    "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
    "/usr/include/asm-generic/unistd.h",
]


def allowed(profile):
    names = []
    for rule in profile["syscalls"]:
        if rule["action"] == "SCMP_ACT_ALLOW":
            names += rule["names"]
    return names


def check_format(profile):
    assert set(profile) <= {"defaultAction", "defaultErrnoRet", "archMap", "syscalls"}, set(profile)
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO", profile["defaultAction"]
    # ENOSYS, not EPERM: glibc takes ENOSYS as "no such call" and falls back
    # to an older one (clone for clone3, ...).
    assert profile["defaultErrnoRet"] == ENOSYS, profile["defaultErrnoRet"]
    arches = {entry["architecture"] for entry in profile["archMap"]}
    assert {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"} <= arches, arches
    for entry in profile["archMap"]:
        assert set(entry) == {"architecture", "subArchitectures"}, entry
        assert entry["subArchitectures"] == [], "no 32-bit calls: %s" % entry
    for rule in profile["syscalls"]:
        assert set(rule) <= {"names", "action", "comment"}, rule
        assert rule["action"] == "SCMP_ACT_ALLOW", rule
        assert rule["names"] and all(isinstance(n, str) for n in rule["names"]), rule
    names = allowed(profile)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, "named twice: %s" % duplicates


def check_names(profile):
    names = set(allowed(profile))
    missing = [n for n in IO_URING if n not in names]
    assert not missing, "io_uring calls not allowed: %s" % missing
    for source, calls in REQUIRED.items():
        missing = sorted(set(calls) - names)
        assert not missing, "%s calls not allowed: %s" % (source, missing)
    widening = sorted(names & set(FORBIDDEN))
    assert not widening, "allows %s" % widening

    known = set()
    for header in UNISTD_HEADERS:
        if os.path.exists(header):
            with open(header) as f:
                known |= set(re.findall(r"#define __NR_(\w+)", f.read()))
    if not known:
        print("seccomp_profile_test: no kernel headers (linux-libc-dev): names not checked")
        return
    unknown = sorted(names - known)
    assert not unknown, "not system calls: %s" % unknown


def import_seccomp():
    """Debian's python3-seccomp, also when another Python of the same version
    (pyenv, a virtualenv) runs this test: its module is in Debian's own
    dist-packages, which only Debian's python3 searches."""
    try:
        import seccomp  # noqa: F401
        return True
    except ImportError:
        pass
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import seccomp  # noqa: F401,F811
        return True
    except ImportError:  # absent, or built for another Python version
        return False
    finally:
        sys.path.remove("/usr/lib/python3/dist-packages")


def sanitized(server):
    out = subprocess.run(["ldd", server], capture_output=True, text=True).stdout
    return re.search(r"lib(a|t|ub|l)san\.so", out) is not None


def make_filter(seccomp, names):
    """The profile as libseccomp builds it for this machine's architecture."""
    flt = seccomp.SyscallFilter(defaction=seccomp.ERRNO(ENOSYS))
    native = seccomp.Arch()
    for name in names:
        if seccomp.resolve_syscall(native, name) >= 0:  # e.g. arch_prctl is x86 only
            flt.add_rule(seccomp.ALLOW, name)
    return flt


def start(server, flt, args, tmp):
    return subprocess.Popen(
        [server, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=flt.load, cwd=tmp)


def request(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request(method, path, body=body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def check_serves(server, names, tmp):
    import seccomp  # checked by the caller
    root = os.path.join(tmp, "www")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("hello from the profile\n")
    args = ["-p", "0", "--address", "127.0.0.1", "-A", "2", "-w", "2", "--root", root,
            "--access-log", os.path.join(tmp, "access.log"), "--shutdown-timeout=5s"]
    process = start(server, make_filter(seccomp, names), args, tmp)
    timer = threading.Timer(30, process.kill)
    timer.start()
    try:
        line = process.stdout.readline()
        assert line.startswith("uring-http ready:"), (line, process.poll(), process.stderr.read())
        port = int(re.search(r"listening on \S+:(\d+)", line).group(1))
        with open("/proc/%d/status" % process.pid) as f:
            assert re.search(r"^Seccomp:\s+2$", f.read(), flags=re.M), "the filter is not on"

        body = os.urandom(200000)
        checks = [
            ("GET", "/test/fast", None, 200, None),
            ("GET", "/test/slow", None, 200, None),
            ("GET", "/test/bytes?300000", None, 200, b"x" * 300000),  # a zero-copy send
            ("POST", "/test/echo", body, 200, body),
            ("POST", "/test/sink", body, 200, b"200000\n"),
            ("GET", "/test/stream?bytes=500000", None, 200, b"x" * 500000),
            ("GET", "/index.html", None, 200, b"hello from the profile\n"),
            ("GET", "/nothing-here", None, 404, None),
            ("GET", "/healthz", None, 200, b"ok"),
        ]
        for method, path, payload, status, expected in checks:
            got_status, got = request(port, method, path, payload)
            assert got_status == status, (path, got_status, got[:200])
            if expected is not None:
                assert got.strip() == expected.strip(), (path, len(got), got[:80])
        status, metrics = request(port, "GET", "/metrics")
        assert status == 200 and b"uring_http_" in metrics, status
        print("seccomp_profile_test: under the profile the server served %d requests"
              % (len(checks) + 1))
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
        timer.cancel()
    assert code == 0, ("exit status %d after SIGTERM" % code, process.stderr.read())


def check_refused(server, names, tmp):
    """The profile without io_uring: a filter like a runtime's default."""
    import seccomp
    without = [n for n in names if n not in IO_URING]
    process = start(server, make_filter(seccomp, without), ["-p", "0", "-A", "2", "-w", "2"], tmp)
    try:
        out, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 1, (process.returncode, out, err)
    assert out == "", out
    lines = err.splitlines()
    assert len(lines) == 1, "one message, got %r" % err
    assert lines[0].startswith(
        "uring-http: io_uring is probably blocked by a seccomp filter: io_uring_setup failed "
        "with ENOSYS"), lines[0]
    assert "--security-opt seccomp=deploy/seccomp.json" in lines[0], lines[0]
    print("seccomp_profile_test: without io_uring: exit 1 and %r" % lines[0][:100])


def main():
    profile_path, server = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(profile_path) as f:
        profile = json.load(f)
    check_format(profile)
    check_names(profile)
    names = allowed(profile)
    print("seccomp_profile_test: %s allows %d calls, io_uring among them" % (profile_path,
                                                                             len(names)))
    if not import_seccomp():
        print("seccomp_profile_test: SKIPPED running the server under the profile: "
              "no libseccomp binding for this Python %s (apt-get install python3-seccomp)"
              % sys.version.split()[0])
        return
    if sanitized(server):
        # The sanitizer runtimes make calls of their own (personality,
        # sigaltstack, readlink, ...) that a container's server does not.
        print("seccomp_profile_test: SKIPPED running the server under the profile: "
              "a sanitizer build")
        return
    tmp = os.environ.get("TEST_TMPDIR") or tempfile.mkdtemp()
    check_serves(server, names, tmp)
    check_refused(server, names, tmp)
    print("seccomp_profile_test: ok")


if __name__ == "__main__":
    main()
