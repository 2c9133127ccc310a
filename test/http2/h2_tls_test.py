"""HTTP/2 against the real server binary with curl: h2 chosen by ALPN on a
TLS listener, h2c with prior knowledge on its plain-HTTP one (--plain-port),
and HTTP/1.1 still for a client that does not offer h2 or a server without
--http2. Checked: the HTTP version curl reports, the status, a FAST and a
SLOW route and a streamed answer's bytes, the ready line, and the
connections counted in /metrics.
"""
import os
import re
import subprocess
import sys
import tempfile


def make_cert(directory):
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-keyout", key,
                        "-out", cert, "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    assert p.returncode == 0, p.stdout
    return cert, key


def curl(*args):
    p = subprocess.run(["curl", "-sS", "-k", "--max-time", "20"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 0, "curl %s: %s" % (" ".join(args), p.stderr.decode())
    return p.stdout


def version_and_status(url, *flags):
    out = curl(*flags, "-o", "/dev/null", "-w", "%{http_version} %{http_code}", url).decode()
    return out.split()


class Server:
    def __init__(self, binary, args):
        self.proc = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1", "-A", "1",
                                      "-w", "2"] + args,
                                     stdout=subprocess.PIPE, text=True)
        self.ready = self.proc.stdout.readline()
        m = re.search(r"listening on \S+:(\d+)", self.ready)
        assert m, "no ready line: %r" % self.ready
        self.port = int(m.group(1))
        plain = re.search(r"plain HTTP on \S+:(\d+)", self.ready)
        self.plain_port = int(plain.group(1)) if plain else None

    def stop(self):
        self.proc.terminate()
        assert self.proc.wait(timeout=20) == 0


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        cert, key = make_cert(d)
        tls = ["--tls-cert=" + cert, "--tls-key=" + key, "--plain-port=0"]
        # HTTP/2 is on by default.
        s = Server(binary, tls)
        try:
            assert "HTTP/2: h2 (ALPN), h2c on plain HTTP" in s.ready, s.ready
            assert "ALPN h2,http/1.1" in s.ready, s.ready
            https = "https://127.0.0.1:%d" % s.port
            plain = "http://127.0.0.1:%d" % s.plain_port
            assert version_and_status(https + "/test/fast", "--http2") == ["2", "200"]
            assert version_and_status(https + "/test/slow", "--http2") == ["2", "200"]
            assert version_and_status(https + "/nothing", "--http2") == ["2", "404"]
            # A client that offers only http/1.1 gets it.
            assert version_and_status(https + "/test/fast", "--http1.1") == ["1.1", "200"]
            # h2c with prior knowledge on the plain listener beside.
            assert version_and_status(plain + "/test/fast", "--http2-prior-knowledge") == [
                "2", "200"]
            # A streamed answer over h2, whole.
            body = curl("--http2", https + "/test/stream")
            h1_body = curl("--http1.1", https + "/test/stream")
            assert len(body) > 0 and body == h1_body, (len(body), len(h1_body))
            metrics = curl(plain + "/metrics").decode()
            m = re.search(r"^uring_http_http2_connections_total (\d+)", metrics, re.M)
            assert m and int(m.group(1)) == 5, metrics[:2000]  # fast, slow, 404, h2c, stream
        finally:
            s.stop()
        # With --http2=off: ALPN stays http/1.1, even for a client asking h2.
        s = Server(binary, ["--http2=off"] + tls)
        try:
            assert "HTTP/2" not in s.ready and "ALPN http/1.1" in s.ready, s.ready
            https = "https://127.0.0.1:%d" % s.port
            assert version_and_status(https + "/test/fast", "--http2") == ["1.1", "200"]
        finally:
            s.stop()
    print("h2_tls_test: ok")


if __name__ == "__main__":
    main()
