"""``check --input FILE``: a user's own input, sent to Triton as the shipped request is.

The file holds the model's input in MLflow's own serving formats, the ones ``mlflow models
serve`` accepts:

* JSON: ``{"dataframe_split": {"columns": [...], "data": [[...], ...]}}``,
  ``{"dataframe_records": [{...}, ...]}``, ``{"inputs": ...}`` or ``{"instances": ...}``
  (a tensor, a dict of named tensors, or records), with the request's ``"params": {...}`` beside it;
* CSV: a table with a header row, for models taking a DataFrame or one 2-D tensor.

A JSON body is read by MLflow's own code, as its scoring server reads it (``invocations()``: ``_parse_json_data``):
``params`` split off, keys that are neither a format nor ``params`` ignored, exactly one format key, an unwrapped LLM
body (``messages``, ``prompt``, ``input``) and a type-hinted model's ``inputs`` as MLflow takes them; a body MLflow
refuses is refused with MLflow's message, saying MLflow refuses it. Params that are not an object are ignored for a
model without a params schema, as MLflow ignores them. Records under ``inputs`` of a model with a column signature
(nested lists of an Array column included) become a DataFrame, as MLflow's schema enforcement makes them before
``predict``: the same rows as ``dataframe_records`` give the same request.

It is parsed against the model's input schema with MLflow's parser, encoded into the configured
input tensors by the runtime's own codec, and written as a request body (JSON, or Triton's
binary tensor extension when the values cannot travel in JSON -- NaN, infinities, raw bytes, float64
values Triton would read as their neighbours -- or an output cannot: FP16, raw bytes).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mlflow_triton.repository import request_files
from mlflow_triton.repository.config import declarations, read_config, wire_arrays
from mlflow_triton.repository.layout import CONFIG_FILE
from mlflow_triton.runtime.codecs import StructureCodec
from mlflow_triton.runtime.conversions import TensorMappingError, to_numbers
from mlflow_triton.runtime.protocol import JSON_CONTENT_TYPE
from mlflow_triton.shared_contract import (
    BYTES_TYPE,
    CONTENT_TYPE_TENSOR,
    REQUEST_TENSOR,
    RESPONSE_TENSOR,
    MlflowTritonError,
)

from .errors import InputFileError
from .send import RequestFiles

if TYPE_CHECKING:
    from mlflow.models import Model

__all__ = ["input_request", "load_user_input", "split_params"]

FORMATS = "a JSON object with one of dataframe_split, dataframe_records, inputs, instances; or a CSV table"


def load_user_input(path: str | os.PathLike[str], model: Model) -> Any:
    """The model input held by the JSON or CSV file ``path``, read for the MLflow model ``model`` (its MLmodel: the
    input schema, the params schema) as MLflow's scoring server reads a body: as an input example is given to
    ``log_model``, the input alone or, for a JSON body with ``params``, the tuple ``(input, params)``."""
    from mlflow.pyfunc.scoring_server import parse_csv_input

    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"--input {path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            return _from_json(path, model)
        if suffix == ".csv":
            return _from_csv(path, model.get_input_schema(), parse_csv_input)
    except InputFileError:
        raise
    except Exception as error:  # MLflow's CSV parser raises MlflowException, pandas its own
        raise InputFileError(f"--input {path}: cannot read it as the model's input: {error}") from None
    raise InputFileError(f"--input {path}: unknown file type {suffix or '(none)'}; expected .json or .csv ({FORMATS})")


def split_params(example: Any) -> tuple[Any, dict[str, Any] | None]:
    """``(input, params or None)`` of what :func:`load_user_input` returns."""
    return example if isinstance(example, tuple) else (example, None)


def _from_json(path, model):
    """A JSON body read by ``mlflow.pyfunc.scoring_server.invocations``'s own parsing (``_parse_json_data``)."""
    import pandas as pd

    from mlflow_triton import mlflow_private

    input_schema = model.get_input_schema()
    body = path.read_bytes()  # an OSError is the file's, said by load_user_input
    try:
        value, params = mlflow_private.parse_json_body(body, model, input_schema)
        if params is not None and not isinstance(params, dict):  # MLflow ignores them without a params schema
            params = mlflow_private.enforce_params_schema(params, model.get_params_schema()) or None
    except Exception as error:  # MlflowException: MLflow's scoring server answers such a body 400 with this message
        said = getattr(error, "message", None) or str(error)
        raise InputFileError(f"--input {path}: MLflow's scoring server refuses this body: {said}") from None
    columns = input_schema is not None and not input_schema.is_tensor_spec()
    if columns and isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
        value = pd.DataFrame(value)  # mlflow.models.utils._enforce_schema: a list for a column signature
    return (value, params) if params else value


def _from_csv(path, input_schema, parse_csv_input):
    with open(path, encoding="utf-8") as stream:
        if input_schema is None or not input_schema.is_tensor_spec():
            return parse_csv_input(stream, input_schema)
        frame = parse_csv_input(stream)
    specs = input_schema.inputs
    if len(specs) != 1 or len(specs[0].shape) != 2:
        raise InputFileError(
            f"--input {path}: a CSV table holds one 2-D tensor, but this model takes "
            + ", ".join(f"{spec.name or 'a tensor'} of shape {list(spec.shape)}" for spec in specs)
            + ': use a JSON file with {"inputs": ...}'
        )
    target = np.dtype(specs[0].type)
    columns = [_column_as(path, column, frame[column].to_numpy(), target) for column in frame.columns]
    return np.column_stack(columns) if columns else np.empty((len(frame), 0), dtype=target)


