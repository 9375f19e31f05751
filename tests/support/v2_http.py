"""One v2 inference request over HTTP/JSON to a test's server: ``(status, decoded body)``; Triton's counts for a model.

The e2e tests that build their own bodies (batched shapes, 0-row requests) send them here; a connection the server
closes without an answer raises ``http.client.RemoteDisconnected`` or ``ConnectionError`` to the caller.
"""

import http.client
import json
import time


def post_infer(server, model, inputs, timeout=60):
    """POST ``{"inputs": inputs}`` to ``/v2/models/<model>/infer`` on ``server`` (a ``TritonServer``)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=timeout)
    try:
        connection.request(
            "POST",
            f"/v2/models/{model}/infer",
            body=json.dumps({"inputs": inputs}).encode(),
            headers={"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def statistics(server, model):
    """Triton's counts so far for ``model``: (requests answered, rows inferred, executions)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        connection.request("GET", f"/v2/models/{model}/stats")
        [stats] = json.loads(connection.getresponse().read())["model_stats"]
        requests = int(stats["inference_stats"]["success"]["count"])
        return requests, int(stats["inference_count"]), int(stats["execution_count"])
    finally:
        connection.close()


def counts_since(server, model, before, requests, timeout_s=30.0):
    """Triton's counts for ``model`` since ``before`` (a :func:`statistics`), once it has counted ``requests``
    answered requests: Triton updates its statistics after it sends a response, so a client can read them before
    the last executions are counted (seen under load: 38 of 40 requests). After ``timeout_s`` the counts are
    returned as they are."""
    deadline = time.monotonic() + timeout_s
    while True:
        counts = tuple(after - earlier for after, earlier in zip(statistics(server, model), before))
        if counts[0] >= requests or time.monotonic() > deadline:
            return counts
        time.sleep(0.1)
