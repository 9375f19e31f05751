"""runtime/conversions.py: a value is converted to the configured dtype only when it stays the same number.

The refused cases include every value change the audit saw on the real server (issue #17.1):
wrapped integers, uint64 -> int64 sign flips, float16 overflow, rounded integers, and object
predictions that were truncated, nulled or parsed.
"""

import re
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from mlflow_triton.runtime.conversions import TensorMappingError, to_bytes_items, to_numbers
from mlflow_triton.shared_contract import NUMPY_TO_TRITON


def convert(values, dtype, source_dtype=None):
    dtype = np.dtype(dtype)
    array = np.array(values, dtype=source_dtype) if source_dtype is not None else values
    return to_numbers(array, dtype, NUMPY_TO_TRITON[dtype.name], "`y`")


def objects(*items):
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


KEPT = [
    ([3, 1], "int64", "int32"),
    ([-(2**31), 2**31 - 1], "int64", "int32"),
    ([1, 255], "int64", "uint8"),
    ([2**63 - 1, 0], "uint64", "int64"),
    ([5, 7], "uint8", "int8"),
    ([2**53, -(2**53)], "int64", "float64"),
    ([2**60, 3], "int64", "float64"),  # a power of two is exact however large
    ([2**24, 7], "int32", "float32"),
    ([2048, -2048], "int64", "float16"),
    ([0.5, -0.25, np.inf, -np.inf, np.nan], "float64", "float32"),
    ([65504.0, -0.0], "float64", "float16"),
    ([1.5, 2.5], "float16", "float64"),
    ([True, False], "bool", "int32"),
    ([True, False], "bool", "float16"),
]


@pytest.mark.parametrize(("values", "source", "target"), KEPT, ids=lambda v: str(v))
def test_to_numbers_converts_when_every_value_stays_the_same(values, source, target):
    converted = convert(values, target, source)

    assert converted.dtype == np.dtype(target)
    original = np.array(values, dtype=source)
    if original.dtype.kind == "f":  # float64 holds every float exactly, NaN compares as NaN
        np.testing.assert_array_equal(converted.astype(np.float64), original.astype(np.float64))
    else:  # Python ints: exact however large
        assert [int(v) for v in converted.tolist()] == [int(v) for v in original.tolist()]


CHANGED = [
    ([3_000_000_000, 1], "int64", "int32", r"element 0 \(3000000000\) does not fit TYPE_INT32 \(int32\) unchanged"),
    ([1, -(2**31) - 1], "int64", "int32", r"element 1 \(-2147483649\) does not fit TYPE_INT32"),
    ([2**63, 1], "uint64", "int64", r"element 0 \(9223372036854775808\) does not fit TYPE_INT64"),
    ([1, -1], "int64", "uint32", r"element 1 \(-1\) does not fit TYPE_UINT32"),
    ([-25, 0, -64], "int64", "uint16", r"element 0 \(-25\) does not fit TYPE_UINT16"),  # the first, not the least
    ([7, 300, 1, 900], "int64", "uint8", r"element 1 \(300\) does not fit TYPE_UINT8"),
    ([5, 2**64 - 1, 2**63], "uint64", "int64", r"element 1 \(18446744073709551615\) does not fit TYPE_INT64"),
    ([1.0, 1e6], "float64", "float16", r"element 1 \(1000000\.0\) does not fit TYPE_FP16 \(float16\) unchanged"),
    ([0.1], "float64", "float32", r"element 0 \(0\.1\) does not fit TYPE_FP32"),
    ([2**53 + 1], "int64", "float64", r"element 0 \(9007199254740993\) does not fit TYPE_FP64"),
    ([1, 2**24 + 1], "int64", "float32", r"element 1 \(16777217\) does not fit TYPE_FP32"),
    ([2**64 - 1], "uint64", "float64", r"element 0 \(18446744073709551615\) does not fit TYPE_FP64"),
    ([2049], "int16", "float16", r"element 0 \(2049\) does not fit TYPE_FP16"),
]


@pytest.mark.parametrize(("values", "source", "target", "message"), CHANGED, ids=lambda v: str(v))
def test_to_numbers_raises_naming_element_and_value_when_a_value_would_change(values, source, target, message):
    with pytest.raises(TensorMappingError, match=r"^Tensor `y`: " + message):
        convert(values, target, source)


@pytest.mark.parametrize(
    ("values", "source", "target"),
    [
        ([1.0, 2.0], "float64", "int64"),
        ([0.7, 1.9], "float64", "int32"),
        ([1, 0], "int64", "bool"),
        ([1.0], "float32", "bool"),
        ([1 + 2j], "complex128", "float64"),
        (["1", "2"], "U1", "int64"),
        ([1, 2], "timedelta64[s]", "int64"),
    ],
    ids=str,
)
def test_to_numbers_raises_when_the_kind_would_change(values, source, target):
    target_name = NUMPY_TO_TRITON[np.dtype(target).name]

    with pytest.raises(
        TensorMappingError, match=re.escape(f"cannot convert {np.dtype(source)} values to {target_name}")
    ):
        convert(values, target, source)


