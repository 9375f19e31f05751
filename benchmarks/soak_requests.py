"""The soak's requests: valid ones, and hostile ones with the class of answer each must get.

Every request is built from ``(seed, index)`` alone: a client builds it just before sending it,
and the checker builds it again afterwards to compare the answer with ``pyfunc.predict``, so
nothing large is held while the load runs.

Answer classes -- who detected the problem, and how it is answered:

* ``answered`` -- HTTP 200 / gRPC OK with outputs (compared with ``pyfunc.predict``).
* ``triton-400`` -- Triton's front end or its checks against ``config.pbtxt`` refused the request
  before any model code ran (HTTP 400 / INVALID_ARGUMENT).
* ``triton-parse-500`` -- Triton's front end could not parse the body at all (HTTP 500 "failed to
  parse the request JSON buffer" / "Unable to parse 'data'", gRPC INTERNAL "Unable to parse
  request"), before any model code ran. Triton's own behaviour, not the runtime's.
* ``runtime-400`` -- the generated runtime refused the request as the client's error (HTTP 400 /
  INVALID_ARGUMENT): unequal column lengths, invalid UTF-8.
* ``model-500`` -- the model's own ``predict`` raised (HTTP 500 / INTERNAL, "Prediction failed").

The model is a columns model (a DataFrame in, one output tensor): FP64 columns and text columns,
such as ``examples/sklearn_example.py``'s Pipeline.

A batched repository (``max_batch_size`` > 0, docs/batching.md) takes every column as ``[rows, 1]``:
:func:`row_shape` gives each request that shape, :func:`hostile_kinds` translates the hostile kinds
(``wrong-rank`` sends rank three, ``unequal-lengths`` becomes ``unequal-batch-sizes`` that Triton
refuses itself, ``empty-batch`` is Triton's 400 there: ``BATCHED_CLASSES``) and adds ``BATCHED_ONLY``
(``too-many-rows``, ``claimed-zero-with-bytes``, ``rank-1``, ``decimal-params``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import tritonclient.http as triton_http
from tritonclient.grpc import service_pb2

from mlflow_triton.repository.config import declarations, read_config
from mlflow_triton.repository.guard import files_directory

ANSWERED = "answered"
TRITON_400 = "triton-400"
TRITON_PARSE_500 = "triton-parse-500"
RUNTIME_400 = "runtime-400"
MODEL_500 = "model-500"
EXPECTED_CLASSES = (ANSWERED, TRITON_400, TRITON_PARSE_500, RUNTIME_400, MODEL_500)

HTTP_JSON, HTTP_BINARY, GRPC = "http-json", "http-binary", "grpc"
TRANSPORTS = (HTTP_JSON, HTTP_BINARY, GRPC)

KNOWN_COLOURS = ("red", "green", "blue")
ODD_TEXT = ("", "purple", "grün", "🌈 rainbow", "red\x00", " red", "RED", "y" * 1000, "\u202eevil")
INVALID_UTF8 = (b"\xff", b"\xc3", b"abc\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"ok\xc0\xaf", b"\xe2\x82")


@dataclasses.dataclass(frozen=True)
class Layout:
    """The served model's columns: ``(column name, tensor name)`` of its FP64 and text inputs, and its outputs."""

    model_name: str
    numeric: tuple[tuple[str, str], ...]
    text: tuple[tuple[str, str], ...]
    outputs: tuple[str, ...]
    max_batch_size: int = 0  # > 0: a batched repository, every column sent as [rows, 1]

    @classmethod
    def from_repository(cls, model_dir):
        """The layout of the model directory clients call (``files_directory``: the model's own directory, or for a
        repository written behind a zero-row guard before runtime 2.11, its batched model's)."""
        config, contract = read_config(files_directory(model_dir) / "config.pbtxt")
        inputs, outputs = declarations(config)
        types = {declaration.name: declaration.data_type for declaration in inputs}
        if contract.inputs.structure != "columns":
            raise ValueError(f"the soak needs a model with column inputs, not {contract.inputs.structure!r}")
        numeric, text = [], []
        for field in contract.inputs.fields:
            if types[field.tensor] == "TYPE_FP64":
                numeric.append((field.name, field.tensor))
            elif types[field.tensor] == "TYPE_STRING" and field.content == "text":
                text.append((field.name, field.tensor))
            else:
                raise ValueError(f"the soak sends FP64 and text columns only; {field.tensor} is {types[field.tensor]}")
        if not numeric or not text:
            raise ValueError("the soak needs at least one FP64 column and one text column")
        return cls(
            Path(model_dir).name,
            tuple(numeric),
            tuple(text),
            tuple(declaration.name for declaration in outputs),
            int(config.max_batch_size),
        )


