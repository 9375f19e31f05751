"""``max_batch_size=N`` at logging: the batched repository, its proof record, and the default left as it was."""

import json
import pathlib
import re
import warnings

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from google.protobuf import json_format, text_format
from mlflow.models import Model
from tritonclient.grpc import model_config_pb2

from mlflow_triton import sklearn
from mlflow_triton._batching import MIN_DISTINCT_ROWS, ROW_INDEPENDENCE_ULPS, ZERO_ROW_REQUESTS
from mlflow_triton.errors import BatchingRefusedError, BatchingWarning, InvalidArgumentError
from mlflow_triton.local._compare import predict_outputs
from mlflow_triton.local.user_input import input_request
from mlflow_triton.repository.guard import files_directory, served_directories
from tests.support import fake_pb_utils


@pytest.fixture(scope="module")
def batched(tmp_path_factory, fitted_pipeline, training_frame):
    """The repository of the tiny Pipeline saved with ``max_batch_size=8``, and the saved package's path."""
    path = tmp_path_factory.mktemp("batched") / "classifier"
    sklearn.save_model(
        fitted_pipeline,
        path,
        input_example=training_frame.iloc[:3],
        pyfunc_predict_fn="predict_proba",
        serialization_format="cloudpickle",
        max_batch_size=8,
        max_queue_delay_microseconds=200,
    )
    return files_directory(path / "model_repository" / "classifier"), path


def _config(repository):
    return text_format.Parse((repository / "config.pbtxt").read_text(encoding="utf-8"), model_config_pb2.ModelConfig())


def _model_py(repository):
    """The generated model.py, initialized from config.pbtxt the way Triton passes it."""
    return fake_pb_utils.initialized_model(repository, name="batched_sklearn_model_py")


def _as_model_sees(arrays, config):
    """Each input's ``reshape`` applied as Triton's core applies it (``fake_pb_utils.as_handed``)."""
    as_json = json_format.MessageToDict(config, preserving_proto_field_name=True)
    return fake_pb_utils.as_handed(as_json, arrays)


def test_save_model_writes_a_batched_config_when_max_batch_size_is_given(batched):
    repository, _ = batched
    config = _config(repository)

    assert config.max_batch_size == 8
    assert config.dynamic_batching.max_queue_delay_microseconds == 200
    # no input reshaped to [] (a 0-row request then stops Triton 2.51): [1], so the model sees [rows, 1]
    assert [(t.name, list(t.dims), list(t.reshape.shape)) for t in config.input] == [
        ("age", [1], [1]),
        ("city", [1], [1]),
        ("visits", [1], [1]),
    ]
    assert [(t.name, list(t.dims)) for t in config.output] == [("output_0", [2])]
    contract = json.loads(config.parameters["mlflow_contract"].string_value)
    assert (contract["version"], contract["max_batch_size"]) == (3, 8)


def test_save_model_ships_the_request_in_batched_shapes_when_max_batch_size_is_given(batched, read_request):
    repository, _ = batched

    body, _ = read_request(repository)

    assert [(entry["name"], entry["shape"]) for entry in body["inputs"]] == [
        ("age", [3, 1]),
        ("city", [3, 1]),
        ("visits", [3, 1]),
    ]


def test_save_model_records_the_row_independence_proof_in_validation_json_when_batched(batched):
    repository, path = batched

    report = json.loads((repository / "validation.json").read_text(encoding="utf-8"))

    proof = report["batching"]["row_independence"]
    assert report["batching"]["max_batch_size"] == 8
    assert report["mapping_version"] == 3
    assert proof["proved"] is True
    assert proof["float_tolerance_ulps"] == ROW_INDEPENDENCE_ULPS
    assert [case["what"] for case in proof["cases"]] == [
        "the example as one batch",
        "the example shuffled",
        "the example repeated",
        "the example's first half",
        "the example's second half",
    ]
    assert set(proof["largest_difference_ulps"]) == {"output_0"}
    assert Model.load(str(path)).flavors["triton"]["mapping_version"] == 3


