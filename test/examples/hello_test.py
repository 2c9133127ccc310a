"""//examples:hello: GET / answers "hello, world"; SIGTERM exits 0.

Usage: hello_test.py PATH_TO_HELLO
"""
import sys

from example_server import ExampleServer


def main():
    with ExampleServer(sys.argv[1]) as server:
        status, headers, body = server.request("GET", "/")
        assert (status, body) == (200, "hello, world\n"), (status, body)
        status, _, _ = server.request("GET", "/nope")
        assert status == 404, status
        status, _, body = server.request("GET", "/healthz")  # built in
        assert (status, body.strip()) == (200, "ok"), (status, body)
    print("hello_test: ok")


if __name__ == "__main__":
    main()