def _column_as(path, column, values, target):
    """A CSV column as the tensor's dtype ``target``, or InputFileError naming the first value it would change.

    The runtime's value-preserving rules apply (``runtime/conversions.py``), read as a CSV reader
    should: a decimal is rounded to a float tensor's precision (that is reading the text), but
    never overflows; a float is an integer only when it is a whole number in range (``2.0`` -> 2,
    ``2.7`` is refused, never truncated); text is never a number.
    """
    if values.dtype.kind == "f" and target.kind == "f":
        with np.errstate(over="ignore"):
            converted = values.astype(target)
        changed = np.flatnonzero(np.isfinite(values) & ~np.isfinite(converted))
    elif values.dtype.kind == "f" and target.kind in "iu":
        info = np.iinfo(target)
        with np.errstate(invalid="ignore"):
            whole = (
                np.isfinite(values)
                & (values == np.trunc(values))
                & (values >= float(info.min))
                & (values < float(int(info.max) + 1))
            )
        changed = np.flatnonzero(~whole)
        converted = None if changed.size else values.astype(target)
    else:
        try:
            return to_numbers(values, target, str(target), f"`{column}`")
        except TensorMappingError as error:
            reason = re.sub(
                r"^element (\d+)",
                lambda found: f"row {int(found.group(1)) + 1}",
                str(error).removeprefix(f"Tensor `{column}`: "),
            )
            raise InputFileError(
                f"--input {path}: column `{column}` cannot be read as the model's {target} tensor unchanged: {reason}"
            ) from None
    if changed.size:
        row = int(changed[0])
        raise InputFileError(
            f"--input {path}: column `{column}` cannot be read as the model's {target} tensor unchanged: row {row + 1} "
            f"holds {values[row].item()!r}"
        )
    return converted


def input_request(
    value: Any,
    model_dir: str | os.PathLike[str],
    directory: str | os.PathLike[str],
    stem: str = "input-request",
    params: dict[str, Any] | None = None,
) -> RequestFiles:
    """Encode ``value`` for the model in ``model_dir``, ``params`` as the request's parameters (as the shipped request
    carries an example's); write the body under ``directory``."""
    config, contract = read_config(Path(model_dir) / CONFIG_FILE)
    inputs, outputs = declarations(config)
    codec = StructureCodec(contract.inputs, {d.name: (d.data_type, d.dims) for d in inputs})
    try:
        tensors = wire_arrays(config, "input", codec.to_tensors(value))
    except MlflowTritonError as error:
        raise InputFileError(f"the input does not fit the model's input tensors: {error}") from None
    datatypes = {d.name: d.data_type for d in inputs}
    contents = {f.tensor: f.content for f in contract.inputs.fields}
    output_names = [d.name for d in outputs]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    output_types = {d.name: d.data_type for d in outputs}
    output_contents = {f.tensor: f.content for f in contract.outputs.fields}
    parameters = request_files.wire_parameters(params)
    if request_files.needs_binary(tensors, contents, output_types, output_contents):
        body, headers = request_files.binary_request(tensors, datatypes, output_names, parameters)
        body_path = directory / f"{stem}.bin"
        body_path.write_bytes(body)
        return RequestFiles("binary", body_path, list(headers.items()))
    body_path = directory / f"{stem}.json"
    body = request_files.json_request(tensors, datatypes, output_names, parameters)
    body_path.write_text(json.dumps(body), encoding="utf-8")
    return RequestFiles("json", body_path, [("Content-Type", "application/json")])


def rows_of(value: Any) -> int:
    """How many rows (first-axis entries) a model input holds, for messages."""
    if isinstance(value, dict):
        value = next(iter(value.values()), np.empty(0))
    return len(value)


#: The content type of an ``--input`` body for a repository speaking MLflow's protocol, by the file's suffix.
CSV_CONTENT_TYPE = "text/csv"


def body_request(
    path: str | os.PathLike[str], directory: str | os.PathLike[str], stem: str = "input-request"
) -> tuple[RequestFiles, bytes, str]:
    """``(request files, body, content type)`` for a repository speaking MLflow's serving protocol: the file is the
    body a client of ``mlflow models serve`` sends (CSV for a ``.csv`` file, JSON otherwise), put in the ``request``
    tensor with its content type; the request JSON is written under ``directory``."""
    path = Path(path)
    body = path.read_bytes()
    content_type = CSV_CONTENT_TYPE if path.suffix.lower() == ".csv" else JSON_CONTENT_TYPE
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        raise InputFileError(f"{path}: the body is not UTF-8 text, which MLflow's scoring server requires") from None
    tensors = {
        REQUEST_TENSOR: np.array([body], dtype=object),
        CONTENT_TYPE_TENSOR: np.array([content_type.encode("utf-8")], dtype=object),
    }
    datatypes = dict.fromkeys(tensors, BYTES_TYPE)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    body_path = directory / f"{stem}.json"
    body_path.write_text(
        json.dumps(request_files.json_request(tensors, datatypes, [RESPONSE_TENSOR])), encoding="utf-8"
    )
    return RequestFiles("json", body_path, [("Content-Type", "application/json")]), body, content_type
