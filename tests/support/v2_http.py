"""One v2 inference request to a test's server over HTTP/JSON, binary HTTP or gRPC; Triton's counts and model list.

The e2e tests that build their own bodies (batched shapes, 0-row requests) send them here; a connection the server
closes without an answer raises ``http.client.RemoteDisconnected`` or ``ConnectionError`` to the caller.
"""

import http.client
import json
import time

import grpc
import numpy as np
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import triton_to_np_dtype


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


def post_binary(server, model, tensors, timeout=60):
    """POST ``tensors`` (``(name, datatype, shape, raw bytes)``, the bytes sent whatever the shape says) in Triton's
    binary tensor extension; ``(status, decoded JSON header of the answer)``. Outputs are asked for as JSON."""
    header = {
        "inputs": [
            {"name": name, "datatype": datatype, "shape": list(shape), "parameters": {"binary_data_size": len(raw)}}
            for name, datatype, shape, raw in tensors
        ]
    }
    head = json.dumps(header).encode()
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=timeout)
    try:
        connection.request(
            "POST",
            f"/v2/models/{model}/infer",
            body=head + b"".join(raw for _, _, _, raw in tensors),
            headers={"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(head))},
        )
        response = connection.getresponse()
        body = response.read()
        length = response.getheader("Inference-Header-Content-Length")
        return response.status, json.loads(body[: int(length)] if length else body)
    finally:
        connection.close()


def grpc_raw_infer(server, model, tensors, timeout=60):
    """The same ``tensors`` over gRPC, each input's bytes as ``raw_input_contents`` whatever its shape says (the
    client library checks shapes; this builds the request itself). ``(None, {output: ndarray})`` on success,
    ``(grpc status code name, details)`` on an error."""
    request = service_pb2.ModelInferRequest(model_name=model)
    for name, datatype, shape, raw in tensors:
        request.inputs.add(name=name, datatype=datatype, shape=list(shape))
        request.raw_input_contents.append(raw)
    with grpc.insecure_channel(server.grpc_url) as channel:
        try:
            answer = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=timeout)
        except grpc.RpcError as error:
            return error.code().name, error.details()
    outputs = {}
    for output, raw in zip(answer.outputs, answer.raw_output_contents):
        if output.datatype == "BYTES":
            outputs[output.name] = raw
        else:
            outputs[output.name] = np.frombuffer(raw, dtype=triton_to_np_dtype(output.datatype)).reshape(output.shape)
    return None, outputs


def repository_index(server):
    """The model names Triton lists (``POST /v2/repository/index``), with their state."""
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        connection.request("POST", "/v2/repository/index", body=b"{}", headers={"Content-Type": "application/json"})
        return {entry["name"]: entry.get("state") for entry in json.loads(connection.getresponse().read())}
    finally:
        connection.close()
