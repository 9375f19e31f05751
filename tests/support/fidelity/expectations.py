"""What MLflow-Triton must do with a case, derived from the README's rules, not from the package.

* :func:`expected_rejection` -- whether ``log_model`` must refuse the case, and the message (a
  regular expression naming the field) it must refuse it with;
* :func:`check_config` -- the generated ``config.pbtxt`` maps every field as the README's table
  says (original names kept, datatypes, dims, text/binary content);
* :func:`expected_answer` -- from ``pyfunc.predict``'s prediction (or its exception), what Triton
  must answer: the prediction's values in the configured dtypes when every value fits unchanged,
  else a 500 naming the first output tensor that does not fit; a model that raises, a 500 naming
  the exception type; a request MLflow's schema enforcement refuses, a 400.
"""

import dataclasses
import json
import math
import re

import numpy as np
import pandas as pd

from .cases import (
    TRITON_DATATYPES,
    declared_kind,
    example_nested_type,
    field_array,
    is_nested,
    nested_type,
    triton_datatype,
)

NUMPY_OF_TRITON = {
    "TYPE_BOOL": "bool",
    "TYPE_INT8": "int8",
    "TYPE_INT16": "int16",
    "TYPE_INT32": "int32",
    "TYPE_INT64": "int64",
    "TYPE_UINT8": "uint8",
    "TYPE_UINT16": "uint16",
    "TYPE_UINT32": "uint32",
    "TYPE_UINT64": "uint64",
    "TYPE_FP16": "float16",
    "TYPE_FP32": "float32",
    "TYPE_FP64": "float64",
    "TYPE_STRING": "object",
}
CONTENT_OF_KIND = {"text": "text", "binary": "binary", "fixed-text": "text", "fixed-binary": "binary"}
OUTPUT_DOES_NOT_FIT = "The prediction does not fit the configured outputs: "
PREDICTION_FAILED = "Prediction failed: "
SCHEMA_REFUSED = "The request does not match the model's input schema: "


@dataclasses.dataclass(frozen=True)
class Rejection:
    """``log_model`` must raise ``error`` (a class name) with a message matching ``pattern``."""

    error: str
    pattern: str


@dataclasses.dataclass(frozen=True)
class Answer:
    """A 200 whose outputs are ``{tensor: expected array}`` (numbers in the configured dtype, BYTES as bytes)."""

    outputs: dict


@dataclasses.dataclass(frozen=True)
class Failure:
    """An error answer: the HTTP status, how the message starts and what else it says."""

    status: int
    message_start: str
    contains: str = ""


# -- logging-time rejections --------------------------------------------------------------------------


def expected_rejection(case, example_prediction):
    """The rejection ``log_model`` must raise for ``case``, or None when it must log it.

    ``example_prediction`` is the model's own prediction of the input example (no MLflow).
    """
    side_of_input = "input schema"
    for position, field in enumerate(case.fields):
        kind_label = "Column" if case.structure == "columns" else "Tensor"
        name = field.name
        if name == "":
            return Rejection(
                "UnsupportedSchemaError", f"{kind_label} '' of the {side_of_input}: an empty name cannot be served"
            )
        if isinstance(name, (float, bool)):
            return Rejection(
                "UnsupportedSchemaError",
                rf"{kind_label} {re.escape(repr(name))} of the {side_of_input}: a "
                rf"{type(name).__name__} label is not supported",
            )
        if type(name) is int and name == 0 and position != 0 and case.structure == "columns":
            return Rejection(
                "UnsupportedSchemaError",
                rf"Column 0 of the input schema: the label 0 at position {position} cannot be served",
            )
        if field.kind in ("fixed-text", "fixed-binary"):
            label = f"Tensor `{re.escape(name)}`" if isinstance(name, str) else "Tensor #0"
            width = "str" if field.kind == "fixed-text" else "bytes"
            return Rejection(
                "UnsupportedSchemaError",
                rf"{label} of the input schema: fixed-width {width} input tensors need a serving adapter",
            )
        if is_nested(field.kind) and "binary" in _leaf_types(nested_type(field.kind)):
            label = rf"Column `{re.escape(name)}`" if isinstance(name, str) else f"Column {name!r}"
            return Rejection(
                "UnsupportedSchemaError",
                rf"{label} of the input schema: a nested value holding binary values is not mapped",
            )
        if field.kind == "datetime-utc":
            return Rejection(
                "ValidationError",
                r"The input example does not fit the signature's tensors: Tensor `[^`]*`"
                rf"( \(field `{re.escape(str(name))}`\))?: element 0 is timezone-aware",
            )
    for output in case.outputs:
        if output.key == "" and case.form in ("dict", "frame", "series"):
            kind_label = "Column" if case.form in ("frame", "series") else "Tensor"
            return Rejection(
                "UnsupportedSchemaError", f"{kind_label} '' of the output schema: an empty name cannot be served"
            )
    for (key, values), output in zip(_prediction_fields(case, example_prediction), case.outputs):
        kind = declared_kind(case, output)
        if is_nested(kind):  # JSON text per row: no element to misfit (an unwritable row is the server's 500)
            continue
        datatype = TRITON_DATATYPES[kind]
        problem = first_misfit(values, datatype, CONTENT_OF_KIND.get(kind))
        if problem is not None:
            return Rejection(
                "ValidationError",
                rf"The prediction does not fit the signature's output tensors: Tensor `[^`]*`"
                rf"( \(field `{re.escape(str(key))}`\))?: element {problem}",
            )
    return None


