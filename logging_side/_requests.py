"""The ready-to-send inference request shipped beside config.pbtxt.

``request.json`` is a KServe v2 / Triton HTTP JSON body. JSON cannot carry
NaN, infinities or arbitrary bytes, and Triton carries FP16 tensors in neither
direction as JSON ("receiving FP16 data via JSON is not supported", "sending FP16
data via JSON is not supported"), so a model with an FP16 input or output, or an
example holding NaN, infinities or binary bytes, ships ``request.bin`` (the
complete HTTP body of Triton's binary tensor extension, JSON prefix included,
every output requested as binary) plus ``request.headers`` (the HTTP headers to
send with it). Values are never altered to fit JSON.
"""

import json

import numpy as np
from tritonclient.http import InferenceServerClient, InferInput, InferRequestedOutput

from mlflow_triton.shared_contract import wire_datatype

JSON_REQUEST = "request.json"
BINARY_REQUEST = "request.bin"
BINARY_HEADERS = "request.headers"
JSON_HEADER_LENGTH = "Inference-Header-Content-Length"


FP16_TYPE = "TYPE_FP16"


def needs_binary(tensors, contents, outputs=None):
    """True when an input tensor is FP16, holds non-finite floats or binary (non-text) bytes,
    or an output (``{name: config datatype}``) is FP16."""
    if outputs and FP16_TYPE in outputs.values():
        return True
    for name, array in tensors.items():
        if contents.get(name) == "binary" or array.dtype == np.float16:
            return True
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            return True
    return False


def json_request(tensors, datatypes, output_names):
    """The JSON body as a dict: every input with its concrete shape, every output named."""
    inputs = []
    for name, array in tensors.items():
        if array.dtype == object:
            data = [item.decode("utf-8") for item in array.ravel()]
        else:
            data = array.ravel().tolist()
        inputs.append(
            {"name": name, "datatype": wire_datatype(datatypes[name]), "shape": list(array.shape), "data": data}
        )
    return {"inputs": inputs, "outputs": [{"name": name} for name in output_names]}


def binary_request(tensors, datatypes, output_names):
    """``(body, headers)`` for the binary tensor extension; outputs are requested as binary."""
    inputs = []
    for name, array in tensors.items():
        infer_input = InferInput(name, list(array.shape), wire_datatype(datatypes[name]))
        infer_input.set_data_from_numpy(array, binary_data=True)
        inputs.append(infer_input)
    outputs = [InferRequestedOutput(name, binary_data=True) for name in output_names]
    body, json_size = InferenceServerClient.generate_request_body(inputs, outputs=outputs)
    headers = {"Content-Type": "application/octet-stream", JSON_HEADER_LENGTH: str(json_size)}
    return body, headers


def write_request(directory, tensors, datatypes, contents, outputs):
    """Write request.json, or request.bin + request.headers; return the file names written.

    ``outputs`` maps each output tensor to its config datatype, in config order.
    """
    output_names = list(outputs)
    if needs_binary(tensors, contents, outputs):
        body, headers = binary_request(tensors, datatypes, output_names)
        (directory / BINARY_REQUEST).write_bytes(body)
        (directory / BINARY_HEADERS).write_text(
            "".join(f"{key}: {value}\n" for key, value in headers.items()), encoding="utf-8"
        )
        return [BINARY_REQUEST, BINARY_HEADERS]
    body = json_request(tensors, datatypes, output_names)
    (directory / JSON_REQUEST).write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return [JSON_REQUEST]