def row_shape(layout: Layout, rows: int) -> list:
    """The shape a column of ``rows`` rows is sent in: ``[rows]``, or ``[rows, 1]`` to a batched repository."""
    return [rows, 1] if layout.max_batch_size else [rows]


@dataclasses.dataclass
class Request:
    """One request, ready to send: an HTTP body and headers, or a gRPC message (bytes)."""

    index: int
    kind: str
    transport: str
    expected: tuple[str, ...]  # the classes of answer it may get
    frame: pd.DataFrame | None = None  # the model input, for requests that must be answered
    body: bytes = b""
    headers: dict = dataclasses.field(default_factory=dict)

    @property
    def protocol(self):
        return "grpc" if self.transport == GRPC else "http"


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str
    expected: tuple[str, ...]  # the classes of answer a request of this kind may get
    transports: tuple[str, ...]
    build: object  # (rng, layout, transport) -> Request fields
    what: str


# -- tensors -> bodies ----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Tensor:
    """One input as sent: a name, a datatype, a shape and its values (numbers, or bytes/str for BYTES)."""

    name: str
    datatype: str
    shape: list
    values: np.ndarray


def column_tensors(layout, frame):
    """The frame as the configured tensors (text as UTF-8 bytes)."""
    tensors = []
    for column, tensor in layout.numeric:
        values = np.array(frame[column], dtype=np.float64)
        tensors.append(Tensor(tensor, "FP64", row_shape(layout, len(frame)), values))
    for column, tensor in layout.text:
        values = np.empty(len(frame), dtype=object)
        values[:] = [value.encode("utf-8") for value in frame[column]]
        tensors.append(Tensor(tensor, "BYTES", row_shape(layout, len(frame)), values))
    return tensors


def json_body(tensors, parameters=None):
    entries = []
    for tensor in tensors:
        if tensor.datatype == "BYTES":
            data = [value.decode("utf-8") for value in tensor.values]
        else:
            data = tensor.values.tolist()
        entries.append({"name": tensor.name, "datatype": tensor.datatype, "shape": tensor.shape, "data": data})
    document = {"inputs": entries, **({"parameters": parameters} if parameters else {})}
    return json.dumps(document).encode(), {"Content-Type": "application/json"}


def binary_body(tensors, outputs, parameters=None):
    """Triton's binary tensor extension (tritonclient builds it); outputs requested as binary."""
    inputs = []
    for tensor in tensors:
        entry = triton_http.InferInput(tensor.name, list(tensor.shape), tensor.datatype)
        entry.set_data_from_numpy(_numpy(tensor), binary_data=True)
        inputs.append(entry)
    requested = [triton_http.InferRequestedOutput(name, binary_data=True) for name in outputs]
    body, json_size = triton_http.InferenceServerClient.generate_request_body(
        inputs, outputs=requested, parameters=parameters
    )
    return body, {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(json_size)}


def _numpy(tensor):
    if tensor.datatype == "BYTES":
        return tensor.values.reshape(tensor.shape)
    return np.asarray(tensor.values, dtype=_NUMPY[tensor.datatype]).reshape(tensor.shape)


_NUMPY = {"FP64": np.float64, "FP32": np.float32, "INT64": np.int64, "INT32": np.int32, "BOOL": np.bool_}


def serialized_strings(values):
    """BYTES elements as Triton's raw contents carry them: each one a 4-byte little-endian length, then its bytes."""
    return b"".join(len(value).to_bytes(4, "little") + value for value in values)


def raw_contents(tensor):
    if tensor.datatype == "BYTES":
        return serialized_strings(tensor.values)
    return _numpy(tensor).tobytes()