OBJECT_KEPT = [
    (objects(1, np.int64(2)), "int32", [1, 2]),
    (objects(2**63, 1), "uint64", [2**63, 1]),
    (objects(-(2**63), 1), "int64", [-(2**63), 1]),
    (objects(True, 2), "int64", [1, 2]),
    (objects(True, np.bool_(False)), "bool", [True, False]),
    (objects(1, 0.5, np.float32(0.25)), "float64", [1.0, 0.5, 0.25]),
    (objects(2**53, float("nan")), "float64", [2.0**53, float("nan")]),
]


@pytest.mark.parametrize(("array", "target", "expected"), OBJECT_KEPT, ids=lambda v: str(v))
def test_to_numbers_reads_object_arrays_of_scalars_when_every_value_fits(array, target, expected):
    converted = convert(array, target)

    assert converted.dtype == np.dtype(target)
    np.testing.assert_array_equal(converted, np.array(expected, dtype=target))


OBJECT_REFUSED = [
    (objects(0.7, 1.9), "int64", r"cannot convert float values to TYPE_INT64 \(int64\)$"),
    (objects(2**40, 1), "int32", r"element 0 \(1099511627776\) does not fit TYPE_INT32 \(int32\) unchanged$"),
    (objects(True, None), "bool", r"element 1 is missing \(None\), not a number \(TYPE_BOOL expected\)$"),
    (objects("1", "2"), "int64", r"element 0 is a str, not a number \(TYPE_INT64 expected\)$"),
    (objects(1.5, pd.NA), "float64", r"element 1 is missing \(<NA>\), not a number"),
    (objects(Decimal("1.5")), "float64", r"element 0 is a Decimal, not a number"),
    (objects(2**64, 1), "uint64", r"element 0 \(18446744073709551616\) does not fit TYPE_UINT64"),
    (objects(-(2**63) - 1, 1), "int64", r"element 0 \(-9223372036854775809\) does not fit TYPE_INT64"),
    (objects(2**53 + 1, 0.5), "float64", r"element 0 \(9007199254740993\) does not fit TYPE_FP64"),
    (objects(0.5, 10**400), "float64", r"element 1 \(1000000000.*\) does not fit TYPE_FP64"),
    (objects(1, 0), "bool", r"cannot convert integer values to TYPE_BOOL"),
    (objects(np.int64(2**53 + 1), 0.5), "float64", r"element 0 \(9007199254740993\) does not fit TYPE_FP64"),
    (objects(np.uint64(2**64 - 1), 0.5), "float64", r"element 0 \(18446744073709551615\) does not fit TYPE_FP64"),
    (objects(np.timedelta64(5, "ns"), 1), "int64", r"element 0 is a timedelta64, not a number"),
    (objects(np.datetime64(5, "ns"), 1), "float64", r"element 0 is a datetime64, not a number"),
]


@pytest.mark.parametrize(("array", "target", "message"), OBJECT_REFUSED, ids=lambda v: str(v))
def test_to_numbers_raises_naming_the_element_when_an_object_array_holds_a_value_that_does_not_fit(
    array, target, message
):
    with pytest.raises(TensorMappingError, match=r"^Tensor `y`: " + message):
        convert(array, target)


def test_to_numbers_gives_the_configured_dtype_when_the_array_is_empty():
    assert convert(np.asarray([]), "int32").dtype == np.int32
    assert convert(objects(), "bool").dtype == np.bool_


def test_to_numbers_keeps_the_array_when_it_already_has_the_configured_dtype():
    array = np.array([1.5, np.nan], dtype=np.float32)

    assert convert(array, "float32") is array


@pytest.mark.parametrize(
    ("items", "content", "expected"),
    [
        (["名前", b"ok", np.str_("s"), np.bytes_(b"b")], "text", [b"\xe5\x90\x8d\xe5\x89\x8d", b"ok", b"s", b"b"]),
        ([b"\xff\x00", "ü", bytearray(b"x")], "binary", [b"\xff\x00", b"\xc3\xbc", b"x"]),
    ],
    ids=["text", "binary"],
)
def test_to_bytes_items_encodes_when_items_are_text_or_bytes(items, content, expected):
    assert to_bytes_items(items, content, "`y`") == expected


@pytest.mark.parametrize(
    ("items", "content", "message"),
    [
        ([b"ok", b"\xc3"], "text", r"element 1 is not valid UTF-8 text \(unexpected end of data at byte 0\)$"),
        (["a", 1], "text", r"element 1 is a int; text tensors take str or UTF-8 bytes$"),
        ([1.5], "binary", r"element 0 is a float; binary tensors take bytes or str$"),
        (["a", float("nan")], "text", r"element 1 is missing \(nan\); BYTES values cannot be null$"),
        ([pd.NA], "binary", r"element 0 is missing \(<NA>\); BYTES values cannot be null$"),
    ],
    ids=["invalid-utf8", "number-for-text", "number-for-binary", "nan", "pd-na"],
)
def test_to_bytes_items_raises_naming_the_element_when_an_item_is_not_text_or_bytes(items, content, message):
    with pytest.raises(TensorMappingError, match=r"^Tensor `y`: " + message):
        to_bytes_items(items, content, "`y`")
