"""Element conversions between MLflow values and Triton tensor dtypes: value-preserving only.

``to_numbers(array, dtype, data_type, label)`` turns a prediction (or an example)
into the configured numeric dtype, or raises ``TensorMappingError`` naming the
tensor. A value is never changed to fit:

* the configured dtype passes as it is; an empty array takes the configured
  dtype (``np.asarray([])`` is float64 whatever was meant);
* bool becomes any number (``True`` -> 1, 1.0); a number never becomes bool;
* an integer becomes any integer type (int64 -> int32, uint64 -> int64, int64 ->
  uint8, ...) when the value lies in the target's range;
* an integer becomes a float when the float holds it exactly (int64 ``2**53 + 1``
  fails for every float type; int32 ``2**24 + 1`` fails for float32);
* a float becomes a wider float, or a narrower one when it is exactly
  representable there (NaN and infinities stay themselves; float64 ``1e6``
  overflows float16 and fails, ``0.1`` rounds in float32 and fails);
* floats never become integers (also ``1.0``), nor do complex, datetime,
  timedelta or string values become numbers (``"1"`` is never parsed);
* an object array holds Python or numpy scalars: all bool, all integers (bool
  counts as 0/1) or integers and floats (each integer exactly a float64); any
  other element (``None``, ``pd.NA``, a string, ``Decimal``, ``np.timedelta64``, ...) fails, naming
  its index. The elements are then converted by the rules above.

A failure names the element's flat index and, for a number that does not fit,
its value.

``to_bytes_items(items, content, label)`` encodes BYTES elements: text takes
``str`` (encoded as UTF-8) and ``bytes`` that are valid UTF-8; binary takes
``bytes`` and ``str`` (encoded as UTF-8). ``None``, NaN, ``pd.NA`` and any other
type (a number is never turned into its digits) fail, naming the element.

``decode_text`` / ``as_bytes`` read BYTES elements Triton delivers. BYTES
tensors are numpy object arrays (never ``np.bytes_``, which strips trailing
NUL bytes).

``to_nanoseconds(array, label)`` turns datetimes into INT64 nanoseconds since the
epoch: ``datetime64`` arrays of any unit, and object arrays of ``datetime64``,
``pandas.Timestamp`` or ``datetime.datetime`` values; NaT is -2**63 (numpy's own
NaT). A time outside datetime64[ns]'s range (1677-09-21 .. 2262-04-11) fails
(MLflow's schema enforcement fails on it too), and so do timezone-aware values
(MLflow's enforcement refuses them), text (never parsed) and numbers.
``from_nanoseconds`` is the reverse: a ``datetime64[ns]`` array.

Missing values (``missing_of``, ``fill_missing``, ``with_missing``): for a column
with a missing-value mask, ``None``, ``pd.NA``, NaT and float NaN are missing;
they travel as a placeholder (0, ``False``, ``b""``, the epoch) with the mask
``True``, and come back as the column's missing value: NaN for floats, NaT for
datetimes, ``None`` for text, binary and bool (a bool column with a missing row
becomes an object column of ``True``/``False``/``None``, as pandas builds it from
a list, and MLflow's enforcement passes it as it is).
"""

import datetime

import numpy as np
import pandas as pd

# <mlflow-triton package imports: removed when composing model.py>
from .errors import TensorMappingError

# </mlflow-triton package imports>

_NUMBER_KINDS = "biuf"
# Source kind -> the target kinds a value may keep its value in.
_TARGET_KINDS = {"b": "biuf", "i": "iuf", "u": "iuf", "f": "f"}


# -- numbers -------------------------------------------------------------------------------------


def to_numbers(array, dtype, data_type, label):
    """``array`` as ``dtype`` with every value unchanged, or TensorMappingError (rules above)."""
    if array.dtype == dtype or array.size == 0:
        return array.astype(dtype, copy=False)
    described = str(array.dtype)
    if array.dtype == object:
        array, described = _numbers_of_objects(array, dtype, data_type, label)
    if array.dtype.kind not in _NUMBER_KINDS or dtype.kind not in _TARGET_KINDS[array.dtype.kind]:
        raise TensorMappingError(f"Tensor {label}: cannot convert {described} values to {data_type} ({dtype})")
    if _always_exact(array.dtype, dtype):
        return array.astype(dtype)
    with np.errstate(all="ignore"):
        converted = array.astype(dtype)
    index = _first_changed(array.ravel(), converted.ravel(), dtype)
    if index is not None:
        value = array.ravel()[index].item()
        raise TensorMappingError(
            f"Tensor {label}: element {index} ({value!r}) does not fit {data_type} ({dtype}) unchanged"
        )
    return converted