def grpc_message(layout, tensors, contents=None, parameters=None):
    """A serialized ``ModelInferRequest``; ``contents`` overrides the raw bytes of each input; ``parameters``: the
    request's float parameters."""
    message = service_pb2.ModelInferRequest(model_name=layout.model_name)
    for name, value in (parameters or {}).items():
        message.parameters[name].double_param = value
    for tensor in tensors:
        entry = message.inputs.add()
        entry.name, entry.datatype = tensor.name, tensor.datatype
        entry.shape.extend(int(d) for d in tensor.shape)
    message.raw_input_contents.extend(contents if contents is not None else [raw_contents(t) for t in tensors])
    return message.SerializeToString()


def encode(layout, tensors, transport, parameters=None):
    """``(body, headers)`` of these tensors (and the request's float ``parameters``) over ``transport``."""
    if transport == HTTP_JSON:
        return json_body(tensors, parameters)
    if transport == HTTP_BINARY:
        return binary_body(tensors, layout.outputs, parameters)
    return grpc_message(layout, tensors, parameters=parameters), {}


# -- valid inputs -----------------------------------------------------------------------------------------------


def random_frame(rng, layout, rows=None):
    """Rows the model must answer: numbers around the training data, mostly known colours, some odd text."""
    if rows is None:
        rows = int(rng.integers(1, 5)) if rng.random() < 0.8 else int(rng.integers(5, 65))
    data = {}
    for column, _ in layout.numeric:
        data[column] = np.round(rng.normal(4.0, 3.0, rows), int(rng.integers(1, 17)))
    for column, _ in layout.text:
        data[column] = [
            str(rng.choice(KNOWN_COLOURS)) if rng.random() < 0.85 else str(rng.choice(ODD_TEXT)) for _ in range(rows)
        ]
    return pd.DataFrame(data)


def _valid(rng, layout, transport):
    frame = random_frame(rng, layout)
    frame.attrs["transport"] = transport  # the batched oracle's tolerance depends on it (soak_batched.py)
    body, headers = encode(layout, column_tensors(layout, frame), transport)
    return {"frame": frame, "body": body, "headers": headers}


def _long_strings(rng, layout, transport):
    """One or two rows whose text is 1-4 MB long (an unknown category to the model)."""
    frame = random_frame(rng, layout, rows=int(rng.integers(1, 3)))
    column = layout.text[int(rng.integers(len(layout.text)))][0]
    frame.loc[0, column] = str(rng.choice(["é", "z", "☃"])) * int(rng.integers(1_000_000, 4_000_001))
    frame.attrs["transport"] = transport
    body, headers = encode(layout, column_tensors(layout, frame), transport)
    return {"frame": frame, "body": body, "headers": headers}


def huge_request(layout, transport, seed, index, size_mb):
    """One row whose first text value makes the request at least ``size_mb`` MiB (binary HTTP or gRPC)."""
    frame = random_frame(np.random.default_rng([seed, 7, abs(index)]), layout, rows=1)
    frame.loc[0, layout.text[0][0]] = "h" * int(size_mb * 2**20)
    body, headers = encode(layout, column_tensors(layout, frame), transport)
    return Request(index, HUGE.name, transport, HUGE.expected, frame, body, headers)


# -- hostile requests -------------------------------------------------------------------------------------------


def _base(rng, layout):
    frame = random_frame(rng, layout, rows=int(rng.integers(1, 6)))
    return column_tensors(layout, frame)


def _pick(rng, items):
    return items[int(rng.integers(len(items)))]


def _missing_tensor(rng, layout, transport):
    tensors = _base(rng, layout)
    del tensors[int(rng.integers(len(tensors)))]
    return _encoded(layout, tensors, transport)


def _unknown_tensor(rng, layout, transport):
    tensors = _base(rng, layout)
    n = tensors[0].shape[0]
    tensors.insert(
        int(rng.integers(len(tensors) + 1)),
        Tensor(f"unexpected_{int(rng.integers(100))}", "FP64", row_shape(layout, n), rng.normal(size=n)),
    )
    return _encoded(layout, tensors, transport)


