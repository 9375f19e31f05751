"""``mlflow-triton check``'s comparator: Triton's answer against pyfunc.predict's, output by output."""

import json
from pathlib import Path

import numpy as np
import pytest

from mlflow_triton.local._compare import compare, differences, expected_outputs, predict_outputs
from mlflow_triton.local.check import ValidationReport, _verdict
from tests.support import tolerance_table

DOCS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "test-oracles.md"
EXPECTED = {"output_0": np.array([[0.5, 1.5], [2.5, 3.5]], dtype=np.float32)}


def verdict(expected, actual):
    report = ValidationReport(
        model="models:/m/1", triton_version="2.51.0", request_form="json", comparison=compare(expected, actual)
    )
    return _verdict(report)


def test_docs_tolerance_table_is_the_one_generated_from_float_tolerances_when_read():
    """``docs/test-oracles.md`` states the tolerances; regenerate with ``python -m tests.support.tolerance_table``."""
    assert tolerance_table.current_block(DOCS_PAGE.read_text(encoding="utf-8")) == tolerance_table.block()


def test_compare_finds_every_output_equal_when_the_answer_is_the_expected_one():
    results = compare(EXPECTED, {"output_0": EXPECTED["output_0"].copy()})

    assert results == {"output_0": {"equal": True, "how": "allclose rtol=0.0001 atol=1e-06", "max_abs_diff": 0.0}}


def test_verdict_fails_naming_the_output_and_the_element_when_a_value_is_perturbed():
    perturbed = EXPECTED["output_0"].copy()
    perturbed[1, 0] += 1

    passed, reason = verdict(EXPECTED, {"output_0": perturbed})

    assert not passed
    assert reason == (
        "outputs differ from pyfunc.predict: output_0: 1 of 4 element(s) differ (allclose rtol=0.0001 "
        "atol=1e-06), first at flat index 2: got 3.5, expected 2.5"
    )


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
        True,
        False,
    )


def test_verdict_fails_when_an_output_is_missing_from_the_response():
    passed, reason = verdict(EXPECTED, {})

    assert (passed, reason) == (False, "outputs differ from pyfunc.predict: output_0: missing from the response")


def test_verdict_fails_naming_the_output_when_the_response_has_an_unconfigured_output():
    passed, reason = verdict(EXPECTED, {"output_0": EXPECTED["output_0"], "surplus": np.zeros(1)})

    assert (passed, reason) == (
        False,
        "outputs differ from pyfunc.predict: surplus: not a configured output: expected only ['output_0']",
    )


def test_verdict_fails_when_the_shape_differs():
    passed, reason = verdict(EXPECTED, {"output_0": EXPECTED["output_0"].reshape(4)})

    assert (passed, reason) == (False, "outputs differ from pyfunc.predict: output_0: shape [4] != expected [2, 2]")


def test_compare_matches_text_outputs_as_utf8_bytes_when_the_expected_holds_str():
    expected = {"label": np.array(["ja", "nein"], dtype=object)}

    assert compare(expected, {"label": np.array([b"ja", b"nein"], dtype=object)})["label"]["equal"] is True
    assert compare(expected, {"label": np.array([b"ja", b"no"], dtype=object)})["label"]["how"] == (
        "1 of 2 element(s) differ (exact), first at flat index 1: got b'no', expected b'nein'"
    )


def test_differences_lists_one_line_per_unequal_output_when_outputs_differ():
    expected = {"a": np.array([1], dtype=np.int64), "b": np.array([1.0])}

    assert differences(expected, {"a": np.array([1], dtype=np.int64), "b": np.array([1.5])}) == [
        "b: 1 of 1 element(s) differ (allclose rtol=1e-06 atol=1e-09), first at flat index 0: got 1.5, expected 1.0"
    ]


def test_verdict_passes_saying_what_it_compared_when_every_output_is_equal():
    passed, reason = verdict(EXPECTED, {"output_0": EXPECTED["output_0"]})

    assert (passed, reason) == (True, "Triton 2.51.0 answered the shipped json request like pyfunc.predict (output_0)")


