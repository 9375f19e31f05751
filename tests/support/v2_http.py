"""One v2 inference request over HTTP/JSON to a test's server: ``(status, decoded body)``.

The e2e tests that build their own bodies (batched shapes, 0-row requests) send them here; a connection the server
closes without an answer raises ``http.client.RemoteDisconnected`` or ``ConnectionError`` to the caller.
"""

import http.client
import json


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