def _wrong_dtype(rng, layout, transport):
    tensors = _base(rng, layout)
    position = int(rng.integers(len(tensors)))
    tensor = tensors[position]
    n = tensor.shape[0]
    if tensor.datatype == "BYTES":
        tensors[position] = Tensor(tensor.name, "FP64", row_shape(layout, n), rng.normal(size=n))
    else:
        datatype = _pick(rng, ["FP32", "INT64", "INT32", "BOOL"])
        values = rng.integers(0, 2, n) if datatype in ("INT64", "INT32", "BOOL") else tensor.values
        if datatype == "BOOL":
            values = values.astype(bool)
        values = np.asarray(values, dtype=_NUMPY[datatype])
        tensors[position] = Tensor(tensor.name, datatype, row_shape(layout, n), values)
    return _encoded(layout, tensors, transport)


def _wrong_rank(rng, layout, transport):
    tensors = _base(rng, layout)
    tensor = tensors[int(rng.integers(len(tensors)))]
    n = tensor.shape[0]
    # A batched repository takes [n, 1]: rank three is wrong there (rank one is the batched kind `rank-1`).
    tensor.shape = _pick(rng, [[n, 1, 1], [1, 1, n]] if layout.max_batch_size else [[1, n], [n, 1], [1, 1, n]])
    return _encoded(layout, tensors, transport)


def _unequal_lengths(rng, layout, transport):
    tensors = _base(rng, layout)
    victim = tensors[int(rng.integers(len(tensors)))]
    n = victim.shape[0]
    new = n + int(rng.integers(1, 4)) if rng.random() < 0.5 or n == 1 else int(rng.integers(0, n))
    if victim.datatype == "BYTES":
        values = np.empty(new, dtype=object)
        values[:] = [b"red"] * new
    else:
        values = rng.normal(size=new)
    victim.values, victim.shape = values, row_shape(layout, new)
    return _encoded(layout, tensors, transport)


def _invalid_utf8(rng, layout, transport):
    tensors = _base(rng, layout)
    texts = [tensor for tensor in tensors if tensor.datatype == "BYTES"]
    tensor = texts[int(rng.integers(len(texts)))]
    tensor.values[int(rng.integers(len(tensor.values)))] = _pick(rng, INVALID_UTF8)
    return _encoded(layout, tensors, transport)


def _empty_batch(rng, layout, transport):
    return _encoded(layout, column_tensors(layout, random_frame(rng, layout, rows=0)), transport)


def _too_many_rows(rng, layout, transport):
    """Valid rows, but more of them than a batched repository's ``max_batch_size``."""
    rows = layout.max_batch_size + int(rng.integers(1, 9))
    return _encoded(layout, column_tensors(layout, random_frame(rng, layout, rows=rows)), transport)


def _claimed_zero_with_bytes(rng, layout, transport):
    """Every column's shape says 0 rows (``[0, 1]``) while the body carries one row's bytes for each: Triton's size
    check passes (its 0 is "no batch axis yet"), and the backend is handed each tensor without its row axis."""
    tensors = column_tensors(layout, random_frame(rng, layout, rows=1))
    contents = [raw_contents(tensor) for tensor in tensors]
    if transport == GRPC:
        claimed = [dataclasses.replace(tensor, shape=[0, *tensor.shape[1:]]) for tensor in tensors]
        return {"body": grpc_message(layout, claimed, contents)}
    body, headers = binary_body(tensors, layout.outputs)
    return {"body": claimed_zero_rows(body, headers), "headers": headers}


def claimed_zero_rows(body, headers):
    """A binary HTTP ``body`` whose JSON header gives every input a first dimension of 0, its tensor bytes kept
    (``headers``' ``Inference-Header-Content-Length`` is set to the new header's length)."""
    json_size = int(headers["Inference-Header-Content-Length"])
    header = json.loads(body[:json_size])
    for entry in header["inputs"]:
        entry["shape"] = [0, *entry["shape"][1:]]
    text = json.dumps(header).encode()
    headers["Inference-Header-Content-Length"] = str(len(text))
    return text + body[json_size:]


def _rank_1(rng, layout, transport):
    """One column, or every one, sent as ``[n]`` where a batched repository takes ``[n, 1]``."""
    tensors = _base(rng, layout)
    chosen = tensors if rng.random() < 0.5 else [tensors[int(rng.integers(len(tensors)))]]
    for tensor in chosen:
        tensor.shape = [tensor.shape[0]]
    return _encoded(layout, tensors, transport)


