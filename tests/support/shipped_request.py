"""Read a generated repository's shipped request the way a client would, independently of the package."""

import json

import numpy as np
from tritonclient.utils import deserialize_bytes_tensor, triton_to_np_dtype


def read_headers_file(path):
    """request.headers -> dict, parsed independently of the package's own reader."""
    pairs = (line.split(":", 1) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {key.strip(): value.strip() for key, value in pairs}


def arrays_from_json_request(body):
    """A request.json body -> ``{tensor name: ndarray}`` by each input's datatype and shape."""
    arrays = {}
    for entry in body["inputs"]:
        if entry["datatype"] == "BYTES":
            array = np.empty(len(entry["data"]), dtype=object)
            array[:] = [text.encode("utf-8") for text in entry["data"]]
        else:
            array = np.array(entry["data"], dtype=triton_to_np_dtype(entry["datatype"]))
        arrays[entry["name"]] = array.reshape(entry["shape"])
    return arrays


def arrays_from_binary_request(body, headers):
    """A binary-extension body -> (JSON prefix, ``{tensor name: ndarray}``), tensors read in input order."""
    prefix_length = int(headers["Inference-Header-Content-Length"])
    prefix = json.loads(body[:prefix_length])
    arrays, offset = {}, prefix_length
    for entry in prefix["inputs"]:
        size = entry["parameters"]["binary_data_size"]
        chunk = body[offset : offset + size]
        offset += size
        if entry["datatype"] == "BYTES":
            array = deserialize_bytes_tensor(chunk)
        else:
            array = np.frombuffer(chunk, dtype=triton_to_np_dtype(entry["datatype"]))
        arrays[entry["name"]] = array.reshape(entry["shape"])
    assert offset == len(body), "the body holds bytes beyond its declared tensors"
    return prefix, arrays


def arrays_from_request_json(path):
    """The input tensors of a ``request.json`` file, as Triton hands them to model.py."""
    return arrays_from_json_request(json.loads(path.read_text(encoding="utf-8")))


def arrays_from_shipped_request(directory):
    """The input tensors of the request a directory ships: ``request.json``, else ``request.bin``."""
    if (directory / "request.json").is_file():
        return arrays_from_request_json(directory / "request.json")
    headers = read_headers_file(directory / "request.headers")
    return arrays_from_binary_request((directory / "request.bin").read_bytes(), headers)[1]