def test_save_model_records_in_validation_json_that_a_0_row_request_is_refused_when_batched(batched):
    repository, path = batched

    report = json.loads((repository / "validation.json").read_text(encoding="utf-8"))

    assert "zero_row_guard" not in report["batching"]
    assert report["batching"]["zero_row_requests"] == ZERO_ROW_REQUESTS
    assert repository == path / "model_repository" / "classifier"
    assert served_directories(repository) == (repository,)


@pytest.mark.parametrize("zero_row_guard", [True, False])
def test_save_model_writes_one_model_directory_without_warning_whatever_zero_row_guard_says(
    tmp_path, fitted_pipeline, training_frame, zero_row_guard
):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        sklearn.save_model(
            fitted_pipeline,
            tmp_path / "m",
            input_example=training_frame.iloc[:3],
            max_batch_size=4,
            zero_row_guard=zero_row_guard,
        )

    assert not [w for w in record if issubclass(w.category, BatchingWarning)]
    repository = tmp_path / "m" / "model_repository"
    assert sorted(p.name for p in repository.iterdir()) == ["m"]
    assert "batched_model_name" not in Model.load(str(tmp_path / "m")).flavors["triton"]


def test_save_model_refuses_a_zero_row_guard_that_is_not_a_bool_and_writes_nothing(
    tmp_path, fitted_pipeline, training_frame
):
    with pytest.raises(InvalidArgumentError, match=r"zero_row_guard must be True or False .*, got 'no'"):
        sklearn.save_model(
            fitted_pipeline,
            tmp_path / "m",
            input_example=training_frame.iloc[:3],
            max_batch_size=4,
            zero_row_guard="no",
        )
    assert not (tmp_path / "m").exists()


def test_save_model_does_not_warn_about_0_row_requests_without_batching(tmp_path, fitted_pipeline, training_frame):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        sklearn.save_model(fitted_pipeline, tmp_path / "m", input_example=training_frame.iloc[:3])

    assert not [w for w in record if issubclass(w.category, BatchingWarning)]
    report = json.loads((tmp_path / "m" / "model_repository" / "m" / "validation.json").read_text(encoding="utf-8"))
    assert "batching" not in report


def test_docs_quote_the_0_row_limit_as_logging_warns_it():
    text = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "batching.md").read_text(encoding="utf-8")

    quoted = text.split("<!-- zero-row-requests -->\n> ")[1].split("\n")[0]
    assert quoted == ZERO_ROW_REQUESTS


class _CountingPredictor:
    def __init__(self, predictor):
        self.predictor = predictor
        self.rows = []

    def predict(self, model_input):
        self.rows.append(len(model_input))
        return self.predictor.predict(model_input)


def test_generated_model_py_answers_joined_requests_like_pyfunc_predict_of_each_alone(batched, training_frame):
    repository, path = batched
    config = _config(repository)
    model = _model_py(repository)
    model.predictor = counting = _CountingPredictor(model.predictor)
    pyfunc = mlflow.pyfunc.load_model(str(path))
    frames = [training_frame.iloc[0:1], training_frame.iloc[1:5], training_frame.iloc[5:7]]
    requests = [
        fake_pb_utils.request_from_arrays(
            _as_model_sees(
                {
                    "age": f["age"].to_numpy().reshape(-1, 1),
                    "city": np.array([c.encode() for c in f["city"]], dtype=object).reshape(-1, 1),
                    "visits": f["visits"].to_numpy().reshape(-1, 1),
                },
                config,
            )
        )
        for f in frames
    ]
    answers = model.execute(requests)

    assert counting.rows == [7]
    for answer, alone in zip(answers, frames):
        np.testing.assert_array_equal(fake_pb_utils.outputs_of(answer)["output_0"], pyfunc.predict(alone))


def test_save_model_writes_the_same_repository_when_max_batch_size_is_zero_or_absent(
    tmp_path, fitted_pipeline, example_frame
):
    kwargs = {"input_example": example_frame, "serialization_format": "cloudpickle"}
    sklearn.save_model(fitted_pipeline, tmp_path / "plain", **kwargs)
    sklearn.save_model(fitted_pipeline, tmp_path / "zero", max_batch_size=0, triton_model_name="plain", **kwargs)

    for name in ("config.pbtxt", "request.json"):
        plain = (tmp_path / "plain" / "model_repository" / "plain" / name).read_bytes()
        assert plain == (tmp_path / "zero" / "model_repository" / "plain" / name).read_bytes()
    config = (tmp_path / "plain" / "model_repository" / "plain" / "config.pbtxt").read_text(encoding="utf-8")
    assert "max_batch_size: 0\n" in config
    assert "dynamic_batching" not in config and "reshape" not in config
    assert '\\"version\\":2' in config
    report = json.loads((tmp_path / "plain" / "model_repository" / "plain" / "validation.json").read_text())
    assert "batching" not in report


