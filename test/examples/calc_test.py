"""//examples:calc: GET /calc?value=x on the worker threads.

Checks the series against ln(1+x), the text and JSON forms, the 400s, and
that concurrent requests are all answered correctly.

Usage: calc_test.py PATH_TO_CALC
"""
import concurrent.futures
import json
import math
import sys

from example_server import ExampleServer


def calc(server, query, headers=None):
    return server.request("GET", "/calc?" + query, headers=headers)


def main():
    with ExampleServer(sys.argv[1], "-w", "2") as server:
        status, headers, body = calc(server, "value=0.5")
        assert status == 200 and headers["content-type"] == "text/plain", (status, headers)
        result = float(body.splitlines()[0])
        assert abs(result - math.log(1.5)) < 1e-6, body

        status, headers, body = calc(server, "value=-0.5&format=json")
        assert status == 200 and headers["content-type"] == "application/json", (status, body)
        answer = json.loads(body)
        assert answer["terms"] == 5000000, answer
        assert abs(answer["sum"] - math.log(0.5)) < 1e-6, answer
        assert abs(answer["ln1p"] - math.log(0.5)) < 1e-12, answer

        # x = 1: the alternating harmonic series, error about 1/(2N) = 1e-7.
        status, _, body = calc(server, "value=1", {"Accept": "application/json"})
        assert status == 200 and abs(json.loads(body)["sum"] - math.log(2)) < 1e-6, body

        for bad in ["", "value=", "value=abc", "value=0.5x", "value=nan", "value=inf",
                    "value=-1", "value=1.0001", "value=2", "value=%zz", "other=0.5"]:
            status, _, body = calc(server, bad)
            assert status == 400, (bad, status, body)

        # The request helpers: a percent-encoded value, the first of a
        # repeated one, and a malformed escape told apart from a missing value.
        status, _, body = calc(server, "value=%2D0%2E5")
        assert status == 200 and abs(float(body.splitlines()[0]) - math.log(0.5)) < 1e-6, body
        status, _, body = calc(server, "value=0.5&value=2")
        assert status == 200 and abs(float(body.splitlines()[0]) - math.log(1.5)) < 1e-6, body
        status, _, body = calc(server, "value=%zz")
        assert status == 400 and "badly encoded" in body, body
        status, _, body = calc(server, "valu%65=0.5&value=%4")
        assert status == 200, (status, body)  # the encoded name comes first
        status, _, body = calc(server, "other=0.5")
        assert status == 400 and "missing" in body, body

        # Concurrent requests: each answered, each right, through both workers.
        values = [i / 10 for i in range(-9, 11)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda x: calc(server, "value=%r" % x), values))
        for x, (status, _, body) in zip(values, answers):
            assert status == 200, (x, status, body)
            assert abs(float(body.splitlines()[0]) - math.log1p(x)) < 1e-6, (x, body)
    print("calc_test: ok")


if __name__ == "__main__":
    main()
