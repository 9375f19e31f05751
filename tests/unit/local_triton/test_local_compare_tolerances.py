"""The comparator bites: pairs just inside and just outside each stated tolerance, per dtype.

The tolerances are read from :data:`mlflow_triton.local._compare.FLOAT_TOLERANCES`, the one source the
comparator uses and ``docs/test-oracles.md``'s table is generated from. "Just inside" is 0.9 of the
tolerance away from the expected value, "just outside" 1.1 of it: with the tolerances switched off
(exact comparison) the inside pairs fail, with them ten times looser the outside pairs pass.
Integers, booleans and text have no tolerance: one unit, one flip or one byte is a difference.
"""

import numpy as np
import pytest

from mlflow_triton.local._compare import FLOAT_TOLERANCES, compare

FLOATS = sorted(FLOAT_TOLERANCES)
# An expected value whose relative tolerance dwarfs the absolute one, and whose neighbours at
# 0.9 / 1.1 relative tolerances are distinct values of the dtype (float16 spacing at 1000 is 0.5).
LARGE = 1000.0


def equal(expected, actual, exact=False):
    return compare({"y": expected}, {"y": actual}, exact)["y"]["equal"]


def pair(dtype, want, gap):
    """(expected, actual) arrays of ``dtype`` whose elements are ``want`` and ``want + gap``, and the gap as stored."""
    expected = np.array([want], dtype=dtype)
    actual = np.array([want + gap], dtype=dtype)
    return expected, actual, float(actual[0].astype(np.float64) - expected[0].astype(np.float64))


