"""``mlflow-triton check``'s comparator: Triton's answer against pyfunc.predict's, output by output."""

import json

import numpy as np
import pytest

from mlflow_triton.local.check import ValidationReport, _verdict
from mlflow_triton.local.compare import FLOAT_TOLERANCES, compare, differences

# The README's table ("compares: ... floats within rtol 1e-6 (FP64) / 1e-4 (FP32) / 1e-2 (FP16)").
README_RTOL = {"float64": 1e-6, "float32": 1e-4, "float16": 1e-2}
EXPECTED = {"output_0": np.array([[0.5, 1.5], [2.5, 3.5]], dtype=np.float32)}


def verdict(expected, actual):
    report = ValidationReport(model="models:/m/1", triton_version="2.51.0", request_form="json",
                              comparison=compare(expected, actual))
    return _verdict(report)


def test_float_tolerances_are_the_readmes_when_read():
    assert {name: rtol for name, (rtol, _) in FLOAT_TOLERANCES.items()} == README_RTOL


def test_compare_finds_every_output_equal_when_the_answer_is_the_expected_one():
    results = compare(EXPECTED, {"output_0": EXPECTED["output_0"].copy()})

    assert results == {"output_0": {"equal": True, "how": "allclose rtol=0.0001 atol=1e-06", "max_abs_diff": 0.0}}


def test_verdict_fails_naming_the_output_and_the_element_when_a_value_is_perturbed():
    perturbed = EXPECTED["output_0"].copy()
    perturbed[1, 0] += 1

    passed, reason = verdict(EXPECTED, {"output_0": perturbed})

    assert not passed
    assert reason == ("outputs differ from pyfunc.predict: output_0: 1 of 4 element(s) differ (allclose rtol=0.0001 "
                      "atol=1e-06), first at flat index 2: got 3.5, expected 2.5")


def test_verdict_fails_naming_both_dtypes_when_an_int_answers_a_float_output():
    passed, reason = verdict(EXPECTED, {"output_0": EXPECTED["output_0"].astype(np.int64)})

    assert not passed
    assert reason == "outputs differ from pyfunc.predict: output_0: dtype int64 != expected float32"


def test_verdict_fails_when_an_integer_output_is_answered_in_another_integer_dtype():
    expected = {"label": np.array([1, 2], dtype=np.int64)}

    passed, reason = verdict(expected, {"label": np.array([1, 2], dtype=np.int32)})

    assert (passed, reason) == (False, "outputs differ from pyfunc.predict: label: dtype int32 != expected int64")


@pytest.mark.parametrize("got, want", [(np.nan, 1.0), (1.0, np.nan), (np.inf, 1.0), (np.inf, -np.inf)])
def test_verdict_fails_with_a_finite_json_report_when_a_non_finite_value_meets_another_value(got, want):
    expected = {"output_0": np.array([want, 2.0])}

    comparison = compare(expected, {"output_0": np.array([got, 2.0])})

    assert comparison["output_0"]["equal"] is False
    assert comparison["output_0"]["max_abs_diff"] == 0.0
    assert "first at flat index 0" in comparison["output_0"]["how"]
    json.dumps(comparison, allow_nan=False)


def test_compare_treats_nan_at_the_same_positions_as_equal_when_both_hold_nan():
    expected = {"output_0": np.array([np.nan, 1.0, np.inf])}

    with np.errstate(all="raise"):
        comparison = compare(expected, {"output_0": np.array([np.nan, 1.0, np.inf])})

    assert comparison["output_0"] == {"equal": True, "how": "allclose rtol=1e-06 atol=1e-09", "max_abs_diff": 0.0}
    json.dumps(comparison, allow_nan=False)


def test_compare_treats_nan_at_other_positions_as_a_difference_when_both_hold_nan():
    comparison = compare({"y": np.array([np.nan, 1.0])}, {"y": np.array([1.0, np.nan])})

    assert comparison["y"]["equal"] is False


def test_compare_treats_negative_zero_as_zero_within_tolerance_but_not_bit_for_bit():
    expected, actual = {"y": np.array([-0.0])}, {"y": np.array([0.0])}

    assert (compare(expected, actual)["y"]["equal"], compare(expected, actual, exact=True)["y"]["equal"]) == (
        True, False)


def test_verdict_fails_when_an_output_is_missing_from_the_response():
    passed, reason = verdict(EXPECTED, {})

    assert (passed, reason) == (False, "outputs differ from pyfunc.predict: output_0: missing from the response")


def test_verdict_fails_naming_the_output_when_the_response_has_an_unconfigured_output():
    passed, reason = verdict(EXPECTED, {"output_0": EXPECTED["output_0"], "surplus": np.zeros(1)})

    assert (passed, reason) == (False, "outputs differ from pyfunc.predict: surplus: not a configured output: "
                                       "expected only ['output_0']")


def test_verdict_fails_when_the_shape_differs():
    passed, reason = verdict(EXPECTED, {"output_0": EXPECTED["output_0"].reshape(4)})

    assert (passed, reason) == (False, "outputs differ from pyfunc.predict: output_0: shape [4] != expected [2, 2]")


def test_compare_matches_text_outputs_as_utf8_bytes_when_the_expected_holds_str():
    expected = {"label": np.array(["ja", "nein"], dtype=object)}

    assert compare(expected, {"label": np.array([b"ja", b"nein"], dtype=object)})["label"]["equal"] is True
    assert compare(expected, {"label": np.array([b"ja", b"no"], dtype=object)})["label"]["how"] == (
        "1 of 2 element(s) differ (exact), first at flat index 1: got b'no', expected b'nein'")


def test_differences_lists_one_line_per_unequal_output_when_outputs_differ():
    expected = {"a": np.array([1], dtype=np.int64), "b": np.array([1.0])}

    assert differences(expected, {"a": np.array([1], dtype=np.int64), "b": np.array([1.5])}) == [
        "b: 1 of 1 element(s) differ (allclose rtol=1e-06 atol=1e-09), first at flat index 0: got 1.5, expected 1.0"]


def test_verdict_passes_saying_what_it_compared_when_every_output_is_equal():
    passed, reason = verdict(EXPECTED, {"output_0": EXPECTED["output_0"]})

    assert (passed, reason) == (True, "Triton 2.51.0 answered the shipped json request like pyfunc.predict "
                                      "(output_0)")
