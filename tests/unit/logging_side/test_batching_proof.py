"""``prove_row_independence``: batches against rows predicted alone, floats within the stated ulps."""

import pathlib
import re

import numpy as np
import pytest

from mlflow_triton._batching import MIN_DISTINCT_ROWS, ROW_INDEPENDENCE_ULPS, prove_row_independence
from mlflow_triton.errors import BatchingRefusedError

EXAMPLE = {
    "x": np.array([0.1, 2.5, -3.75, 1e-300, 7.0]),
    "name": np.array([b"a", b"b", b"c", b"d", b"e"], dtype=object),
}


def model(noise_ulps=0, rows_out=None, nan_at=None):
    """``predict_tensors`` answering ``x * 3`` and the names; batches of more than one row are off by ``noise_ulps``."""

    def predict_tensors(tensors):
        x = tensors["x"] * 3.0
        if len(x) > 1 and noise_ulps:
            x = x + noise_ulps * np.spacing(x)
        if nan_at is not None:
            x = np.where(tensors["x"] == nan_at, np.nan, x)
        if rows_out is not None:
            x = x[:rows_out]
        return {"score": x, "label": tensors["name"].copy()}

    return predict_tensors


def test_prove_row_independence_records_every_case_when_rows_are_independent():
    proof = prove_row_independence(model(), EXAMPLE)

    assert proof["proved"] is True
    assert proof["rows_predicted_alone"] == 5
    assert [(case["what"], case["rows"]) for case in proof["cases"]] == [
        ("the example as one batch", 5),
        ("the example shuffled", 5),
        ("the example repeated", 10),
        ("the example's first half", 2),
        ("the example's second half", 3),
    ]
    assert proof["largest_difference_ulps"] == {"score": 0.0, "label": 0.0}


@pytest.mark.parametrize("noise", [1, ROW_INDEPENDENCE_ULPS])
def test_prove_row_independence_accepts_float_differences_when_within_the_stated_ulps(noise):
    proof = prove_row_independence(model(noise_ulps=noise), EXAMPLE)

    assert proof["largest_difference_ulps"]["score"] == pytest.approx(noise, abs=0.5)


def test_prove_row_independence_refuses_naming_the_output_when_floats_differ_by_more_than_the_stated_ulps():
    with pytest.raises(
        BatchingRefusedError,
        match=re.escape(
            "Batching refused: output `score` differs for the example "
            "as one batch from the same rows predicted alone by"
        ),
    ):
        prove_row_independence(model(noise_ulps=ROW_INDEPENDENCE_ULPS + 4), EXAMPLE)


def test_prove_row_independence_accepts_nan_when_it_stands_at_the_same_rows():
    proof = prove_row_independence(model(nan_at=2.5), EXAMPLE)

    assert proof["largest_difference_ulps"]["score"] == 0.0


def test_prove_row_independence_refuses_naming_the_output_when_a_batch_answers_another_row_count():
    with pytest.raises(
        BatchingRefusedError,
        match=re.escape("Batching refused: output `score` has 1 row(s) for the example as one batch (5 rows)"),
    ):
        prove_row_independence(model(rows_out=1), EXAMPLE)


def test_prove_row_independence_refuses_naming_the_output_when_text_depends_on_the_batch():
    def predict_tensors(tensors):
        label = np.array([str(len(tensors["x"])).encode()] * len(tensors["x"]), dtype=object)
        return {"label": label}

    with pytest.raises(
        BatchingRefusedError,
        match=re.escape(
            "output `label` differs for the example as one batch "
            "from the same rows predicted alone (object values must "
            "be equal)"
        ),
    ):
        prove_row_independence(predict_tensors, EXAMPLE)


@pytest.mark.parametrize(
    "rows",
    [[0], [1, 1, 1, 1], [0, 3, 0, 3]],
    ids=["one-row", "copies-of-one-row", "two-distinct-rows"],
)
def test_prove_row_independence_refuses_with_the_remedy_when_the_example_has_fewer_distinct_rows_than_needed(rows):
    example = {name: array[rows] for name, array in EXAMPLE.items()}

    with pytest.raises(
        BatchingRefusedError,
        match=rf"the input example has {len(set(rows))} distinct row\(s\) \(of {len(rows)}\); .* needs at least "
        rf"{MIN_DISTINCT_ROWS}.* input_example with at least {MIN_DISTINCT_ROWS} distinct rows .* max_batch_size=0$",
    ):
        prove_row_independence(model(), example)


def test_prove_row_independence_records_the_distinct_rows_and_what_it_covers_when_it_proves():
    proof = prove_row_independence(model(), {name: array[[0, 1, 1, 2]] for name, array in EXAMPLE.items()})

    assert (proof["distinct_rows"], proof["min_distinct_rows"]) == (3, MIN_DISTINCT_ROWS)
    assert [case["rows"] for case in proof["cases"]] == [4, 4, 8, 2, 2]
    assert proof["covers"].startswith("the example's own rows")


def test_prove_row_independence_counts_rows_apart_when_they_differ_in_one_input_only():
    example = {"x": np.array([1.0, 1.0, 1.0]), "name": np.array([b"a", b"b", b"c"], dtype=object)}

    assert prove_row_independence(model(), example)["distinct_rows"] == 3