def decimal_parameter(rng):
    """A request parameter whose value is a number with a fraction (Triton's ``double_param``)."""
    value = float(np.round(rng.uniform(-100.0, 100.0), int(rng.integers(1, 6))))
    return {str(_pick(rng, ["scale", "temperature", "threshold"])): value if not value.is_integer() else value + 0.5}


def _decimal_params(rng, layout, transport):
    """Valid rows with a decimal request parameter: the soak model's signature declares no params."""
    tensors = column_tensors(layout, random_frame(rng, layout))
    body, headers = encode(layout, tensors, transport, decimal_parameter(rng))
    return {"body": body, "headers": headers}


def _non_finite(rng, layout, transport):
    tensors = _base(rng, layout)
    numbers = [tensor for tensor in tensors if tensor.datatype == "FP64"]
    tensor = numbers[int(rng.integers(len(numbers)))]
    tensor.values[int(rng.integers(len(tensor.values)))] = _pick(rng, [np.nan, np.inf, -np.inf])
    return _encoded(layout, tensors, transport)


def _truncated_binary_body(rng, layout, transport):
    body, headers = binary_body(_base(rng, layout), layout.outputs)
    binary = len(body) - int(headers["Inference-Header-Content-Length"])
    return {"body": body[: len(body) - int(rng.integers(1, binary + 1))], "headers": headers}


def _header_length_too_long(rng, layout, transport):
    body, headers = binary_body(_base(rng, layout), layout.outputs)
    json_size = int(headers["Inference-Header-Content-Length"])
    wrong = json_size + int(rng.integers(1, len(body) - json_size + 1))
    return {"body": body, "headers": {**headers, "Inference-Header-Content-Length": str(wrong)}}


def _header_length_past_body(rng, layout, transport):
    body, headers = binary_body(_base(rng, layout), layout.outputs)
    wrong = len(body) + int(rng.integers(1, 2**31 - len(body)))
    return {"body": body, "headers": {**headers, "Inference-Header-Content-Length": str(wrong)}}


def _header_length_too_short(rng, layout, transport):
    body, headers = binary_body(_base(rng, layout), layout.outputs)
    json_size = int(headers["Inference-Header-Content-Length"])
    wrong = int(rng.integers(1, json_size))
    return {"body": body, "headers": {**headers, "Inference-Header-Content-Length": str(wrong)}}


def _garbage_body(rng, layout, transport):
    # A first byte no JSON document and no protobuf message can start with (0x07: wire type 7), then noise.
    noise = rng.bytes(int(rng.integers(0, 4096)))
    if transport == GRPC:
        return {"body": b"\x07" + noise}
    return {"body": b"\xff" + noise, "headers": {"Content-Type": "application/json"}}


def _empty_body(rng, layout, transport):
    return {"body": b"", "headers": {"Content-Type": "application/json"}}


def _truncated_json_body(rng, layout, transport):
    body, headers = json_body(_base(rng, layout))
    return {"body": body[: int(rng.integers(1, len(body)))], "headers": headers}


def _json_data_mismatch(rng, layout, transport):
    body, headers = json_body(_base(rng, layout))
    document = json.loads(body)
    entry = _pick(rng, document["inputs"])
    if rng.random() < 0.5:
        entry["shape"] = [entry["shape"][0] + int(rng.integers(1, 4)), *entry["shape"][1:]]  # more declared than sent
    elif entry["datatype"] == "BYTES":
        entry["data"] = [int(rng.integers(100)) for _ in entry["data"]] or [1]  # numbers where text belongs
        entry["shape"] = [len(entry["data"]), *entry["shape"][1:]]
    else:
        entry["data"] = ["1.5" for _ in entry["data"]]  # text where numbers belong
    return {"body": json.dumps(document).encode(), "headers": headers}


def _grpc_contents_size_mismatch(rng, layout, transport):
    tensors = _base(rng, layout)
    contents = [raw_contents(tensor) for tensor in tensors]
    numbers = [i for i, tensor in enumerate(tensors) if tensor.datatype == "FP64"]
    i = numbers[int(rng.integers(len(numbers)))]
    cut = int(rng.integers(1, 8))
    contents[i] = contents[i][:-cut] if rng.random() < 0.5 else contents[i] + rng.bytes(cut)
    return {"body": grpc_message(layout, tensors, contents)}


