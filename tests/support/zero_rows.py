"""Requests without rows, sent to every model a real Triton lists, over each transport: what each is answered.

A batched model must refuse them (4xx) and the server must keep serving: on Triton 2.51 an input declared with
``reshape { shape: [] }`` stopped the server (``Signal (11)``: python_backend ``src/python_be.cc``,
``CheckIncomingRequests``, ``total_batch_size += shape[0]`` of a shape core's ``Normalize`` left empty). The kinds:

- ``http-json``, ``http-binary``, ``grpc``: every input ``[0, *dims]`` with no data;
- ``http-binary-claimed``: every input ``[0, *dims]`` carrying one row's bytes (Triton hands the model the tensor
  without its batch axis);
- ``http-json-empty-axis``: for an input with a variable axis, ``[0, 0]`` with no data.

The ``dims`` are the server's own config of the model (``/v2/models/<name>/config``), a variable axis sent as 1.
"""

import http.client
import json
import struct
import urllib.request

import numpy as np

WIRE = {"TYPE_STRING": "BYTES", "TYPE_BOOL": "BOOL"}


def listed_models(server):
    """The names ``POST /v2/repository/index`` lists (loaded or not)."""
    request = urllib.request.Request(
        f"{server.url}/v2/repository/index", data=b"{}", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return sorted(entry["name"] for entry in json.loads(response.read()))


def answers(server, model):
    """``{kind: (status, message)}`` for each kind of 0-row request to ``model`` (a gRPC status is its code name)."""
    inputs = [
        (entry["name"], WIRE.get(entry["data_type"], entry["data_type"][len("TYPE_") :]), entry["dims"])
        for entry in server.model_config(model)["input"]
    ]
    shapes = {name: [0, *(1 if int(d) == -1 else int(d) for d in dims)] for name, _, dims in inputs}
    found = {
        "http-json": _json(server, model, [(name, wire, shapes[name], []) for name, wire, _ in inputs]),
        "http-binary": _binary(server, model, [(name, wire, shapes[name], b"") for name, wire, _ in inputs]),
        "http-binary-claimed": _binary(
            server, model, [(name, wire, shapes[name], _one_row(wire, shapes[name][1:])) for name, wire, _ in inputs]
        ),
        "grpc": _grpc(server, model, [(name, wire, shapes[name]) for name, wire, _ in inputs]),
    }
    if any(int(d) == -1 for _, _, dims in inputs for d in dims):
        empty = {name: [0, *(0 if int(d) == -1 else int(d) for d in dims)] for name, _, dims in inputs}
        found["http-json-empty-axis"] = _json(
            server, model, [(name, wire, empty[name], []) for name, wire, _ in inputs]
        )
    return found


def _one_row(wire, dims):
    count = int(np.prod(dims)) if dims else 1
    if wire == "BYTES":
        return b"".join(struct.pack("<I", 1) + b"a" for _ in range(count))
    dtype = {"FP64": np.float64, "FP32": np.float32, "INT64": np.int64, "INT32": np.int32, "BOOL": np.bool_}[wire]
    return np.zeros(count, dtype=dtype).tobytes()


def _post(server, model, body, headers):
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    try:
        connection.request("POST", f"/v2/models/{model}/infer", body=body, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        try:
            return response.status, json.loads(payload).get("error", "")
        except ValueError:
            return response.status, payload[:200].decode("utf-8", "replace")
    finally:
        connection.close()


def _json(server, model, inputs):
    body = {"inputs": [{"name": n, "datatype": w, "shape": s, "data": d} for n, w, s, d in inputs]}
    return _post(server, model, json.dumps(body).encode(), {"Content-Type": "application/json"})


def _binary(server, model, inputs):
    header = {
        "inputs": [
            {"name": n, "datatype": w, "shape": s, "parameters": {"binary_data_size": len(raw)}}
            for n, w, s, raw in inputs
        ]
    }
    head = json.dumps(header).encode()
    body = head + b"".join(raw for *_, raw in inputs)
    return _post(
        server,
        model,
        body,
        {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(head))},
    )


def _grpc(server, model, inputs):
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(server.grpc_url)
    tensors = []
    for name, wire, shape in inputs:
        tensor = grpcclient.InferInput(name, shape, wire)
        dtype = object if wire == "BYTES" else np.dtype(wire.lower().replace("fp", "float")).type
        tensor.set_data_from_numpy(np.empty(shape, dtype=dtype))
        tensors.append(tensor)
    try:
        client.infer(model, tensors, client_timeout=60)
        return "OK", ""
    except Exception as error:  # noqa: BLE001 - tritonclient raises InferenceServerException for every failure
        return str(getattr(error, "status", lambda: "")() or type(error).__name__), str(error)
    finally:
        client.close()