def allowed(dtype, want):
    rtol, atol = FLOAT_TOLERANCES[dtype]
    return atol + rtol * abs(float(np.array(want, dtype=dtype)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sign", [1, -1])
def test_compare_finds_floats_equal_when_they_differ_by_just_under_the_relative_tolerance(dtype, sign):
    rtol, _ = FLOAT_TOLERANCES[dtype]
    expected, actual, gap = pair(dtype, sign * LARGE, sign * 0.9 * rtol * LARGE)
    assert 0.8 * allowed(dtype, sign * LARGE) < abs(gap) <= allowed(dtype, sign * LARGE)  # the pair is what it says

    assert equal(expected, actual) is True


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sign", [1, -1])
def test_compare_finds_floats_unequal_when_they_differ_by_just_over_the_relative_tolerance(dtype, sign):
    rtol, _ = FLOAT_TOLERANCES[dtype]
    expected, actual, gap = pair(dtype, sign * LARGE, sign * 1.1 * rtol * LARGE)
    assert allowed(dtype, sign * LARGE) < abs(gap) < 1.2 * allowed(dtype, sign * LARGE)

    assert equal(expected, actual) is False


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sign", [1, -1])
def test_compare_finds_floats_equal_when_they_differ_from_zero_by_just_under_the_absolute_tolerance(dtype, sign):
    _, atol = FLOAT_TOLERANCES[dtype]
    expected, actual, gap = pair(dtype, 0.0, sign * 0.9 * atol)
    assert 0.8 * atol < abs(gap) <= atol

    assert equal(expected, actual) is True


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sign", [1, -1])
def test_compare_finds_floats_unequal_when_they_differ_from_zero_by_just_over_the_absolute_tolerance(dtype, sign):
    _, atol = FLOAT_TOLERANCES[dtype]
    expected, actual, gap = pair(dtype, 0.0, sign * 1.1 * atol)
    assert atol < abs(gap) < 1.2 * atol

    assert equal(expected, actual) is False


def test_compare_scales_the_relative_tolerance_by_the_expected_value_when_the_answer_is_larger():
    """``|got - want| <= atol + rtol * |want|``: the expected value, not the answer, sets the scale.

    The window between the two readings is rtol**2 wide, too narrow for float16 and float32 values.
    """
    rtol, atol = FLOAT_TOLERANCES["float64"]
    want = LARGE
    expected, actual, stored = pair("float64", want, (atol + rtol * want) * (1 + rtol / 2))
    assert atol + rtol * want < stored <= atol + rtol * (want + stored)

    assert equal(expected, actual) is False


@pytest.mark.parametrize("dtype", FLOATS)
def test_compare_reports_the_tolerance_it_used_when_floats_differ(dtype):
    rtol, atol = FLOAT_TOLERANCES[dtype]
    expected, actual, gap = pair(dtype, LARGE, 2 * rtol * LARGE)

    result = compare({"y": expected}, {"y": actual})["y"]

    assert result["how"].startswith(f"1 of 1 element(s) differ (allclose rtol={rtol} atol={atol})")
    assert result["max_abs_diff"] == gap


@pytest.mark.parametrize("dtype", FLOATS)
def test_compare_finds_floats_unequal_bit_for_bit_when_they_differ_within_the_tolerance(dtype):
    rtol, _ = FLOAT_TOLERANCES[dtype]
    expected, actual, _ = pair(dtype, LARGE, 0.5 * rtol * LARGE)

    assert (equal(expected, actual), equal(expected, actual, exact=True)) == (True, False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_compare_finds_nan_equal_to_nan_and_unequal_to_any_number_when_a_float_output_holds_nan(dtype):
    expected = np.array([np.nan, 1.0], dtype=dtype)

    assert equal(expected, np.array([np.nan, 1.0], dtype=dtype)) is True
    assert equal(expected, np.array([np.nan, 1.0], dtype=dtype), exact=True) is True
    assert equal(expected, np.array([0.0, 1.0], dtype=dtype)) is False
    assert equal(np.array([0.0, 1.0], dtype=dtype), np.array([np.nan, 1.0], dtype=dtype)) is False
    assert equal(expected, np.array([np.inf, 1.0], dtype=dtype)) is False


@pytest.mark.parametrize("dtype", FLOATS)
def test_compare_finds_infinities_equal_only_to_the_same_infinity_when_a_float_output_holds_one(dtype):
    expected = np.array([np.inf, -np.inf], dtype=dtype)

    assert equal(expected, expected.copy()) is True
    assert equal(expected, expected[::-1].copy()) is False
    assert equal(expected, np.array([np.finfo(dtype).max, -np.inf], dtype=dtype)) is False


INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", INTEGERS)
def test_compare_finds_integers_unequal_when_the_largest_value_is_off_by_one(dtype):
    """Exact: the dtype's largest value against its neighbour (2**63 - 1 and 2**63 - 2 are one float64)."""
    largest = np.iinfo(dtype).max
    expected = np.array([largest, 0], dtype=dtype)

    assert equal(expected, expected.copy()) is True
    assert equal(expected, np.array([largest - 1, 0], dtype=dtype)) is False
    assert equal(expected, np.array([largest, 1], dtype=dtype)) is False


def test_compare_finds_booleans_unequal_when_one_flips():
    expected = np.array([True, False, True])

    assert equal(expected, expected.copy()) is True
    assert equal(expected, np.array([True, True, True])) is False
    assert equal(expected, np.array([False, False, True])) is False


@pytest.mark.parametrize(
    "want, got",
    [
        (b"yes", b"yes "),  # a trailing space
        (b"x\x00", b"x"),  # a trailing NUL (np.bytes_ would strip it)
        ("caf\u00e9", b"cafe"),  # an accent lost
        (b"\xff\xfe", b"\xff\xff"),  # raw bytes, one bit
        ("", b" "),
    ],
)
def test_compare_finds_text_unequal_when_one_byte_differs(want, got):
    expected = np.array([want, "same"], dtype=object)

    assert equal(expected, np.array([got, b"same"], dtype=object)) is False


@pytest.mark.parametrize("want", ["caf\u00e9", b"caf\xc3\xa9", "", b"x\x00"])
def test_compare_finds_text_equal_when_the_answer_holds_the_utf8_bytes_of_the_expected(want):
    as_bytes = want.encode("utf-8") if isinstance(want, str) else want

    assert equal(np.array([want], dtype=object), np.array([as_bytes], dtype=object)) is True