def test_check_expects_and_sends_rank_one_tensors_as_rows_by_one_when_the_repository_is_batched(
    tmp_path, fitted_pipeline, training_frame
):
    path = tmp_path / "labels"
    sklearn.save_model(
        fitted_pipeline,
        path,
        input_example=training_frame.iloc[:3],
        serialization_format="cloudpickle",
        max_batch_size=4,
    )
    repository = files_directory(path / "model_repository" / "labels")
    frame = training_frame.iloc[2:6]

    expected = predict_outputs(mlflow.pyfunc.load_model(str(path)), frame, repository)
    request = input_request(frame, repository, tmp_path / "requests")

    np.testing.assert_array_equal(expected["output_0"], fitted_pipeline.predict(frame).reshape(4, 1))
    body = json.loads(request.body_path.read_text(encoding="utf-8"))
    assert [(entry["name"], entry["shape"]) for entry in body["inputs"]] == [
        ("age", [4, 1]),
        ("city", [4, 1]),
        ("visits", [4, 1]),
    ]


def test_pytorch_save_model_batches_a_tensor_model_and_joins_its_requests_when_max_batch_size_is_given(tmp_path):
    from mlflow_triton import pytorch as mt_pytorch
    from tests.support import tiny_models

    path = tmp_path / "mlp"
    mt_pytorch.save_model(
        tiny_models.shared_tiny_mlp(),
        path,
        input_example=tiny_models.mlp_example(3),
        code_paths=[str(tiny_models.CUSTOM_NET_DIR)],
        max_batch_size=16,
    )
    repository = files_directory(path / "model_repository" / "mlp")
    config = _config(repository)
    model = _model_py(repository)
    model.predictor = counting = _CountingPredictor(model.predictor)
    pyfunc = mlflow.pyfunc.load_model(str(path))
    first, second = tiny_models.mlp_example(1), tiny_models.mlp_example(4)

    answers = model.execute(
        [fake_pb_utils.request_from_arrays(_as_model_sees({config.input[0].name: x}, config)) for x in (first, second)]
    )

    assert (config.max_batch_size, list(config.input[0].dims), list(config.output[0].dims)) == (16, [4], [3])
    assert list(config.input[0].reshape.shape) == [1, 4]  # seen as [rows, 1, 4]
    assert counting.rows == [5]
    for answer, alone in zip(answers, (first, second)):
        np.testing.assert_array_max_ulp(
            fake_pb_utils.outputs_of(answer)[config.output[0].name], pyfunc.predict(alone), maxulp=ROW_INDEPENDENCE_ULPS
        )


# Texts of 1, 6 and 2 words: a pipeline that pads its batch pads the first and the third.
_TEXTS_OF_DIFFERENT_LENGTHS = ["hello", "the model serves text example input", "tiny network"]


@pytest.mark.parametrize(
    ("options", "where"),
    [
        ({"model_config": {"batch_size": 8}}, "model_config has batch_size=8"),
        (
            {"input_example": (_TEXTS_OF_DIFFERENT_LENGTHS, {"batch_size": 1})},
            "the params schema declares batch_size",
        ),
    ],
    ids=["model_config", "params"],
)
def test_transformers_save_model_refuses_batching_and_writes_nothing_when_the_pipeline_would_pad_a_joined_batch(
    tmp_path, options, where
):
    # MLflow's wrapper calls the pipeline with its model_config, overridden by a request's params: a batch_size there
    # pads the texts of a joined batch to one length, which the proof cannot rule out from any example
    from mlflow_triton import transformers as mt_transformers
    from tests.support import tiny_models

    options = {"input_example": _TEXTS_OF_DIFFERENT_LENGTHS, **options}
    with pytest.raises(BatchingRefusedError) as refused:
        mt_transformers.save_model(
            tiny_models.shared_text_classification_pipeline(), tmp_path / "classifier", max_batch_size=8, **options
        )

    assert str(refused.value).startswith(f"Batching refused: {where}, so the pipeline pads the texts")
    assert str(refused.value).endswith("or with max_batch_size=0")
    assert list(tmp_path.iterdir()) == []


