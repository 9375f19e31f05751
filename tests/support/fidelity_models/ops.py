"""Named, deterministic operations on numpy arrays: what a generated model computes.

Each operation maps one input field (a DataFrame column, a tensor) to one output array. Element-wise
operations keep the shape; ``sum`` reduces every axis but the first. Every operation is defined for
every value of the kinds it accepts (no overflow errors, NaN and infinities pass through), so a
model built from them never fails on a valid input.

Kinds: ``bool``, numpy integer and float dtype names, ``text`` (``str`` elements in an object array),
``binary`` (``bytes`` elements in an object array) and nested rows (lists and dicts in an object array:
``echo``, ``length``, ``nonzero``, ``reverse`` and ``wrap`` take them).
"""

import numpy as np

NUMBER_KINDS = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
)
OBJECT_KINDS = ("text", "binary")


def _elements(values, function):
    result = np.empty(values.shape, dtype=object)
    for index, item in enumerate(values.flat):  # one by one: numpy would spread a list result over elements
        result.flat[index] = function(item)
    return result


def _echo(values):
    return values.copy()


def _flip(values):
    """bool: not; integers: bitwise not (never overflows); floats: negation; text/binary: reversed."""
    if values.dtype == object:
        return _elements(values, lambda item: item[::-1])
    if values.dtype.kind == "f":
        return -values
    return np.invert(values)


def _text(values):
    """Text for every element: numbers as Python's repr, text upper-cased, binary as hex."""
    if values.dtype == object:
        return _elements(values, lambda item: item.hex() if isinstance(item, bytes) else item.upper())
    return _elements(values, lambda item: repr(item.item()))


def _binary(values):
    """Bytes for every element, ending in a NUL byte: text as UTF-8, binary as is, numbers as raw bytes."""
    if values.dtype == object:
        return _elements(values, lambda item: (item.encode("utf-8") if isinstance(item, str) else item) + b"\x00")
    return _elements(values, lambda item: item.tobytes() + b"\x00")


def _reverse(values):
    """Nested rows: a list reversed, a dict with its keys in reverse order (values unchanged)."""
    return _elements(values, lambda item: dict(reversed(item.items())) if isinstance(item, dict) else item[::-1])


def _wrap(values):
    """Nested rows: ``{"size": len(row), "value": row}`` (an Object holding the row)."""
    return _elements(values, lambda item: {"size": len(item), "value": item})


def _nonzero(values):
    if values.dtype == object:
        return _elements(values, len).astype(np.int64) > 0
    return values != 0


def _length(values):
    return _elements(values, len).astype(np.int64)


def _wide(values):
    return values.astype(np.float64)


def _sum(values):
    """float64 sum over every axis but the first (numbers only)."""
    if values.ndim == 1:
        return _wide(values)
    rows = values.astype(np.float64).reshape(values.shape[0], int(np.prod(values.shape[1:])))  # also for 0 rows
    return rows.sum(axis=1)


OPERATIONS = {
    "echo": _echo,
    "flip": _flip,
    "text": _text,
    "binary": _binary,
    "nonzero": _nonzero,
    "length": _length,
    "wide": _wide,
    "sum": _sum,
    "reverse": _reverse,
    "wrap": _wrap,
}

# Which operations accept which input kinds.
ACCEPTS = {
    "echo": NUMBER_KINDS + OBJECT_KINDS,
    "flip": NUMBER_KINDS + OBJECT_KINDS,
    "text": NUMBER_KINDS + OBJECT_KINDS,
    "binary": NUMBER_KINDS + OBJECT_KINDS,
    "nonzero": NUMBER_KINDS + OBJECT_KINDS,
    "length": OBJECT_KINDS,
    "wide": NUMBER_KINDS,
    "sum": NUMBER_KINDS,
    "reverse": ("nested",),
    "wrap": ("nested",),
}


def apply(operation, values):
    """``operation`` on ``values`` (an ndarray)."""
    return OPERATIONS[operation](values)


def result_kind(operation, kind):
    """The kind ``operation`` produces from ``kind``."""
    if operation in ("echo", "flip", "reverse"):
        return kind
    return {
        "text": "text",
        "binary": "binary",
        "nonzero": "bool",
        "length": "int64",
        "wide": "float64",
        "sum": "float64",
    }[operation]
