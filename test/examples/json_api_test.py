"""//examples:json_api: POST /api/sum, GET /api/health and GET /api/items/{id}
over HTTP, with its middlewares (request id, CORS) and JSON 404/500 pages.

Usage: json_api_test.py PATH_TO_JSON_API
"""
import json
import sys

from example_server import ExampleServer

JSON = {"Content-Type": "application/json"}


def post_sum(server, body):
    status, headers, text = server.request("POST", "/api/sum", body=body, headers=JSON)
    assert headers.get("content-type") == "application/json", headers
    return status, json.loads(text)


def main():
    with ExampleServer(sys.argv[1], "-w", "1") as server:
        # Sums: exact for integers, a double as soon as one number is not.
        assert post_sum(server, '{"numbers": [1, 2, 3]}') == (200, {"sum": 6, "count": 3})
        assert post_sum(server, '{"numbers": [1, 2.5, -0.5]}') == (200, {"sum": 3.0, "count": 3})
        assert post_sum(server, '{"numbers": []}') == (200, {"sum": 0, "count": 0})
        big = '{"numbers": [9223372036854775807, 1]}'  # overflows int64: a double
        status, answer = post_sum(server, big)
        assert status == 200 and answer["sum"] == float(2 ** 63), answer
        many = list(range(1, 10001))
        assert post_sum(server, json.dumps({"numbers": many})) == (
            200, {"sum": sum(many), "count": len(many)})

        # Errors: 400 with a JSON body naming the problem.
        for bad in ['{"numbers": [1, 2', "not json", "", '[1, 2]', '{"numbers": 5}',
                    '{"other": []}', '{"numbers": [1, "2"]}', '{"numbers": [1e308, 1e308]}']:
            status, answer = post_sum(server, bad)
            assert status == 400, (bad, status, answer)
            assert isinstance(answer.get("error"), str) and answer["error"], (bad, answer)

        # Not JSON by its Content-Type (curl -d's form type, none): 415.
        for headers in [{"Content-Type": "application/x-www-form-urlencoded"}, {}]:
            status, _, text = server.request("POST", "/api/sum", body='{"numbers": [1]}',
                                             headers=headers)
            assert status == 415, (headers, status, text)
            assert json.loads(text)["error"].startswith("Content-Type must be application/json")
        # A malformed body: where it broke (the second comma, 16th character).
        status, answer = post_sum(server, '{"numbers": [1,, 2]}')
        assert status == 400 and "line 1, column 16" in answer["error"], answer

        status, headers, text = server.request("GET", "/api/health")
        assert status == 200 and headers["content-type"] == "application/json", (status, headers)
        health = json.loads(text)
        assert health["status"] == "ok" and health["uptime_seconds"] >= 0, health

        # A path parameter.
        status, headers, text = server.request("GET", "/api/items/2")
        assert status == 200 and json.loads(text) == {"id": 2, "name": "bolt"}, (status, text)
        status, _, text = server.request("GET", "/api/items/9")
        assert status == 404 and "no such item" in json.loads(text)["error"], (status, text)
        status, _, text = server.request("GET", "/api/items/x1")
        assert status == 400, (status, text)
        status, _, _ = server.request("GET", "/api/items/")  # {id} is never empty
        assert status == 404, status
        status, headers, _ = server.request("DELETE", "/api/items/2")
        assert status == 405 and headers.get("allow") == "GET, HEAD, OPTIONS", (status, headers)

        status, headers, _ = server.request("GET", "/api/sum")  # wrong method
        assert status == 405 and "POST" in headers.get("allow", ""), (status, headers)

        # Request id: a sane one echoed, else a new one per request.
        _, headers, _ = server.request("GET", "/api/health", headers={"X-Request-Id": "trace-1"})
        assert headers.get("x-request-id") == "trace-1", headers
        ids = set()
        for bad in [None, "", "x" * 65, "two words"]:
            _, headers, _ = server.request(
                "GET", "/api/health", headers={} if bad is None else {"X-Request-Id": bad})
            new_id = headers.get("x-request-id", "")
            assert len(new_id) == 32 and all(c in "0123456789abcdef" for c in new_id), headers
            ids.add(new_id)
        assert len(ids) == 4, ids

        # CORS: the preflight for POST /api/sum is answered, and the answer
        # to the request itself may be read by the page.
        origin = "https://page.example"
        status, headers, _ = server.request("OPTIONS", "/api/sum", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        assert status == 204, (status, headers)
        assert headers.get("access-control-allow-origin") == "*", headers
        assert headers.get("access-control-allow-methods") == "GET, POST", headers
        assert headers.get("access-control-allow-headers") == "Content-Type, X-Request-Id"
        status, headers, _ = server.request("POST", "/api/sum", body='{"numbers": [1]}',
                                            headers=dict(JSON, Origin=origin))
        assert status == 200 and headers.get("access-control-allow-origin") == "*", headers
        assert headers.get("access-control-expose-headers") == "X-Request-Id", headers
        _, headers, _ = server.request("GET", "/api/health")  # no Origin: no CORS headers
        assert "access-control-allow-origin" not in headers, headers

        # Unknown paths answer in JSON.
        status, headers, text = server.request("GET", "/api/nothing")
        assert status == 404 and headers["content-type"] == "application/json", (status, headers)
        assert json.loads(text) == {"error": "no such endpoint", "path": "/api/nothing"}, text
        assert len(headers.get("x-request-id", "")) == 32, headers
    print("json_api_test: ok")


if __name__ == "__main__":
    main()
