"""Nested values (mapping version 5): each row's value as JSON text in one BYTES element.

A column whose MLflow type is an Array, an Object or a Map travels as a BYTES
tensor with one element per row, the row's value as UTF-8 JSON text (``null``
for a missing row of an optional column). Text that is not valid Unicode (a lone
surrogate, which JSON's ``\\ud800`` escape can write and UTF-8 cannot carry)
fails either way, naming the tensor and the row (MLflow's scoring server refuses
such a request too).

``from_json_texts(texts, mlflow_type, label)`` reads a request's elements with
``json.loads``: arrays become lists, objects dicts, numbers ``int`` or ``float``
(``NaN``, ``Infinity`` and ``-Infinity`` as Python writes them are read too),
which is what ``mlflow models serve`` builds from the same JSON. Where the MLflow
type says ``float`` or ``integer`` (float32, int32: MLflow's schema enforcement
refuses a Python float or int there), a number becomes ``np.float32`` or
``np.int32`` when it keeps its value; one that would change fails, naming the row.
Everything else is MLflow's to judge: ``predict`` applies its schema enforcement,
and a wrong element type or a missing property is its refusal. Rows are lists,
never numpy arrays, also where the logged example held arrays: MLflow's own
serving, and its reading of the saved example, make lists of them too.

``to_json_texts(values, label)`` writes a prediction's (or an example's) rows:
lists, tuples and numpy arrays as JSON arrays, dicts with string keys as
objects, numpy scalars as the Python numbers they hold, floats by ``repr`` (so
every float64 reads back bit for bit, NaN and the infinities included), ``None``
as ``null``. Bytes, datetimes, dicts with keys other than strings and any other
object fail, naming the tensor and the row: JSON text would not bring them back.
"""

import json
import math

import numpy as np

# <mlflow-triton package imports: removed when composing model.py>
from .conversions import TensorMappingError, decode_text

# </mlflow-triton package imports>

# MLflow leaf type -> the numpy type its schema enforcement wants where JSON gives a Python number.
NARROW_LEAVES = {"float": np.float32, "integer": np.int32}


def from_json_texts(items, mlflow_type, label):
    """The rows' values from BYTES elements of JSON text (see the module docstring)."""
    narrows = _has_narrow_leaf(mlflow_type)  # else every value is handed on as json.loads gives it, unwalked
    values = []
    for row, text in enumerate(decode_text(items, label)):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as error:  # JSONDecodeError names the position only, not the text
            raise TensorMappingError(f"Tensor {label}: row {row} is not valid JSON ({error})") from None
        if "\\u" in text and _holds_lone_surrogate(value):  # only an escape can write one in UTF-8 text
            raise TensorMappingError(
                f"Tensor {label}: row {row} holds text that is not valid Unicode (a lone surrogate such as "
                "\\ud800, which UTF-8 cannot carry; MLflow's scoring server refuses it too)"
            )
        values.append(_narrowed(value, mlflow_type, label, row) if narrows else value)
    return values


def _holds_lone_surrogate(value):
    """Whether a string of the JSON value (a key too) has no UTF-8 form: JSON's ``\\ud800`` escape writes one."""
    pending = [value]
    while pending:  # a loop, not recursion: the value may be nested as deep as json.loads reads
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
    return False


def _has_narrow_leaf(mlflow_type):
    """Whether the MLflow type holds a ``float`` or ``integer`` element anywhere."""
    if not isinstance(mlflow_type, dict):
        return False
    if mlflow_type.get("type") in NARROW_LEAVES:
        return True
    children = [mlflow_type.get("items"), mlflow_type.get("values"), *(mlflow_type.get("properties") or {}).values()]
    return any(_has_narrow_leaf(child) for child in children)


def _narrowed(value, mlflow_type, label, row):
    kind = mlflow_type.get("type") if isinstance(mlflow_type, dict) else None
    if kind == "array" and isinstance(value, list):
        return [_narrowed(item, mlflow_type.get("items"), label, row) for item in value]
    if kind == "object" and isinstance(value, dict):
        properties = mlflow_type.get("properties") or {}
        return {key: _narrowed(item, properties.get(key), label, row) for key, item in value.items()}
    if kind == "map" and isinstance(value, dict):
        return {key: _narrowed(item, mlflow_type.get("values"), label, row) for key, item in value.items()}
    if kind in NARROW_LEAVES and type(value) in (int, float):
        return _narrow_number(value, NARROW_LEAVES[kind], kind, label, row)
    return value


def _narrow_number(value, numpy_type, kind, label, row):
    if numpy_type is np.int32 and type(value) is float:
        return value  # MLflow refuses a float for an integer: its message says so
    if numpy_type is np.int32:
        info = np.iinfo(np.int32)
        if int(info.min) <= value <= int(info.max):
            return np.int32(value)
    else:
        try:
            with np.errstate(over="ignore"):
                narrowed = np.float32(value)
        except OverflowError:  # an int beyond float64's range
            narrowed = None
        # float() first: numpy 2 compares a float32 with a Python float in float32, where 0.1 equals np.float32(0.1).
        if narrowed is not None and (float(narrowed) == value or (math.isnan(value) and np.isnan(narrowed))):
            return narrowed
    raise TensorMappingError(
        f"Tensor {label}: row {row} holds a number that does not fit MLflow's {kind} "
        f"({np.dtype(numpy_type).name}) unchanged"
    )


def to_json_texts(items, label):
    """UTF-8 JSON text of each row's value (see the module docstring)."""
    texts = []
    for row, item in enumerate(items):
        try:
            plain = _plain(item)
        except TypeError as error:
            raise TensorMappingError(
                f"Tensor {label}: row {row} {error}, which JSON text cannot carry; it keeps lists, dicts with "
                "string keys, text, numbers, booleans and null"
            ) from None
        text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
        try:
            texts.append(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise TensorMappingError(
                f"Tensor {label}: row {row} holds text that is not valid Unicode (a lone surrogate, which UTF-8 "
                "cannot carry)"
            ) from None
    return texts


def _plain(value):
    """``value`` as the Python lists, dicts, strings, numbers, booleans and None that JSON writes exactly."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufUO":
        return [_plain(item) for item in value.tolist()] if value.ndim else _plain(value.item())
    if isinstance(value, dict):
        strange = next((key for key in value if not isinstance(key, str)), None)
        if strange is not None:
            raise TypeError(f"holds a dict key of type {type(strange).__name__}")
        return {key: _plain(item) for key, item in value.items()}
    raise TypeError(f"holds a value of type {type(value).__name__}")
