"""//examples:echo: every method on every path answers with the request body.

Checks bodies framed by Content-Length and by chunks (with an extension and a
trailer), a 5 MiB body streamed both ways at once, requests without a body,
HEAD, an unusual method with the X-Echo-* headers, two pipelined requests,
and HTTP/1.0 (a close-delimited answer).

Usage: echo_test.py PATH_TO_ECHO
"""
import os
import sys
import threading

from example_server import ExampleServer, read_response


def exchange(server, raw, head_only=False):
    """Sends raw bytes on a new connection and reads one response."""
    with server.connect() as sock, sock.makefile("rb") as stream:
        sock.sendall(raw)
        return read_response(stream, head_only=head_only)


def check_content_length(server):
    body = "a body with\r\nlines and \u00e9 in it"
    status, headers, text = server.request("POST", "/submit", body=body.encode(),
                                           headers={"Content-Type": "text/plain; charset=utf-8"})
    assert (status, text) == (200, body), (status, text)
    assert headers["content-type"] == "text/plain; charset=utf-8", headers
    assert headers["x-echo-method"] == "POST" and headers["x-echo-target"] == "/submit", headers


def check_chunked(server):
    # Chunks of several sizes, one with an extension, then a trailer field:
    # the echo is the decoded body (the extension and trailer are not echoed).
    request = (b"PUT /chunks HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n"
               b"Content-Type: text/x-test\r\n\r\n"
               b"5\r\nhello\r\n"
               b"1;name=value\r\n,\r\n"
               b"C\r\n chunked wor\r\n"
               b"2\r\nld\r\n"
               b"0\r\nX-Checksum: 1234\r\n\r\n")
    response = exchange(server, request)
    assert response.status == 200 and response.framing == "chunked", vars(response)
    assert response.body == b"hello, chunked world", response.body
    assert response.header("content-type") == "text/x-test", response.headers
    assert response.header("x-echo-method") == "PUT", response.headers


def check_large_body(server):
    # 5 MiB, sent while the answer is read: the echo streams both ways with
    # bounded buffers, so a client that sent everything before reading would
    # stall once the buffers between it and the server are full.
    body = os.urandom(5 << 20)
    with server.connect(timeout=15) as sock, sock.makefile("rb") as stream:
        def send():
            sock.sendall(b"POST /big HTTP/1.1\r\nHost: test\r\nContent-Length: %d\r\n\r\n"
                         % len(body))
            for i in range(0, len(body), 100_000):
                sock.sendall(body[i:i + 100_000])

        sender = threading.Thread(target=send)
        sender.start()
        response = read_response(stream)
        sender.join(timeout=15)
        assert not sender.is_alive(), "the request did not go out"
    assert response.status == 200 and response.framing == "chunked", response.status
    assert response.header("content-type") == "application/octet-stream", response.headers
    assert len(response.body) == len(body) and response.body == body, len(response.body)
    assert len(response.chunks) > 1, "not streamed: %d chunk(s)" % len(response.chunks)


def check_no_body(server):
    status, headers, text = server.request("GET", "/nothing/here")
    assert (status, text) == (200, ""), (status, text)
    assert headers["content-length"] == "0", headers
    assert headers["content-type"] == "application/octet-stream", headers
    assert headers["x-echo-method"] == "GET", headers


def check_head(server):
    # HEAD, then GET on the same connection: a body after the HEAD's head
    # would be read as the second status line.
    with server.connect() as sock, sock.makefile("rb") as stream:
        sock.sendall(b"HEAD /head HTTP/1.1\r\nHost: test\r\n\r\n")
        response = read_response(stream, head_only=True)
        assert response.status == 200, response.status
        assert response.header("x-echo-method") == "HEAD", response.headers
        sock.sendall(b"GET /after HTTP/1.1\r\nHost: test\r\n\r\n")
        response = read_response(stream)
        assert response.status == 200 and response.header("x-echo-method") == "GET", vars(response)
        assert response.header("x-echo-target") == "/after", response.headers


def check_other_method(server):
    status, headers, text = server.request("PROPFIND", "/a/b?c=d", body=b"<propfind/>",
                                           headers={"Content-Type": "application/xml"})
    assert (status, text) == (200, "<propfind/>"), (status, text)
    assert headers["x-echo-method"] == "PROPFIND", headers
    assert headers["x-echo-target"] == "/a/b?c=d", headers
    assert headers["content-type"] == "application/xml", headers


def check_pipelined(server):
    # Two requests in one write: both answered, in order, on one connection.
    requests = (b"POST /one HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nfirst"
                b"PATCH /two?x=1 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"6\r\nsecond\r\n0\r\n\r\n")
    with server.connect() as sock, sock.makefile("rb") as stream:
        sock.sendall(requests)
        first = read_response(stream)
        second = read_response(stream)
    assert (first.status, first.body) == (200, b"first"), vars(first)
    assert first.header("x-echo-target") == "/one", first.headers
    assert (second.status, second.body) == (200, b"second"), vars(second)
    assert second.header("x-echo-method") == "PATCH", second.headers
    assert second.header("x-echo-target") == "/two?x=1", second.headers


def check_http10(server):
    # HTTP/1.0 has no chunks: the body ends when the connection does.
    response = exchange(server, b"POST /old HTTP/1.0\r\nContent-Length: 11\r\n\r\nhello, 1.0!")
    assert response.status == 200 and response.framing == "close", vars(response)
    assert response.body == b"hello, 1.0!", response.body
    assert "chunked" not in response.headers.get("transfer-encoding", ""), response.headers


def main():
    with ExampleServer(sys.argv[1], "-w", "4") as server:
        check_content_length(server)
        check_chunked(server)
        check_large_body(server)
        check_no_body(server)
        check_head(server)
        check_other_method(server)
        check_pipelined(server)
        check_http10(server)
    print("echo_test: ok")


if __name__ == "__main__":
    main()