def _always_exact(source, target):
    """Whether every value of ``source`` keeps its value in ``target``."""
    if source.kind == "b":
        return True
    if target.kind in "iu":
        return np.can_cast(source, target, casting="safe")
    if source.kind == "f":
        return target.itemsize >= source.itemsize
    info = np.iinfo(source)
    limit = 2 ** (np.finfo(target).nmant + 1)  # every integer up to this magnitude is exact
    return -limit <= int(info.min) and int(info.max) <= limit


def _first_changed(values, converted, target):
    """The flat index of the first value that ``converted`` does not hold unchanged, or None."""
    if target.kind in "iu":
        # The target's bounds in the values' own dtype: comparing uint64 with int64 may go through float64.
        info, own = np.iinfo(target), np.iinfo(values.dtype)
        low = values.dtype.type(max(int(info.min), int(own.min)))
        high = values.dtype.type(min(int(info.max), int(own.max)))
        outside = (values < low) | (values > high)
        return int(np.argmax(outside)) if outside.any() else None
    if values.dtype.kind == "f":
        same = (converted == values) | (np.isnan(converted) & np.isnan(values))
        return None if same.all() else int(np.argmin(same))
    limit = 2 ** (np.finfo(target).nmant + 1)
    beyond = values > limit
    if values.dtype.kind == "i":
        beyond |= values < -limit
    for index in np.flatnonzero(beyond):  # only integers this large can round
        approximation = converted[index]
        if not np.isfinite(approximation) or int(approximation) != int(values[index]):
            return int(index)
    return None


def _numbers_of_objects(array, dtype, data_type, label):
    """A numeric array with the values of an object array's scalars, and a description of them."""
    items = array.ravel().tolist()
    kinds = set()
    for index, item in enumerate(items):
        if isinstance(item, (bool, np.bool_)):
            kinds.add("b")
        elif isinstance(item, (np.timedelta64, np.datetime64)):  # numpy counts timedelta64 as an integer
            raise TensorMappingError(
                f"Tensor {label}: element {index} is {_describe(item)}, not a number ({data_type} expected)"
            )
        elif isinstance(item, (int, np.integer)):
            kinds.add("i")
        elif isinstance(item, (float, np.floating)):
            kinds.add("f")
        else:
            raise TensorMappingError(
                f"Tensor {label}: element {index} is {_describe(item)}, not a number ({data_type} expected)"
            )
    if kinds == {"b"}:
        return np.array(items, dtype=bool).reshape(array.shape), "bool"
    if "f" not in kinds:
        integers = [int(item) for item in items]
        for candidate in (np.int64, np.uint64):
            info = np.iinfo(candidate)
            if int(info.min) <= min(integers) and max(integers) <= int(info.max):
                return np.array(integers, dtype=candidate).reshape(array.shape), "integer"
        index = integers.index(min(integers) if min(integers) < 0 else max(integers))
        raise TensorMappingError(
            f"Tensor {label}: element {index} ({integers[index]!r}) does not fit {data_type} ({dtype}) unchanged"
        )
    floats = []
    for index, item in enumerate(items):
        try:
            number = float(item)
        except OverflowError:
            number = None
        if number is None or not _same_number(number, item):
            value = item.item() if isinstance(item, np.generic) else item
            raise TensorMappingError(
                f"Tensor {label}: element {index} ({value!r}) does not fit {data_type} ({dtype}) unchanged"
            )
        floats.append(number)
    return np.array(floats, dtype=np.float64).reshape(array.shape), "float"


def _same_number(number, item):
    """Whether the float ``number`` is exactly ``item``. Integers compare as Python ints: numpy would
    compare ``np.int64(2**53 + 1)`` with a float through float64 and call the rounded value equal."""
    if isinstance(item, (int, np.integer)):
        return number == int(item)
    return number == item or item != item  # NaN stays NaN