def centring(tensors):
    """A model whose rows interact: each ``x`` minus the batch's mean (alone, every row answers 0)."""
    return {"score": tensors["x"] - tensors["x"].mean()}


def test_prove_row_independence_refuses_a_model_that_centres_its_batch_when_the_example_has_three_rows():
    with pytest.raises(BatchingRefusedError, match="output `score` differs for the example as one batch"):
        prove_row_independence(centring, {"x": np.array([1.0, 5.0, 9.0])})


def test_docs_state_the_float_tolerance_the_proof_uses():
    text = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "batching.md").read_text(encoding="utf-8")

    assert f"`ROW_INDEPENDENCE_ULPS` = {ROW_INDEPENDENCE_ULPS} units in\nthe last place" in text


def binary_probabilities(ulps_off_in_a_batch):
    """``predict_tensors`` answering ``[1 - p, p]`` per row, as a binary ``predict_proba`` does; in a batch of more
    than one row ``p`` is off by ``ulps_off_in_a_batch`` ulps of itself (BLAS summing in another order)."""

    def predict_tensors(tensors):
        p = 1.0 / (1.0 + np.exp(-tensors["x"]))
        if len(p) > 1:
            p = p + ulps_off_in_a_batch * np.spacing(p)
        return {"proba": np.stack([1.0 - p, p], axis=1)}

    return predict_tensors


def test_prove_row_independence_measures_ulps_at_the_rows_scale_when_an_output_is_derived_from_another():
    # p = 0.886 off by one ulp of itself is 1 - p = 0.114 off by eight ulps of 0.114, one ulp of the row's scale
    example = {"x": np.array([2.05, -1.3, 0.4, 2.6])}

    proof = prove_row_independence(binary_probabilities(1), example)

    assert proof["largest_difference_ulps"]["proba"] <= 1.0


def test_prove_row_independence_refuses_when_a_derived_output_is_off_by_more_ulps_of_its_rows_scale():
    with pytest.raises(BatchingRefusedError, match="output `proba` differs for the example as one batch"):
        prove_row_independence(binary_probabilities(ROW_INDEPENDENCE_ULPS + 4), {"x": np.array([2.05, -1.3, 0.4])})


def test_docs_quote_the_refusal_of_an_example_with_too_few_distinct_rows():
    text = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "batching.md").read_text(encoding="utf-8")
    with pytest.raises(BatchingRefusedError) as refused:
        prove_row_independence(model(), {name: array[:1] for name, array in EXAMPLE.items()})

    quoted = " ".join(text.split(f"BatchingRefusedError: {str(refused.value)[:20]}")[1].split("```")[0].split())
    assert f"{str(refused.value)[:20]}{quoted}" == str(refused.value)


def widened_float32_scores(float32_ulps_off_in_a_batch):
    """``predict_tensors`` answering float32 scores widened to float64 (a Transformers pipeline's Python floats), in
    a batch of more than one row off by ``float32_ulps_off_in_a_batch`` float32 ulps (padding, another sum order)."""

    def predict_tensors(tensors):
        score = (1.0 / (1.0 + np.exp(-tensors["x"]))).astype(np.float32)
        if len(score) > 1:
            score = score + np.float32(float32_ulps_off_in_a_batch) * np.spacing(score)
        return {"score": score.astype(np.float64)}

    return predict_tensors


def test_prove_row_independence_measures_float32_ulps_when_a_float64_output_holds_widened_float32_values():
    example = {"x": np.array([2.05, -1.3, 0.4, 2.6])}

    proof = prove_row_independence(widened_float32_scores(1), example)

    assert proof["largest_difference_ulps"]["score"] == pytest.approx(1.0, abs=0.5)  # 2**29 float64 ulps


def test_prove_row_independence_refuses_widened_float32_values_off_by_more_float32_ulps_than_stated():
    with pytest.raises(BatchingRefusedError, match=r"output `score` differs .* by [0-9.]+ ulps"):
        prove_row_independence(widened_float32_scores(ROW_INDEPENDENCE_ULPS + 4), {"x": np.array([2.05, -1.3, 0.4])})


@pytest.mark.parametrize(
    ("expected", "got", "carried"),
    [
        (np.array([0.5, 0.25]), np.array([0.5, np.float32(0.25) + np.spacing(np.float32(0.25))]), "float32"),
        (np.array([0.1, 0.25]), np.array([0.1, 0.25]), "float64"),  # 0.1 is no float32 value
        (np.array([0.5, np.nan]), np.array([0.5 + 2**-40, np.nan]), "float64"),  # a float64 difference
        (np.array([0.5], dtype=np.float32), np.array([0.25], dtype=np.float32), "float32"),
        (np.array([1e39]), np.array([1e39]), "float64"),  # beyond float32's range
    ],
)
def test_carried_float_type_is_float32_only_when_float64_arrays_hold_float32_values_alone(expected, got, carried):
    from mlflow_triton._batching import carried_float_type

    assert carried_float_type(expected, got) == np.dtype(carried)
