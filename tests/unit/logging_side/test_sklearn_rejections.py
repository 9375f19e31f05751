"""``mlflow_triton.sklearn.log_model`` rejects bad arguments before anything is written or registered.

Every test runs against a real local tracking store and an empty TMPDIR, asserts
the message (it names the field and the allowed values), then asserts that the
native save never ran, no LoggedModel, registered model, version or artifact
exists and TMPDIR is empty.
"""

import functools
import re

import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema, TensorSpec

from mlflow_triton import sklearn
from mlflow_triton.errors import BatchingRefusedError, InvalidArgumentError, ValidationError

SAFE_NAME_RULE = (
    "allowed: ASCII letters, digits, '_', '-' and '.', not starting with '.' or '-' (no path separators, no '..')"
)
EMPTY_EXAMPLE = r"^input_example is required \(also with signature=\) and must not be empty"
GPU_FOR_SKLEARN = "device 'gpu' is not supported for sklearn models; supported: 'cpu'"
ARTIFACT_PATH = "artifact_path is not supported; use name= for the MLflow model name"
PROBABILITIES = Schema([TensorSpec(np.dtype("float64"), (-1, 2))])


@pytest.fixture
def log(tracking_store, workspace, fitted_pipeline, example_frame):
    """Call log_model with registration and predict_proba, overriding any argument; the typed mapping's refusals
    (``protocol="auto"`` asks MLflow's serving protocol next: tests/unit/logging_side/test_protocol_choice.py)."""

    def call(**overrides):
        arguments = {
            "input_example": example_frame,
            "registered_model_name": "rejected",
            "pyfunc_predict_fn": "predict_proba",
            "protocol": "tensors",
            **overrides,
        }
        return sklearn.log_model(fitted_pipeline, **arguments)

    return call


@pytest.fixture
def native_saves(monkeypatch):
    """Every call of mlflow.sklearn.save_model during the test (a rejection must come before the first)."""
    calls = []
    original = mlflow.sklearn.save_model

    @functools.wraps(original)
    def recording(*args, **kwargs):
        calls.append(kwargs.get("path"))
        return original(*args, **kwargs)

    monkeypatch.setattr(mlflow.sklearn, "save_model", recording)
    return calls


@pytest.fixture
def assert_untouched(tracking_store, workspace, native_saves):
    def check():
        assert native_saves == []
        assert list(workspace.iterdir()) == []
        tracking_store.assert_nothing_logged()

    return check


def _signature(*columns, outputs=PROBABILITIES):
    return ModelSignature(inputs=Schema([ColSpec(kind, name) for name, kind in columns]), outputs=outputs)


EXAMPLE_COLUMNS = (("age", "double"), ("city", "string"), ("visits", "long"))


@pytest.mark.parametrize(
    "example",
    [None, pd.DataFrame(), pd.DataFrame({"age": [], "city": [], "visits": []}), [], np.array([]), np.empty((0, 3)), {}],
    ids=[
        "None",
        "empty-DataFrame",
        "DataFrame-without-rows",
        "empty-list",
        "empty-ndarray",
        "ndarray-without-rows",
        "empty-dict",
    ],
)
def test_log_model_rejects_before_writing_when_input_example_is_missing_or_empty(log, assert_untouched, example):
    with pytest.raises(InvalidArgumentError, match=EMPTY_EXAMPLE):
        log(input_example=example)

    assert_untouched()


def test_log_model_rejects_before_writing_when_input_example_is_not_passed(
    tracking_store, workspace, fitted_pipeline, assert_untouched
):
    with pytest.raises(TypeError, match="input_example"):
        sklearn.log_model(fitted_pipeline, name="classifier")

    assert_untouched()


def test_log_model_rejects_before_writing_when_device_is_gpu_for_sklearn(log, assert_untouched):
    with pytest.raises(InvalidArgumentError, match=re.escape(GPU_FOR_SKLEARN)):
        log(device="gpu")

    assert_untouched()


@pytest.mark.parametrize("device", ["tpu", "GPU", "cuda:0", None])
def test_log_model_rejects_before_writing_when_device_is_unknown(log, assert_untouched, device):
    with pytest.raises(
        InvalidArgumentError, match=re.escape(f"device {device!r} is not supported; supported: cpu, gpu")
    ):
        log(device=device)

    assert_untouched()