@pytest.mark.parametrize("got, gap", [(2.5, 0.5), (0.5, 1.5), (-2.0, 4.0)])
def test_compare_reports_the_largest_absolute_difference_when_the_second_element_differs(got, gap):
    result = compare({"y": np.array([1.0, 2.0])}, {"y": np.array([1.0, got])})["y"]

    assert (result["equal"], result["max_abs_diff"]) == (False, gap)
    assert result["how"].endswith(f"first at flat index 1: got {got}, expected 2.0")


@pytest.mark.parametrize(
    "got",
    [np.array([1.0]), np.array([1.0, 1.0]), np.array([[1.0, 1.0, 1.0]])],
    ids=["broadcastable", "shorter", "one-more-axis"],
)
def test_verdict_fails_naming_both_shapes_when_the_answer_has_another_shape_numpy_could_broadcast(got):
    passed, reason = verdict({"y": np.array([1.0, 1.0, 1.0])}, {"y": got})

    assert (passed, reason) == (
        False,
        f"outputs differ from pyfunc.predict: y: shape {list(got.shape)} != expected [3]",
    )


@pytest.mark.parametrize(
    "size, shown", [(57, repr(b"x" * 57)), (58, repr(b"x" * 58)[:57] + "...")], ids=["60-characters", "61-characters"]
)
def test_compare_shows_an_element_whole_up_to_60_characters_and_cut_to_57_and_dots_beyond_when_text_differs(
    size, shown
):
    how = compare({"t": np.array([b"x" * size], dtype=object)}, {"t": np.array([b"y"], dtype=object)})["t"]["how"]

    assert how.endswith(f"expected {shown}")


def test_predict_outputs_and_expected_outputs_encode_pyfunc_predict_like_arrays_built_in_numpy_when_a_pipeline_is_saved(
    tmp_path,
):
    """The product's own expectation (``check``) against the prediction written out by hand."""
    import mlflow.pyfunc

    from examples.sklearn_example import fitted_pipeline
    from mlflow_triton import sklearn as triton_sklearn

    pipeline, frame = fitted_pipeline()
    package = tmp_path / "package"
    triton_sklearn.save_model(
        pipeline,
        package,
        input_example=frame.iloc[:3],
        pyfunc_predict_fn="predict_proba",
        serialization_format="cloudpickle",
        triton_model_name="m",
    )
    model_dir = package / "model_repository" / "m"
    by_hand = {"output_0": np.asarray(pipeline.predict_proba(frame.iloc[:3]), dtype=np.float64)}

    from_example = expected_outputs(package, model_dir)
    from_frame = predict_outputs(mlflow.pyfunc.load_model(str(package)), frame.iloc[1:3], model_dir)

    assert sorted(from_example) == ["output_0"]
    assert (from_example["output_0"].dtype, from_example["output_0"].shape) == (np.float64, (3, 2))
    np.testing.assert_array_equal(from_example["output_0"], by_hand["output_0"])
    np.testing.assert_array_equal(from_frame["output_0"], by_hand["output_0"][1:3])


@pytest.mark.parametrize(
    "want, got",
    [(2.0, 1.0), (1.0, 2.0), (0.0, -0.0), (np.nan, 1.0), (1.0, np.nan), (np.inf, np.nan)],
    ids=["smaller", "larger", "negative-zero-answer", "nan-expected", "nan-answered", "inf-nan"],
)
def test_compare_finds_floats_unequal_bit_for_bit_when_one_element_differs_in_any_way(want, got):
    expected, actual = np.array([want, 5.0]), np.array([got, 5.0])

    assert compare({"y": expected}, {"y": actual}, exact=True)["y"]["equal"] is False


def test_compare_reports_a_largest_difference_of_zero_when_no_element_is_finite_on_both_sides():
    result = compare({"y": np.array([np.nan, np.inf])}, {"y": np.array([np.nan, np.inf])})["y"]

    assert (result["equal"], result["max_abs_diff"]) == (True, 0.0)


def test_compare_names_the_first_of_several_differing_elements_when_outputs_differ():
    how = compare({"y": np.array([1, 2, 3], dtype=np.int64)}, {"y": np.array([1, 7, 9], dtype=np.int64)})["y"]["how"]

    assert how == "2 of 3 element(s) differ (exact), first at flat index 1: got 7, expected 2"