def _leaf_types(mlflow_type):
    """The leaf types of an MLflow type dict."""
    kind = mlflow_type["type"]
    if kind == "array":
        return _leaf_types(mlflow_type["items"])
    if kind == "map":
        return _leaf_types(mlflow_type["values"])
    if kind == "object":
        return {leaf for spec in mlflow_type["properties"].values() for leaf in _leaf_types(spec)}
    return {kind}


def _prediction_fields(case, prediction):
    """``[(key, ndarray)]`` per output of a recipe prediction (the model's own, not MLflow's)."""
    if case.family == "pytorch-recipe":
        return [(None, np.asarray(prediction))]
    if case.family == "sklearn-pipeline":
        return []
    if case.form == "array":
        return [(case.outputs[0].key, np.asarray(prediction))]
    if case.form == "series":
        return [(case.outputs[0].key, prediction.to_numpy())]
    if case.form == "frame":
        return [(output.key, prediction[output.key].to_numpy()) for output in case.outputs]
    return [(output.key, np.asarray(prediction[output.key])) for output in case.outputs]


def first_misfit(values, datatype, content):
    """``"<index> ..."`` for the first element of ``values`` that ``datatype`` cannot hold unchanged, or None.

    The README's rules: bool becomes any number; integers become integers in range and floats
    that hold them exactly; floats become floats that hold them exactly (NaN and infinities stay);
    never floats to integers, numbers to bool, numbers to text or text to numbers. Text takes
    ``str`` and UTF-8 ``bytes``; binary takes ``bytes`` and ``str``.
    """
    flat = (
        list(np.asarray(values, dtype=object).ravel())
        if np.asarray(values).dtype == object
        else list(np.asarray(values).ravel())
    )
    if datatype == "TYPE_STRING":
        for index, item in enumerate(flat):
            if isinstance(item, str):
                continue
            if isinstance(item, bytes) and (content == "binary" or _is_utf8(item)):
                continue
            return f"{index} "
        return None
    target = np.dtype(NUMPY_OF_TRITON[datatype])
    for index, item in enumerate(flat):
        if not _fits(item, target):
            return f"{index} "
    return None


def _is_utf8(data):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _fits(item, target):
    if isinstance(item, (bool, np.bool_)):
        return True
    if target.kind == "b":
        return False
    if isinstance(item, (int, np.integer)):
        value = int(item)
        if target.kind in "iu":
            info = np.iinfo(target)
            return int(info.min) <= value <= int(info.max)
        with np.errstate(all="ignore"):
            converted = target.type(value)
        return bool(np.isfinite(converted)) and int(converted) == value
    if isinstance(item, (float, np.floating)):
        if target.kind != "f":
            return False
        value = float(item)
        if math.isnan(value):
            return True
        with np.errstate(all="ignore"):
            return float(target.type(item)) == value
    return False


# -- the generated config ------------------------------------------------------------------------------