def _grpc_string_count_mismatch(rng, layout, transport):
    tensors = _base(rng, layout)
    contents = [raw_contents(tensor) for tensor in tensors]
    texts = [i for i, tensor in enumerate(tensors) if tensor.datatype == "BYTES"]
    i = texts[int(rng.integers(len(texts)))]
    values = list(tensors[i].values)
    values = values[:-1] if len(values) > 1 and rng.random() < 0.5 else values + [b"extra"]
    contents[i] = serialized_strings(values)
    return {"body": grpc_message(layout, tensors, contents)}


def _grpc_missing_contents(rng, layout, transport):
    tensors = _base(rng, layout)
    contents = [raw_contents(tensor) for tensor in tensors]
    return {"body": grpc_message(layout, tensors, contents[: int(rng.integers(len(contents)))])}


def _encoded(layout, tensors, transport):
    body, headers = encode(layout, tensors, transport)
    return {"body": body, "headers": headers}


EMPTY_BATCH_WHAT = "every tensor with 0 rows"
ALL = TRANSPORTS
JSON_OR_GRPC = (HTTP_JSON, GRPC)
BINARY_OR_GRPC = (HTTP_BINARY, GRPC)

VALID = Kind("valid", (ANSWERED,), ALL, _valid, "1-64 rows, mostly known colours, some odd text (empty, NUL, emoji)")
HOSTILE = (
    Kind("long-strings", (ANSWERED,), ALL, _long_strings, "a 1-4 MB text value (an unknown category)"),
    Kind("missing-tensor", (TRITON_400,), JSON_OR_GRPC, _missing_tensor, "an input tensor left out"),
    Kind("unknown-tensor", (TRITON_400,), JSON_OR_GRPC, _unknown_tensor, "an extra tensor the config does not declare"),
    Kind("wrong-dtype", (TRITON_400,), JSON_OR_GRPC, _wrong_dtype, "FP32/INT64/INT32/BOOL for FP64, FP64 for text"),
    Kind(
        "wrong-rank",
        (TRITON_400,),
        JSON_OR_GRPC,
        _wrong_rank,
        "shape [1, n], [n, 1] or [1, 1, n] for a column (batched: [n, 1, 1] or [1, 1, n])",
    ),
    Kind(
        "truncated-binary-body", (TRITON_400,), (HTTP_BINARY,), _truncated_binary_body, "binary tensor data cut short"
    ),
    Kind(
        "header-length-past-body",
        (TRITON_400,),
        (HTTP_BINARY,),
        _header_length_past_body,
        "Inference-Header-Content-Length beyond the end of the body",
    ),
    # Triton's JSON reader either stops at the header's end (then the tensor sizes do not add up: 400) or
    # reads the binary bytes after it as JSON (500), depending on the byte that follows.
    Kind(
        "header-length-too-long",
        (TRITON_400, TRITON_PARSE_500),
        (HTTP_BINARY,),
        _header_length_too_long,
        "Inference-Header-Content-Length past the JSON header, inside the body",
    ),
    Kind("empty-body", (TRITON_400,), (HTTP_JSON,), _empty_body, "POST without a body"),
    Kind(
        "grpc-contents-size-mismatch",
        (TRITON_400,),
        (GRPC,),
        _grpc_contents_size_mismatch,
        "raw contents a few bytes short or long",
    ),
    Kind(
        "grpc-string-count-mismatch",
        (TRITON_400,),
        (GRPC,),
        _grpc_string_count_mismatch,
        "one string element fewer or more than the shape",
    ),
    Kind("grpc-missing-contents", (TRITON_400,), (GRPC,), _grpc_missing_contents, "fewer raw contents than inputs"),
    Kind(
        "garbage-body",
        (TRITON_PARSE_500,),
        (HTTP_JSON, GRPC),
        _garbage_body,
        "random bytes that are neither JSON nor protobuf",
    ),
    Kind("truncated-json-body", (TRITON_PARSE_500,), (HTTP_JSON,), _truncated_json_body, "a JSON body cut short"),
    Kind(
        "header-length-too-short",
        (TRITON_PARSE_500,),
        (HTTP_BINARY,),
        _header_length_too_short,
        "Inference-Header-Content-Length inside the JSON header",
    ),
    # Numbers that do not fit their shape or datatype fail in Triton's JSON reader (500); text elements are
    # read first and counted afterwards (400).
    Kind(
        "json-data-mismatch",
        (TRITON_PARSE_500, TRITON_400),
        (HTTP_JSON,),
        _json_data_mismatch,
        "JSON data that disagrees with its shape or datatype",
    ),
    Kind("unequal-lengths", (RUNTIME_400,), ALL, _unequal_lengths, "one column longer or shorter than the others"),
    Kind("invalid-utf8", (RUNTIME_400,), BINARY_OR_GRPC, _invalid_utf8, "a text element that is not UTF-8"),
    Kind("empty-batch", (RUNTIME_400,), ALL, _empty_batch, EMPTY_BATCH_WHAT),
    Kind("non-finite", (MODEL_500,), BINARY_OR_GRPC, _non_finite, "NaN or ±inf in a numeric column"),
)
# Sent to a batched repository only (every column declared ``dims: [1]``, no input reshaped to ``[]``). Triton compares
# the inputs' first (batch) axes, the batch size and each input's shape itself before any model code runs, so unequal
# lengths, too many rows and a column without its ``1`` are Triton's 400 there, and a request of 0 rows is too: its
# tensors hold fewer bytes or strings than the one row Triton then expects. A request whose shapes claim 0 rows but
# whose binary tensors carry one row passes those checks and reaches the runtime, which refuses it naming the tensor.
BATCHED_ONLY = (
    Kind(
        "unequal-batch-sizes",
        (TRITON_400,),
        ALL,
        _unequal_lengths,
        "one column with more or fewer rows than the others (batched: Triton compares the batch axes)",
    ),
    Kind("too-many-rows", (TRITON_400,), ALL, _too_many_rows, "more rows than max_batch_size (batched only)"),
    Kind(
        "claimed-zero-with-bytes",
        (RUNTIME_400,),
        BINARY_OR_GRPC,
        _claimed_zero_with_bytes,
        "every column's shape [0, 1], its binary tensor carrying one row (batched only)",
    ),
    Kind("rank-1", (TRITON_400,), ALL, _rank_1, "one column or every one as [n], not [n, 1] (batched only)"),
    # As the unbatched model answers it (tests/e2e/test_batching_zero_rows_triton.py): the runtime refuses a parameter
    # a model without a params schema cannot apply, where MLflow's scoring server would drop it with a warning.
    Kind(
        "decimal-params",
        (RUNTIME_400,),
        ALL,
        _decimal_params,
        "valid rows and a decimal parameter (`scale`, `temperature` or `threshold`: 2.5); no params declared",
    ),
)
# Kinds a batched repository answers with another class than the unbatched one, under the same name.
BATCHED_CLASSES = {
    "empty-batch": Kind("empty-batch", (TRITON_400,), ALL, _empty_batch, EMPTY_BATCH_WHAT),
}
EXCLUDED_WHEN_BATCHED = {
    "unequal-lengths": "sent as unequal-batch-sizes: Triton refuses unequal batch axes itself (triton-400)",
}
HUGE = Kind("huge-request", (ANSWERED,), (HTTP_BINARY, GRPC), None, "one row whose text makes the request ≥ 50 MiB")
KINDS = {kind.name: kind for kind in (VALID, *HOSTILE, *BATCHED_ONLY, HUGE)}


def hostile_kinds(layout: Layout) -> tuple[Kind, ...]:
    """The hostile kinds sent to this repository: ``HOSTILE``, or their batched equivalents for a batched one."""
    if not layout.max_batch_size:
        return HOSTILE
    kept = (BATCHED_CLASSES.get(kind.name, kind) for kind in HOSTILE if kind.name not in EXCLUDED_WHEN_BATCHED)
    return (*kept, *BATCHED_ONLY)


def build_request(layout, seed, index, hostile_fraction):
    """The request number ``index`` of a soak with this seed: valid, or one of the hostile kinds."""
    rng = np.random.default_rng([seed, index])
    hostile = hostile_kinds(layout)
    kind = VALID if rng.random() >= hostile_fraction else hostile[int(rng.integers(len(hostile)))]
    transport = kind.transports[int(rng.integers(len(kind.transports)))]
    fields = kind.build(rng, layout, transport)
    return Request(index, kind.name, transport, kind.expected, **fields)