def test_compare_counts_and_names_the_only_differing_element_when_floats_are_compared_bit_for_bit():
    how = compare({"y": np.array([5.0, 1.0, 7.0])}, {"y": np.array([5.0, 2.0, 7.0])}, exact=True)["y"]["how"]

    assert how == (
        "1 of 3 element(s) differ (bit for bit (NaN equal to NaN)), first at flat index 1: got 2.0, expected 1.0"
    )


def test_compare_finds_outputs_equal_when_their_dtypes_are_equal_but_distinct_objects():
    """A dtype carrying metadata equals the plain one: the comparison is by dtype equality, not identity."""
    tagged = np.dtype(np.float64, metadata={"source": "decoder"})
    assert tagged == np.dtype(np.float64) and tagged is not np.dtype(np.float64)

    assert compare({"y": np.array([1.5])}, {"y": np.array([1.5], dtype=tagged)})["y"]["equal"] is True


# --- fields MLflow fills afresh on every call (its LLM tasks' id and created) ---------------------

ANSWERED_AT = 1_800_000_000
PER_CALL = {
    "id": np.array([b"0b6e1c1e-4d5f-4c3a-9a0e-3f7d2b9c8a11", b"5a1f7c2e-8b3d-4e6f-a1b2-c3d4e5f60718"], dtype=object),
    "created": np.array([ANSWERED_AT, ANSWERED_AT], dtype=np.int64),
    "model": np.array([b"", b""], dtype=object),
}
VOLATILE = {"id": "a fresh UUID per row", "created": "the time of the call, in epoch seconds"}


def test_compare_checks_per_call_fields_by_what_they_must_be_when_named_volatile():
    answer = {
        "id": np.array(
            [b"9c8a7b6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d", b"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"], dtype=object
        ),
        "created": np.array([ANSWERED_AT + 7, ANSWERED_AT + 7], dtype=np.int64),
        "model": PER_CALL["model"].copy(),
    }

    results = compare(PER_CALL, answer, volatile=VOLATILE)

    assert all(result["equal"] for result in results.values()), results
    assert results["id"]["how"] == "volatile (a fresh UUID per row): checked as such, not by value"
    assert not all(result["equal"] for result in compare(PER_CALL, answer).values())  # by value they differ


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "id",
            np.array([b"not-a-uuid", b"5a1f7c2e-8b3d-4e6f-a1b2-c3d4e5f60718"], dtype=object),
            "element 0 is not one",
        ),
        (
            "created",
            np.array([ANSWERED_AT, ANSWERED_AT - 7200], dtype=np.int64),
            "element 1 is not one (got 1799992800)",
        ),
        ("created", np.array([ANSWERED_AT], dtype=np.int64), "shape [1] != expected [2]"),
    ],
)
def test_compare_fails_a_volatile_field_that_is_not_what_mlflow_fills_in(field, value, message):
    answer = {**PER_CALL, field: value}

    [problem] = differences(PER_CALL, answer, volatile=VOLATILE)

    assert problem.startswith(f"{field}: ") and message in problem


@pytest.mark.parametrize(("got", "equal"), [(b"ticket-7", True), ("ticket-7", True), (b"ticket-8", False)])
def test_compare_checks_an_id_by_value_where_the_oracles_is_not_a_uuid(got, equal):
    want = {"id": np.array(["ticket-7"], dtype=object)}  # a ChatModel's own fixed id, not one drawn per call

    [result] = compare(want, {"id": np.array([got], dtype=object)}, volatile={"id": "a fresh UUID per row"}).values()

    assert result["equal"] is equal, result


def test_verdict_names_the_fields_checked_as_filled_per_call():
    report = ValidationReport(
        model="models:/m/1",
        triton_version="2.51.0",
        request_form="json",
        comparison=compare(PER_CALL, {k: v.copy() for k, v in PER_CALL.items()}, volatile=VOLATILE),
    )

    passed, reason = _verdict(report)

    assert passed
    assert reason.endswith("(created, id, model; created, id: filled by MLflow on every call, checked as such)")
