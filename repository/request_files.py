"""The ready-to-send inference request shipped beside config.pbtxt.

``request.json`` is a KServe v2 / Triton HTTP JSON body. JSON cannot carry
NaN, infinities or arbitrary bytes, and Triton carries FP16 tensors in neither
direction as JSON ("receiving FP16 data via JSON is not supported", "sending FP16
data via JSON is not supported"). Triton also reads JSON numbers with RapidJSON's
normal precision, which turns about one float64 in eight (written as Python writes
it: the shortest text that reads back exactly) into its neighbour
(``-1.8585403758418125e-246`` arrives as ``-1.8585403758418123e-246``);
:func:`triton_json_double` is that reading, step by step. So a model with an FP16
input or output, or an example holding NaN, infinities, binary bytes or a float64
that Triton would read as another number, ships ``request.bin`` (the complete HTTP
body of Triton's binary tensor extension, JSON prefix included, every output
requested as binary) plus ``request.headers`` (the HTTP headers to send with it).
Values are never altered to fit JSON.
"""

import json
import math

import numpy as np
from tritonclient.http import InferenceServerClient, InferInput, InferRequestedOutput

from mlflow_triton.runtime.parameters import PARAMS_CHANNEL
from mlflow_triton.shared_contract import wire_datatype

JSON_REQUEST = "request.json"
BINARY_REQUEST = "request.bin"
BINARY_HEADERS = "request.headers"
JSON_HEADER_LENGTH = "Inference-Header-Content-Length"


FP16_TYPE = "TYPE_FP16"
_MAX_FAST_SIGNIFICAND = 2**53 - 1  # RapidJSON stops adding fraction digits to its integer significand above this
_MAX_SIGNIFICAND_DIGITS = 17  # ... and keeps at most this many significant digits in its double significand


def needs_binary(tensors, contents, outputs=None, output_contents=None):
    """True when an input tensor is FP16, holds non-finite floats, binary (non-text) bytes or a
    float64 that Triton would read from JSON as another number, or an output (``outputs``:
    ``{name: config datatype}``) is FP16 or carries binary bytes (``output_contents``:
    ``{name: content}``; Triton writes BYTES into a JSON answer as they are, so bytes that are
    not UTF-8 make the answer unreadable JSON)."""
    if outputs and FP16_TYPE in outputs.values():
        return True
    if output_contents and "binary" in output_contents.values():
        return True
    for name, array in tensors.items():
        if contents.get(name) == "binary" or array.dtype == np.float16:
            return True
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            return True
        if array.dtype == np.float64 and not json_keeps(array):
            return True
    return False


def json_keeps(array):
    """Whether Triton reads every (finite) float64 of ``array`` back unchanged from the JSON Python writes.

    float32 values are always kept: Triton's double is within a few units of the float32 value, which
    rounding to float32 recovers.
    """
    return all(triton_json_double(repr(value)) == value for value in array.ravel().tolist())


def triton_json_double(text):
    """The double Triton 2.51's HTTP front end reads from the JSON number ``text``.

    RapidJSON at normal precision (``kParseFullPrecisionFlag`` unset), as in its ``ParseNumber``:
    the integer digits and then the fraction digits are collected into an integer while it stays at
    most 2**53 - 1; the remaining fraction digits (up to 17 significant ones) are added in double
    arithmetic; the exponent is applied with one multiplication or division by the double nearest to
    10**|p| (two, below 10**-308). Each step rounds, so the result can be a neighbour of the number
    written. ``text`` is a finite number as Python's ``json`` writes a float (``repr``).
    """
    minus = text.startswith("-")
    mantissa, _, exponent = text.lstrip("-").lower().partition("e")
    integer_digits, _, fraction_digits = mantissa.partition(".")
    significand = int(integer_digits)
    significant = len(integer_digits.lstrip("0")) - 1 if significand else 0
    fraction_exponent = 0
    digits = iter(fraction_digits)
    for digit in digits:
        if significand > _MAX_FAST_SIGNIFICAND:
            digits = iter((digit, *digits))
            break
        significand = significand * 10 + int(digit)
        fraction_exponent -= 1
        if significand:
            significant += 1
    value = float(significand)
    for digit in digits:
        if significant < _MAX_SIGNIFICAND_DIGITS:
            value = value * 10.0 + int(digit)
            fraction_exponent -= 1
            if value > 0.0:
                significant += 1
    power = int(exponent or 0) + fraction_exponent
    if power < -308:
        value = _scaled(_scaled(value, -308), power + 308)
    else:
        value = _scaled(value, power)
    return -value if minus else value


