"""Requests built from raw arrays, in both encodings, independently of the package's request writer.

``json_body`` writes the KServe v2 JSON form (numbers as JSON numbers, BYTES as JSON strings), which
cannot carry FP16, NaN, infinities or bytes that are not UTF-8: ``json_carries`` says whether an
input can travel as JSON. ``binary_body`` uses tritonclient's binary tensor extension, which carries
everything. Outputs are asked for in the same encoding, except FP16 outputs, which Triton never
sends as JSON, and binary BYTES outputs, which it would write into JSON as raw bytes (both are asked
for as binary). ``post`` sends a body with ``http.client``.
"""

import http.client
import json

import numpy as np
import tritonclient.http as triton_http

from mlflow_triton.local.send import decode_response
from mlflow_triton.repository.request_files import json_keeps

JSON_HEADERS = {"Content-Type": "application/json"}


def wire(datatype):
    """``TYPE_FP32`` -> ``FP32``, ``TYPE_STRING`` -> ``BYTES``."""
    return "BYTES" if datatype == "TYPE_STRING" else datatype[len("TYPE_") :]


def json_carries(arrays, datatypes):
    """Whether every tensor can be written as JSON and read back by Triton unchanged: no FP16, NaN,
    infinities, non-UTF-8 bytes, nor float64 values Triton reads as their neighbours (``json_keeps``,
    checked against the real server in ``test_fidelity_generated.py``)."""
    for name, array in arrays.items():
        if datatypes[name] == "TYPE_FP16":
            return False
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            return False
        if array.dtype == np.float64 and not json_keeps(array):
            return False
        if array.dtype == object:
            try:
                [item.decode("utf-8") for item in array.flat]
            except UnicodeDecodeError:
                return False
    return True


def json_body(arrays, datatypes, outputs, ensure_ascii=True, binary_outputs=()):
    """The JSON request body (bytes); ``outputs`` is ``[(name, datatype)]``.

    FP16 outputs and ``binary_outputs`` (BYTES outputs of binary content, which Triton would write into
    a JSON answer as raw bytes) are asked for as binary.
    """
    inputs = []
    for name, array in arrays.items():
        if array.dtype == object:
            data = [item.decode("utf-8") for item in array.flat]
        else:
            data = array.ravel().tolist()
        inputs.append({"name": name, "datatype": wire(datatypes[name]), "shape": list(array.shape), "data": data})
    requested = [
        {"name": name, "parameters": {"binary_data": True}}
        if datatype == "TYPE_FP16" or name in binary_outputs
        else {"name": name}
        for name, datatype in outputs
    ]
    return json.dumps({"inputs": inputs, "outputs": requested}, ensure_ascii=ensure_ascii).encode("utf-8"), JSON_HEADERS


def binary_body(arrays, datatypes, outputs):
    """The binary-extension request body and its headers; every output asked for as binary."""
    inputs = []
    for name, array in arrays.items():
        infer_input = triton_http.InferInput(name, list(array.shape), wire(datatypes[name]))
        infer_input.set_data_from_numpy(array, binary_data=True)
        inputs.append(infer_input)
    requested = [triton_http.InferRequestedOutput(name, binary_data=True) for name, _ in outputs]
    body, json_size = triton_http.InferenceServerClient.generate_request_body(inputs, outputs=requested)
    return body, {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(json_size)}


def post(port, path, body, headers, timeout=300):
    """POST ``body``; returns ``(status, lower-cased headers, body bytes)``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def infer(port, model, body, headers):
    """``(status, outputs or error text)`` for one inference request."""
    status, response_headers, content = post(port, f"/v2/models/{model}/infer", body, headers)
    if status != 200:
        try:
            return status, json.loads(content)["error"]
        except (ValueError, KeyError):
            return status, content.decode("utf-8", errors="replace")
    return status, decode_response(content, response_headers)