@pytest.mark.parametrize("name", ["a/b", "..", "../x", "with space", "a\\b", ".hidden", "-dash", "x" * 129])
def test_log_model_rejects_before_writing_when_triton_model_name_is_unsafe(log, assert_untouched, name):
    expected = f"triton_model_name {name!r} is not a safe Triton model name; {SAFE_NAME_RULE}"
    if len(name) > 128:
        expected = "triton_model_name is 129 characters long; at most 128 allowed"

    with pytest.raises(InvalidArgumentError, match=re.escape(expected)):
        log(triton_model_name=name)

    assert_untouched()


@pytest.mark.parametrize("name", ["", 7])
def test_log_model_rejects_before_writing_when_triton_model_name_is_empty_or_not_text(log, assert_untouched, name):
    message = f"triton_model_name must be a non-empty string of ASCII letters, digits, '_', '-' and '.', got {name!r}"

    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        log(triton_model_name=name)

    assert_untouched()


def test_log_model_rejects_before_writing_when_a_native_option_is_unknown(log, assert_untouched):
    with pytest.raises(
        InvalidArgumentError,
        match=r"^Unknown option\(s\) bogus_option for mlflow\.sklearn\.save_model \(MLflow [^)]+\); accepted: "
        r"code_paths, .*pyfunc_predict_fn, .*serialization_format",
    ):
        log(bogus_option=1)

    assert_untouched()


def test_log_model_rejects_before_writing_when_artifact_path_is_given(log, assert_untouched):
    with pytest.raises(InvalidArgumentError, match=re.escape(ARTIFACT_PATH)):
        log(artifact_path="model")

    assert_untouched()


@pytest.mark.parametrize("option", ["path", "mlflow_model"])
def test_log_model_rejects_before_writing_when_a_managed_native_option_is_given(log, assert_untouched, option):
    with pytest.raises(InvalidArgumentError, match=rf"^Unknown option\(s\) {option} for mlflow\.sklearn\.save_model"):
        log(**{option: "x"})

    assert_untouched()


def test_log_model_rejects_before_writing_when_pyfunc_predict_fn_is_not_a_model_method(log, assert_untouched):
    with pytest.raises(
        InvalidArgumentError,
        match=re.escape(
            "pyfunc_predict_fn 'transform_nothing': the model has no such method; supported: predict, predict_proba"
        ),
    ):
        log(pyfunc_predict_fn="transform_nothing")

    assert_untouched()


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        (
            _signature(*EXAMPLE_COLUMNS, ("income", "double")),
            "The input example does not fit the signature's tensors: "
            "Column `income` is missing; columns: age, city, visits",
        ),
        (
            _signature(("age", "double"), ("city", "long"), ("visits", "long")),
            "The input example does not fit the signature's tensors: Tensor `city`: element 0 is a str, not a number "
            "(TYPE_INT64 expected)",
        ),
        (
            _signature(*EXAMPLE_COLUMNS, outputs=Schema([TensorSpec(np.dtype("float64"), (-1, 3))])),
            "The prediction does not fit the signature's output tensors: Tensor `output_0`: shape [3, 2] does not "
            "match configured dims [-1, 3]",
        ),
    ],
    ids=["column-missing-from-example", "column-of-wrong-type", "output-of-wrong-shape"],
)
def test_log_model_rejects_before_writing_when_explicit_signature_contradicts_the_example(
    log, assert_untouched, signature, message
):
    with pytest.raises(ValidationError, match=re.escape(message)):
        log(signature=signature)

    assert_untouched()


def test_log_model_rejects_before_writing_when_the_example_has_a_timezone_aware_datetime_column(
    log, assert_untouched, example_frame
):
    with pytest.raises(
        ValidationError,
        match=re.escape("Tensor `when`: element 0 is timezone-aware (UTC); MLflow's schema enforcement refuses"),
    ):
        log(input_example=example_frame.assign(when=pd.Timestamp("2024-01-01", tz="UTC")))

    assert_untouched()


