"""deploy/k8s/*.yaml and deploy/Containerfile, without a cluster or an engine.

The manifests parse; the Deployment's probes, preStop, grace period, ports and
resources fit together (grace > preStop + --shutdown-timeout); the Service
selects the pods and targets the named port; the container's args are
accepted by the real server; the Containerfile builds //src:server with -c opt
and its runtime stage installs the Debian package of every shared library the
binary links.

Usage: k8s_test.py PATH_TO_SERVER PATH_TO_CONTAINERFILE MANIFEST.yaml...
"""
import os
import re
import signal
import subprocess
import sys
import threading

try:
    import yaml
except ImportError:
    sys.exit("k8s_test: PyYAML is missing: apt-get install python3-yaml")

# In every debian:12-slim image already (and needed by apt itself).
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6"}


def seconds(duration):
    """The server's durations: "20s", "500ms", "2m", "30"."""
    match = re.fullmatch(r"(\d+)(ms|s|m)?", duration)
    assert match, "bad duration %r" % duration
    return int(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[match.group(2)]


def flag(args, name, default=None):
    for i, arg in enumerate(args):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name:
            return args[i + 1]
    return default


def load(paths):
    docs = []
    for path in paths:
        with open(path) as f:
            docs += [d for d in yaml.safe_load_all(f) if d is not None]
    for doc in docs:
        assert {"apiVersion", "kind", "metadata"} <= doc.keys(), doc
    return {doc["kind"]: doc for doc in docs}


def check_deployment(deployment):
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items(), "selector vs labels"
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    (container,) = pod["containers"]
    args = container["args"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["http"] == int(flag(args, "--port")), (ports, args)

    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/healthz" and get["port"] in ("http", ports["http"]), get
    # A liveness failure during the drain (503, then refused) must not kill
    # the container before the drain ends.
    live = container["livenessProbe"]
    drain = seconds(flag(args, "--shutdown-timeout", "30s"))
    assert live["periodSeconds"] * live["failureThreshold"] > drain, (live, drain)

    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep", command
    pre_stop = int(command[1])
    assert 1 <= pre_stop <= 15, pre_stop
    grace = pod["terminationGracePeriodSeconds"]
    assert grace > pre_stop + drain, "grace %s <= preStop %s + drain %s" % (grace, pre_stop, drain)

    resources = container["resources"]
    assert {"cpu", "memory"} <= resources["requests"].keys(), resources
    assert "memory" in resources["limits"], resources
    # The server sizes itself by the node's CPUs unless told: tell it.
    assert flag(args, "--accept-threads") and flag(args, "--workers"), args
    assert pod["securityContext"]["seccompProfile"]["type"] in ("Unconfined", "Localhost"), (
        "RuntimeDefault blocks io_uring")
    return labels, args


def check_service(service, labels):
    spec = service["spec"]
    assert spec["selector"].items() <= labels.items(), (spec["selector"], labels)
    (port,) = spec["ports"]
    assert port["targetPort"] == "http", port


def check_args(server, args):
    """The container's args, on the real binary (port and threads made small)."""
    keep = [a for a in args if not re.match(r"--(port|accept-threads|workers)(=|$)", a)]
    process = subprocess.Popen(
        [server, *keep, "-p", "0", "--address", "127.0.0.1", "-A", "1", "-w", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(20, process.kill)
    timer.start()
    line = process.stdout.readline()
    timer.cancel()
    try:
        assert line.startswith("uring-http ready:"), (keep, line, process.poll())
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def runtime_packages(server):
    """Debian packages of the libraries `ldd server` resolves."""
    out = subprocess.run(["ldd", server], capture_output=True, text=True, check=True).stdout
    # Sanitizer runtimes (bazel test --config=asan or tsan) are not shipped.
    libraries = [path for path in re.findall(r"=> (/\S+)", out)
                 if not re.search(r"/lib(a|ub|t|l)san\.so", path)]
    assert libraries, out
    # Every spelling of each path (symlinks resolved; Debian 12's merged /usr
    # has dpkg know some files under /lib only), in one dpkg call: each is slow.
    spellings = {}
    for path in libraries:
        for candidate in (path, os.path.realpath(path)):
            for spelling in (candidate, re.sub(r"^/usr/lib/", "/lib/", candidate)):
                spellings[spelling] = path
    found = subprocess.run(["dpkg", "-S", *spellings], capture_output=True, text=True).stdout
    packages, owned = set(), set()
    for line in found.splitlines():
        package, _, file = line.partition(": ")
        if file in spellings:
            packages.add(package.split(":")[0])
            owned.add(spellings[file])
    unowned = set(libraries) - owned
    assert not unowned, "no Debian package owns %s" % unowned
    return packages


def check_containerfile(path, server):
    with open(path) as f:
        text = f.read()
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    assert len(stages) == 2, "a build stage and a runtime stage"
    assert stages[0].startswith("debian:12 AS build"), stages[0].splitlines()[0]
    assert stages[1].startswith("debian:12-slim"), stages[1].splitlines()[0]
    assert re.search(r"bazel .*build -c opt .*//src:server", stages[0]), "bazel build -c opt"
    for package in ("bazel-bootstrap", "g++", "liburing-dev", "libabsl-dev"):
        assert re.search(r"\s%s\s" % re.escape(package), stages[0]), package
    assert "COPY --from=build" in stages[1]
    installed = set()
    for command in re.findall(r"apt-get install(.*?)(?:&&|\n\n|$)", stages[1], flags=re.S):
        installed |= {w for w in command.split() if not w.startswith("-") and w != "\\"}
    needed = runtime_packages(server)
    missing = needed - installed - BASE_PACKAGES
    assert not missing, "the runtime stage does not install %s (installs %s)" % (missing, installed)
    assert re.search(r"^STOPSIGNAL SIGTERM$", stages[1], flags=re.M)
    assert re.search(r"^USER (?!0\b|root\b)", stages[1], flags=re.M), "not as root"
    return needed


def main():
    server, containerfile, manifests = sys.argv[1], sys.argv[2], sys.argv[3:]
    kinds = load(manifests)
    assert {"Deployment", "Service"} <= kinds.keys(), kinds.keys()
    labels, args = check_deployment(kinds["Deployment"])
    check_service(kinds["Service"], labels)
    print("k8s_test: manifests ok (%s)" % ", ".join(sorted(kinds)))
    check_args(server, args)
    print("k8s_test: the server accepts the container's args %s" % args)
    needed = check_containerfile(containerfile, server)
    print("k8s_test: Containerfile ok; runtime libraries from %s" % ", ".join(sorted(needed)))
    print("k8s_test: ok")


if __name__ == "__main__":
    main()