def check_config(case, contract, inputs, outputs):
    """Assert the README's mapping table for ``case`` (config read by ``mlflow_triton.repository.config``)."""
    declared = {d.name: d for d in inputs}
    assert contract.inputs.structure == case.structure, (contract.inputs.structure, case.structure)
    assert [f.name for f in contract.inputs.fields] == [field.name for field in case.fields]
    for position, (mapped, field) in enumerate(zip(contract.inputs.fields, case.fields)):
        declaration = declared[mapped.tensor]
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", mapped.tensor), mapped.tensor
        assert declaration.data_type == triton_datatype(field.kind), (field, declaration)
        assert tuple(declaration.dims) == tuple(field.dims), (field, declaration)
        assert mapped.content == content_of_kind(field.kind), (field, mapped)
        if is_nested(field.kind):  # the contract records the column's MLflow type (mapping version 5)
            expected = example_nested_type(field.kind, case.example.values[position])
            assert mapped.type == expected, (field, mapped.type)
            assert mapped.missing is None, mapped  # a nested column has no mask
    tensors = [f.tensor for f in contract.inputs.fields] + [f.tensor for f in contract.outputs.fields]
    assert len(set(tensors)) == len(tensors), tensors
    if case.family != "sklearn-recipe":
        return
    assert [f.name for f in contract.outputs.fields] == [output.key for output in case.outputs] or case.form == "array"
    output_types = {d.name: d for d in outputs}
    for mapped, output in zip(contract.outputs.fields, case.outputs):
        kind = declared_kind(case, output)
        assert output_types[mapped.tensor].data_type == triton_datatype(kind), (output, output_types[mapped.tensor])
        if is_nested(kind):
            assert mapped.content == "json", (output, mapped)
            assert mapped.type == nested_type(kind), (output, mapped.type)
        if case.form in ("frame", "series"):
            assert tuple(output_types[mapped.tensor].dims) == (-1,)


def content_of_kind(kind):
    return "json" if is_nested(kind) else CONTENT_OF_KIND.get(kind)


# -- malformed nested rows --------------------------------------------------------------------------------------


def malformed_failure(malformed, mapped):
    """What Triton must answer for a request whose row ``malformed.row`` of nested field ``mapped`` is broken.

    ``bad-json`` and ``narrow`` are the runtime's own refusals (docs/repository.md): a 400 naming the tensor and
    the row. For ``wrong-type`` and ``missing-property`` MLflow's enforcement judges: the caller asks
    ``pyfunc.predict`` first and, where it refuses, expects :func:`enforcement_failure`.
    """
    if malformed.problem == "bad-json":
        return Failure(400, f"Tensor `{mapped.tensor}`", f": row {malformed.row} is not valid JSON (")
    if malformed.problem == "narrow":
        return Failure(
            400, f"Tensor `{mapped.tensor}`", f": row {malformed.row} holds a number that does not fit MLflow's "
        )
    raise ValueError(f"{malformed.problem!r} is judged by pyfunc.predict")


def enforcement_failure(malformed, mapped):
    """MLflow's enforcement refused the malformed row: a 400 with its reason, naming the column and the row."""
    return Failure(400, SCHEMA_REFUSED, f"column `{mapped.name}`, row {malformed.row}: ")


# -- answers ---------------------------------------------------------------------------------------------


def expected_answer(contract, outputs, prediction=None, error=None, empty=False):
    """What Triton must answer for a request whose ``pyfunc.predict`` gave ``prediction`` or raised ``error``.

    ``empty``: an input tensor of the request has no elements; a model that fails on it is the
    request's fault (400 naming the tensor), not the model's.
    """
    if error is not None:
        if getattr(error, "error_class", None) == "SCHEMA_ENFORCEMENT_FAILED":
            return Failure(400, SCHEMA_REFUSED)
        if empty:
            return Failure(
                400, "Tensor `", f"is empty and the model cannot predict an empty request ({type(error).__name__})"
            )
        return Failure(500, f"{PREDICTION_FAILED}{type(error).__name__}; its message may quote the request")
    types = {d.name: d for d in outputs}
    answer = {}
    for position, mapped in enumerate(contract.outputs.fields):
        declaration = types[mapped.tensor]
        field = _output_field(contract.outputs.structure, prediction, mapped.name, position)
        if getattr(mapped, "content", None) == "json":  # one compact UTF-8 JSON text per row (docs/repository.md)
            texts = _json_rows(field)
            if texts is None:
                return Failure(500, f"{OUTPUT_DOES_NOT_FIT}Tensor `{mapped.tensor}`")
            answer[mapped.tensor] = np.array(texts, dtype=object)
            continue
        values = np.asarray(field)
        if getattr(mapped, "scalar", False):  # a 0-d prediction travels as one element
            if values.ndim != 0:
                return Failure(500, f"{OUTPUT_DOES_NOT_FIT}Tensor `{mapped.tensor}`")
            values = values.reshape(1)
        if (
            getattr(mapped, "missing", None) is not None
        ):  # an optional output column: the docs' placeholder where the mask is true
            missing = np.array([_is_missing_value(item) for item in values.flat], dtype=bool).reshape(values.shape)
            answer[mapped.missing] = missing
            values = np.where(missing, _PLACEHOLDER.get(declaration.data_type, 0), values).astype(values.dtype)
        if (
            not _shape_fits(values.shape, declaration.dims)
            or first_misfit(values, declaration.data_type, mapped.content) is not None
        ):
            return Failure(500, f"{OUTPUT_DOES_NOT_FIT}Tensor `{mapped.tensor}`")
        answer[mapped.tensor] = _as_configured(values, declaration.data_type)
    return Answer(answer)