def test_transformers_save_model_proves_batching_when_model_config_has_batch_size_one(tmp_path):
    from mlflow_triton import transformers as mt_transformers
    from tests.support import tiny_models

    mt_transformers.save_model(
        tiny_models.shared_text_classification_pipeline(),
        tmp_path / "classifier",
        input_example=_TEXTS_OF_DIFFERENT_LENGTHS,
        model_config={"batch_size": 1},
        max_batch_size=8,
    )

    assert (files_directory(tmp_path / "classifier" / "model_repository" / "classifier") / "validation.json").exists()


def test_transformers_save_model_proves_batching_of_the_same_pipeline_when_mlflow_runs_it_text_by_text(tmp_path):
    from mlflow_triton import transformers as mt_transformers
    from tests.support import tiny_models

    mt_transformers.save_model(
        tiny_models.text_classification_pipeline_without_attention_mask(),
        tmp_path / "classifier",
        input_example=_TEXTS_OF_DIFFERENT_LENGTHS,
        max_batch_size=8,
    )

    repository = files_directory(tmp_path / "classifier" / "model_repository" / "classifier")
    validation = json.loads((repository / "validation.json").read_text())
    assert validation["batching"]["row_independence"]["largest_difference_ulps"] == {"label": 0.0, "score": 0.0}


class _Centring:
    """A scikit-learn-style model whose rows interact: ``a`` minus the mean of its batch (alone, every row is 0)."""

    def fit(self, X, y=None):
        return self

    def predict(self, X):
        return (X["a"] - X["a"].mean()).to_numpy()


@pytest.mark.parametrize(
    ("example", "refusal"),
    [
        (pd.DataFrame({"a": [3.0]}), r"the input example has 1 distinct row\(s\) \(of 1\).* max_batch_size=0$"),
        (pd.DataFrame({"a": [3.0, 3.0, 3.0]}), r"the input example has 1 distinct row\(s\) \(of 3\)"),
        (pd.DataFrame({"a": [1.0, 5.0, 9.0]}), "output `output_0` differs for the example as one batch"),
    ],
    ids=["one-row", "three-copies", "three-distinct-rows"],
)
def test_log_model_refuses_batching_a_model_that_centres_its_batch_and_logs_nothing(
    tracking_store, workspace, example, refusal
):
    with pytest.raises(BatchingRefusedError, match=refusal):
        sklearn.log_model(
            _Centring(),
            input_example=example,
            serialization_format="cloudpickle",
            max_batch_size=8,
            registered_model_name="centring",
        )

    assert list(workspace.iterdir()) == []
    tracking_store.assert_nothing_logged()


def test_log_model_refuses_batching_the_sklearn_example_with_the_remedy_when_its_example_has_one_row(
    tracking_store, workspace
):
    from examples.sklearn_example import fitted_pipeline as example_pipeline

    pipeline, frame = example_pipeline()
    remedy = f"pass an input_example with at least {MIN_DISTINCT_ROWS} distinct rows"

    with pytest.raises(BatchingRefusedError, match=re.escape(remedy)):
        sklearn.log_model(
            pipeline, input_example=frame.iloc[:1], max_batch_size=8, registered_model_name="demo-classifier"
        )

    tracking_store.assert_nothing_logged()


def test_docs_quote_the_refusal_of_batching_a_text_pipeline_called_with_a_batch_size(tmp_path):
    from mlflow_triton import transformers as mt_transformers
    from tests.support import tiny_models

    with pytest.raises(BatchingRefusedError) as refused:
        mt_transformers.save_model(
            tiny_models.shared_text_classification_pipeline(),
            tmp_path / "classifier",
            input_example=_TEXTS_OF_DIFFERENT_LENGTHS,
            model_config={"batch_size": 4},
            max_batch_size=8,
        )

    text = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "batching.md").read_text(encoding="utf-8")
    assert f"BatchingRefusedError: {refused.value}\n" in text