def test_log_model_rejects_before_writing_when_an_optional_integer_column_misses_a_value(
    log, assert_untouched, example_frame
):
    with pytest.raises(ValidationError, match=re.escape("Tensor `count`: element 1 is missing (<NA>)")):
        log(input_example=example_frame.assign(count=pd.array([1, None] + [2] * (len(example_frame) - 2), "Int64")))

    assert_untouched()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"signature": {"inputs": []}},
            "signature must be an mlflow.models.ModelSignature, None (inferred from the example and its prediction) "
            "or False (none recorded), got dict",
        ),
        ({"validate_saved_model": "yes"}, "validate_saved_model must be True or False, got 'yes'"),
        ({"name": ""}, "name must be a non-empty string, got ''"),
        ({"tags": ["team"]}, "tags must be a dict or None, got list"),
        ({"params": "alpha=1"}, "params must be a dict or None, got str"),
        ({"metadata": 3}, "metadata must be a dict or None, got int"),
        (
            {"architecture_init_kwargs": {}},
            "architecture_init_kwargs is not supported for sklearn models; supported for: pytorch, transformers",
        ),
    ],
    ids=[
        "signature",
        "validate_saved_model",
        "name",
        "tags",
        "params",
        "metadata",
        "architecture_init_kwargs",
    ],
)
def test_log_model_rejects_before_writing_when_an_argument_has_the_wrong_type(
    log, assert_untouched, arguments, message
):
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        log(**arguments)

    assert_untouched()


# -- max_batch_size: refused before anything is written ---------------------------------------------


@pytest.mark.parametrize("value", [-1, True, 1.5, "8", None])
def test_log_model_rejects_before_writing_when_max_batch_size_is_not_a_count(log, assert_untouched, value):
    with pytest.raises(
        InvalidArgumentError,
        match=re.escape(
            f"max_batch_size must be an integer >= 0 (0: no batching; "
            f"N: Triton joins requests up to N rows), got {value!r}"
        ),
    ):
        log(max_batch_size=value)

    assert_untouched()


def test_log_model_rejects_before_writing_when_a_queue_delay_comes_without_batching(log, assert_untouched):
    with pytest.raises(InvalidArgumentError, match="max_queue_delay_microseconds needs batching: pass max_batch_size"):
        log(max_queue_delay_microseconds=100)

    assert_untouched()


@pytest.mark.parametrize("value", [-1, True, 0.5])
def test_log_model_rejects_before_writing_when_the_queue_delay_is_not_a_count(log, assert_untouched, value):
    with pytest.raises(
        InvalidArgumentError,
        match=re.escape(f"max_queue_delay_microseconds must be an integer >= 0 or None, got {value!r}"),
    ):
        log(max_batch_size=8, max_queue_delay_microseconds=value)

    assert_untouched()


def test_log_model_refuses_batching_naming_the_tensor_when_an_output_has_no_row_axis(log, assert_untouched):
    fixed_rows = _signature(*EXAMPLE_COLUMNS, outputs=Schema([TensorSpec(np.dtype("float64"), (3, 2))]))

    with pytest.raises(
        BatchingRefusedError,
        match=re.escape(
            "max_batch_size=8: output tensor `output_0` has shape [3, 2]; batching needs a variable first (row) axis"
        ),
    ):
        log(max_batch_size=8, signature=fixed_rows)

    assert_untouched()


def test_log_model_refuses_batching_when_the_example_has_more_rows_than_max_batch_size(log, assert_untouched):
    with pytest.raises(BatchingRefusedError, match=re.escape("max_batch_size=2: the input example has 3 rows")):
        log(max_batch_size=2)

    assert_untouched()


class _CentredOverTheBatch:
    """A model whose answer for a row depends on the other rows of its batch (it subtracts the batch mean)."""

    def predict(self, frame):
        return frame["age"].to_numpy() - frame["age"].mean()


class _RankInTheBatch:
    """An integer answer that depends on the batch: each row's rank among the rows predicted together."""

    def predict(self, frame):
        return frame["age"].rank(method="first").to_numpy().astype(np.int64)


def test_log_model_refuses_batching_naming_the_output_and_the_difference_when_floats_depend_on_the_batch(
    tracking_store, workspace, native_saves, example_frame, assert_untouched
):
    with pytest.raises(
        BatchingRefusedError,
        match=r"Batching refused: output `output_0` differs for the example as "
        r"one batch from the same rows predicted alone by [0-9.e+]+ ulps \("
        r"largest difference 0\.0 vs -12\.83[0-9]+; allowed: 4 ulps\)",
    ):
        sklearn.log_model(_CentredOverTheBatch(), input_example=example_frame, max_batch_size=8)

    assert_untouched()


def test_log_model_refuses_batching_naming_the_output_when_integers_depend_on_the_batch(
    tracking_store, workspace, native_saves, example_frame, assert_untouched
):
    with pytest.raises(
        BatchingRefusedError,
        match=re.escape(
            "Batching refused: output `output_0` differs for the "
            "example as one batch from the same rows predicted alone "
            "(int64 values must be equal)"
        ),
    ):
        sklearn.log_model(_RankInTheBatch(), input_example=example_frame, max_batch_size=8)

    assert_untouched()