def _scaled(value, power):
    if power < -308:
        return 0.0
    return value * float(f"1e{power}") if power >= 0 else value / float(f"1e{-power}")


def wire_parameters(params):
    """An example's params as Triton request parameters (None for none): scalars as they are, lists and objects
    as JSON text and datetimes as ISO text (Triton's request parameters carry only bool, int, double and string;
    the runtime decodes them again, see runtime/parameters.py). When Triton would change one of them on the way
    (a double its HTTP front end reads as a neighbour, a string holding U+0000, an integer beyond int64), all of
    them travel as the JSON text of the params object in the ``mlflow_params`` parameter, which Triton passes
    unchanged."""
    if not params:
        return None
    wire = {}
    for name, value in params.items():
        value = _plain(value)
        if isinstance(value, (list, tuple, dict)):
            value = json.dumps(value, default=_plain)
        wire[name] = value
    if all(triton_passes(value) for value in wire.values()):
        return wire
    return {PARAMS_CHANNEL: json.dumps({name: _plain(value) for name, value in params.items()}, default=_plain)}


def triton_passes(value):
    """Whether Triton hands a scalar request parameter to the model unchanged over HTTP/JSON and gRPC."""
    if isinstance(value, float):
        return not math.isfinite(value) or triton_json_double(repr(value)) == value  # NaN, Infinity pass as they are
    if isinstance(value, str):
        return "\x00" not in value
    if isinstance(value, int) and not isinstance(value, bool):
        return -(2**63) <= value < 2**63
    return True


def _plain(value):
    """A param value as JSON takes it: datetimes as ISO text, numpy scalars and arrays as Python values."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (np.datetime64, np.ndarray)) and np.asarray(value).dtype.kind == "M":
        return np.datetime_as_string(value).tolist()  # .tolist() alone gives a datetime, or an int for ns
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    return value


def json_request(tensors, datatypes, output_names, parameters=None):
    """The JSON body as a dict: every input with its concrete shape, every output named, the request parameters."""
    inputs = []
    for name, array in tensors.items():
        if array.dtype == object:
            data = [item.decode("utf-8") for item in array.ravel()]
        else:
            data = array.ravel().tolist()
        inputs.append(
            {"name": name, "datatype": wire_datatype(datatypes[name]), "shape": list(array.shape), "data": data}
        )
    body = {"inputs": inputs, "outputs": [{"name": name} for name in output_names]}
    if parameters:
        body["parameters"] = parameters
    return body


def binary_request(tensors, datatypes, output_names, parameters=None):
    """``(body, headers)`` for the binary tensor extension; outputs are requested as binary."""
    inputs = []
    for name, array in tensors.items():
        infer_input = InferInput(name, list(array.shape), wire_datatype(datatypes[name]))
        infer_input.set_data_from_numpy(array, binary_data=True)
        inputs.append(infer_input)
    outputs = [InferRequestedOutput(name, binary_data=True) for name in output_names]
    body, json_size = InferenceServerClient.generate_request_body(inputs, outputs=outputs, parameters=parameters)
    headers = {"Content-Type": "application/octet-stream", JSON_HEADER_LENGTH: str(json_size)}
    return body, headers


def write_request(directory, tensors, datatypes, contents, outputs, output_contents=None, parameters=None):
    """Write request.json, or request.bin + request.headers; return the file names written.

    ``outputs`` maps each output tensor to its config datatype, in config order;
    ``output_contents`` each BYTES output to its content (``text`` / ``binary``);
    ``parameters`` are the request parameters (``wire_parameters``), or None.
    """
    output_names = list(outputs)
    if needs_binary(tensors, contents, outputs, output_contents):
        body, headers = binary_request(tensors, datatypes, output_names, parameters)
        (directory / BINARY_REQUEST).write_bytes(body)
        (directory / BINARY_HEADERS).write_text(
            "".join(f"{key}: {value}\n" for key, value in headers.items()), encoding="utf-8"
        )
        return [BINARY_REQUEST, BINARY_HEADERS]
    body = json_request(tensors, datatypes, output_names, parameters)
    (directory / JSON_REQUEST).write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return [JSON_REQUEST]