def _describe(item):
    """What an element is, without its value (it may be request data)."""
    if item is None or item is pd.NA:
        return f"missing ({item!r})"
    return f"a {type(item).__name__}"


# -- datetimes ------------------------------------------------------------------------------------

NANOSECONDS = np.dtype("datetime64[ns]")


def to_nanoseconds(array, label):
    """INT64 nanoseconds since the epoch of the datetimes in ``array``, or TensorMappingError (rules above)."""
    if array.dtype.kind == "M":
        converted = _datetimes_as_nanoseconds(array)
        if isinstance(converted, int):
            raise TensorMappingError(
                f"Tensor {label}: element {converted} ({array.ravel()[converted]}) lies outside datetime64[ns]'s "
                "range (1677-09-21 .. 2262-04-11)"
            )
        return converted
    if array.dtype == object:
        items = [_nanoseconds(item, label, index) for index, item in enumerate(array.ravel().tolist())]
        return np.array(items, dtype=np.int64).reshape(array.shape)
    if array.size == 0:
        return array.astype(np.int64)
    raise TensorMappingError(
        f"Tensor {label}: cannot convert {array.dtype} values to datetimes; a datetime column takes datetime64 "
        "values, pandas Timestamps or datetime.datetime"
    )


# Nanoseconds per unit of the units a time converts to ns by multiplication (months and years do not).
_UNIT_NANOSECONDS = {"W": 604800 * 10**9, "D": 86400 * 10**9, "h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9}
_UNIT_NANOSECONDS.update({"ms": 10**6, "us": 10**3, "ns": 1})
_MAX_NANOSECONDS = 2**63 - 1  # -2**63 is NaT


def _datetimes_as_nanoseconds(array):
    """INT64 nanoseconds of a datetime64 array, or the flat index of the first time outside the ns range.

    numpy wraps silently where a time leaves the range, and its conversion back from ns overflows near
    the lower end, so linear units are multiplied in checked integer arithmetic; months, years and units
    finer than ns go through numpy and must convert back unchanged (a time near the ends may be refused).
    """
    unit, count = np.datetime_data(array.dtype)
    valid = ~np.isnat(array)
    if unit in _UNIT_NANOSECONDS:
        factor = _UNIT_NANOSECONDS[unit] * count
        values = array.view(np.int64)
        limit = _MAX_NANOSECONDS // factor
        outside = np.flatnonzero(valid.ravel() & ((values.ravel() > limit) | (values.ravel() < -limit)))
        if outside.size:
            return int(outside[0])
        return np.where(valid, values * np.int64(factor), np.iinfo(np.int64).min)
    converted = array.astype(NANOSECONDS)
    changed = np.flatnonzero(valid.ravel() & (converted.astype(array.dtype) != array).ravel())
    return int(changed[0]) if changed.size else converted.view(np.int64)


def _nanoseconds(item, label, index):
    if item is pd.NaT or (isinstance(item, np.datetime64) and np.isnat(item)):
        return int(np.iinfo(np.int64).min)
    if isinstance(item, datetime.datetime) and item.tzinfo is not None:
        raise TensorMappingError(
            f"Tensor {label}: element {index} is timezone-aware ({item.tzinfo}); MLflow's schema enforcement refuses "
            "timezone-aware datetimes: make the column naive before logging or sending (e.g. "
            "frame[column].dt.tz_convert(None) for UTC wall time)"
        )
    if not isinstance(item, (datetime.datetime, np.datetime64)):
        raise TensorMappingError(
            f"Tensor {label}: element {index} is {_describe(item)}, not a datetime (a datetime column takes "
            "datetime64 values, pandas Timestamps or datetime.datetime; text is never parsed: use pandas.to_datetime)"
        )
    try:
        return int(pd.Timestamp(item).as_unit("ns").value)
    except (OverflowError, ValueError) as error:  # pandas' OutOfBoundsDatetime is a ValueError
        raise TensorMappingError(
            f"Tensor {label}: element {index} lies outside datetime64[ns]'s range (1677-09-21 .. 2262-04-11): {error}"
        ) from None


def from_nanoseconds(array):
    """The ``datetime64[ns]`` array of INT64 nanoseconds (a copy: Triton's buffers may be read-only)."""
    return array.astype(np.int64, copy=True).view(NANOSECONDS)


# -- missing values ---------------------------------------------------------------------------------


def missing_of(array):
    """A bool array: True where ``array`` holds a missing value (None, pd.NA, NaT, float NaN)."""
    if array.dtype.kind == "f":
        return np.isnan(array)
    if array.dtype.kind == "M":
        return np.isnat(array)
    if array.dtype != object:
        return np.zeros(array.shape, dtype=bool)
    flags = [_is_missing(item) for item in array.ravel().tolist()]
    return np.array(flags, dtype=bool).reshape(array.shape)


def _is_missing(item):
    if item is None or item is pd.NA or item is pd.NaT:
        return True
    if isinstance(item, (float, np.floating)):
        return item != item
    return isinstance(item, np.datetime64) and bool(np.isnat(item))


def fill_missing(array, missing, placeholder):
    """``array`` with ``placeholder`` where ``missing`` is True (a copy; ``array`` itself is kept).
    Only object, float and datetime64 arrays can hold a missing value (``missing_of``)."""
    if not missing.any():
        return array
    filled = array.copy()
    filled[missing] = placeholder if array.dtype == object else np.array(placeholder).astype(array.dtype)
    return filled


def with_missing(values, missing):
    """The decoded column ``values`` with the missing value where ``missing`` is True (rules above)."""
    if not missing.any():
        return values
    if values.dtype.kind == "f":
        result = values.copy()
        result[missing] = np.nan
        return result
    if values.dtype.kind == "M":
        result = values.copy()
        result[missing] = np.datetime64("NaT")
        return result
    items = values.tolist()  # Python bools / str / bytes, as pandas holds them in an object column
    return object_array([None if flag else item for item, flag in zip(items, missing.tolist())], values.shape)


# -- BYTES -----------------------------------------------------------------------------------------


def object_array(items, shape):
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array.reshape(shape)


def to_bytes_items(items, content, label):
    """The BYTES elements of ``items`` for ``content`` ``"text"`` or ``"binary"`` (rules above)."""
    encode = _text_bytes if content == "text" else _binary_bytes
    return [encode(item, label, index) for index, item in enumerate(items)]


def _text_bytes(item, label, index):
    if isinstance(item, str):
        return _encoded(item, label, index)
    if isinstance(item, (bytes, bytearray, np.bytes_)):
        data = bytes(item)
        _decoded(data, label, index)  # only checked: text must be UTF-8 (the element is named otherwise)
        return data
    raise _not_bytes(item, label, index, "text tensors take str or UTF-8 bytes")


def _binary_bytes(item, label, index):
    if isinstance(item, (bytes, bytearray, np.bytes_)):
        return bytes(item)
    if isinstance(item, str):
        return _encoded(item, label, index)
    raise _not_bytes(item, label, index, "binary tensors take bytes or str")


def _not_bytes(item, label, index, allowed):
    if item is None or item is pd.NA or (isinstance(item, (float, np.floating)) and item != item):
        return _element_error(label, index, f"is missing ({item!r}); BYTES values cannot be null")
    return _element_error(label, index, f"is a {type(item).__name__}; {allowed}")


def _encoded(text, label, index):
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise _element_error(
            label, index, f"cannot be encoded as UTF-8 ({error.reason} at position {error.start})"
        ) from None


def _decoded(data, label, index):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _element_error(label, index, f"is not valid UTF-8 text ({error.reason} at byte {error.start})") from None


def _element_error(label, index, problem):
    """The error for one BYTES element that cannot be converted, named by tensor and position."""
    return TensorMappingError(f"Tensor {label}: element {index} {problem}")


def decode_text(items, label):
    """UTF-8 text of BYTES elements. The usual case (every element ``bytes``) is one C-level
    pass; anything else (``str``, ``bytearray``, invalid UTF-8) takes the per-element path,
    which gives the same values and names the failing element."""
    try:
        return list(map(bytes.decode, items))
    except (TypeError, UnicodeDecodeError):
        return [
            item if isinstance(item, str) else _decoded(bytes(item), label, index) for index, item in enumerate(items)
        ]


def as_bytes(item):
    return item.encode("utf-8") if isinstance(item, str) else bytes(item)