def _json_rows(column):
    """Each row's value as JSON text, numpy values as the Python values they hold; None if one has no JSON form."""

    def plain(value):
        if isinstance(value, np.ndarray):
            return [plain(item) for item in value.tolist()]
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, (list, tuple)):
            return [plain(item) for item in value]
        if isinstance(value, dict):
            if not all(isinstance(key, str) for key in value):
                raise TypeError("a key JSON would turn into text")
            return {key: plain(item) for key, item in value.items()}
        if value is None or isinstance(value, (str, bool, int, float)):
            return value
        raise TypeError(f"{type(value).__name__} has no JSON form")

    rows = list(column.to_numpy(dtype=object)) if isinstance(column, pd.Series) else list(column)
    try:
        return [json.dumps(plain(row), ensure_ascii=False, separators=(",", ":")).encode() for row in rows]
    except TypeError:
        return None


# What a missing row of an optional output column carries beside its mask (docs/repository.md).
_PLACEHOLDER = {"TYPE_STRING": b"", "TYPE_BOOL": False}


def _is_missing_value(item):
    """None, pd.NA, NaT or a float NaN: the values pandas and MLflow call missing."""
    return item is None or item is pd.NA or item is pd.NaT or (isinstance(item, (float, np.floating)) and item != item)


def _output_field(structure, prediction, name, position):
    if structure == "tensor":
        if isinstance(prediction, dict):
            return prediction[name]
        return prediction.to_numpy() if isinstance(prediction, (pd.Series, pd.DataFrame)) else prediction
    if structure == "tensors":
        return prediction[name]
    if isinstance(prediction, pd.Series):
        return prediction.to_numpy()
    if isinstance(prediction, pd.DataFrame):
        return (prediction[name] if name is not None else prediction.iloc[:, position]).to_numpy()
    if isinstance(prediction, dict):
        return prediction[name]
    array = np.asarray(prediction)
    return array if array.ndim == 1 else array[:, position]


def _shape_fits(shape, dims):
    return len(shape) == len(dims) and all(d == -1 or d == s for d, s in zip(dims, shape))


def _as_configured(values, datatype):
    if datatype == "TYPE_STRING":
        items = tuple(item.encode("utf-8") if isinstance(item, str) else bytes(item) for item in values.flat)
        return field_array("binary", values.shape, items)
    target = np.dtype(NUMPY_OF_TRITON[datatype])
    if values.dtype == object:
        values = np.array(
            [item.item() if isinstance(item, np.generic) else item for item in values.flat], dtype=object
        ).reshape(values.shape)
    with np.errstate(all="ignore"):
        return values.astype(target)


def exact_arithmetic(case):
    """Whether the case's model computes bit for bit the same in Triton as in this process."""
    return case.family != "sklearn-pipeline" and all(output.operation != "linear" for output in case.outputs)


def own_prediction(case, model, value):
    """The model's own prediction of ``value`` (no MLflow), for :func:`expected_rejection`."""
    if case.family != "pytorch-recipe":
        return model.predict(value)
    import torch

    matrix = value.to_numpy(dtype=np.float32) if isinstance(value, pd.DataFrame) else value
    with torch.no_grad():
        return model(torch.from_numpy(matrix)).numpy()


__all__ = [
    "Answer",
    "Failure",
    "Rejection",
    "check_config",
    "exact_arithmetic",
    "expected_answer",
    "expected_rejection",
    "first_misfit",
    "own_prediction",
]
