"""A signature without outputs, or ``signature=False``: the Triton outputs come from the example's prediction.

MLflow's own tests log this way (``infer_signature(X)``, ``signature=False``) and its scoring server serves such
models. The repository maps the outputs from the schema MLflow infers for the example's prediction, validation.json
says so, and the MLflow model's signature stays exactly as the caller gave it.
"""

import json
import pathlib

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from mlflow.models import Model, ModelSignature, infer_signature
from mlflow.types import ColSpec, DataType, Schema

import mlflow_triton
from mlflow_triton import pyfunc, sklearn
from mlflow_triton.errors import UnsupportedSchemaError


def _repository(path):
    return next((path / "model_repository").iterdir())


def _outputs_in_config(repository):
    text = (repository / "config.pbtxt").read_text(encoding="utf-8")
    return text.split("output {")[1].split("}")[0]


@pytest.mark.parametrize("given", ["inputs-only", "signature-False"])
def test_save_model_maps_outputs_from_the_example_and_keeps_the_signature_as_given(
    tmp_path, fitted_pipeline, example_frame, drive_model_py, read_request, given
):
    signature = ModelSignature(inputs=infer_signature(example_frame).inputs) if given == "inputs-only" else False
    path = tmp_path / "classifier"

    sklearn.save_model(fitted_pipeline, path, input_example=example_frame, signature=signature)

    recorded = Model.load(str(path)).signature
    if signature is False:
        assert recorded is None
    else:
        assert recorded == signature and recorded.outputs is None
    repository = _repository(path)
    report = json.loads((repository / "validation.json").read_text(encoding="utf-8"))
    assert report["output_mapping"]["from"] == "the example's prediction"
    assert report["output_mapping"]["why"] == (
        "the MLflow model records no signature" if signature is False else "the signature has no outputs"
    )
    assert 'name: "output_0"' in _outputs_in_config(repository)
    assert "TYPE_INT64" in _outputs_in_config(repository)
    _, arrays = read_request(repository)
    answered = drive_model_py(repository, arrays)
    expected = mlflow.pyfunc.load_model(str(path)).predict(example_frame)
    np.testing.assert_array_equal(answered["output_0"], expected)


def test_save_model_with_a_full_signature_records_no_output_mapping(tmp_path, fitted_pipeline, example_frame):
    path = tmp_path / "classifier"
    signature = infer_signature(example_frame, fitted_pipeline.predict(example_frame))

    sklearn.save_model(fitted_pipeline, path, input_example=example_frame, signature=signature)

    report = json.loads((_repository(path) / "validation.json").read_text(encoding="utf-8"))
    assert "output_mapping" not in report
    assert Model.load(str(path)).signature == signature


class _Records(mlflow.pyfunc.PythonModel):
    """A prediction with a time per row: MLflow infers a datetime column, which no output maps (docs/limits.md)."""

    def predict(self, context, model_input, params=None):
        return pd.DataFrame({"label": "a", "at": pd.to_datetime(model_input["x"], unit="D")})


def test_save_model_refuses_outputs_from_the_example_that_do_not_map_and_writes_nothing(tmp_path):
    example = pd.DataFrame({"x": [0.5, 1.5, 2.5]})
    path = tmp_path / "records"

    with pytest.raises(
        UnsupportedSchemaError, match="Column `at` of the output schema: datetime output columns are not mapped"
    ):
        pyfunc.save_model(
            _Records(),
            path,
            input_example=example,
            signature=ModelSignature(inputs=infer_signature(example).inputs),
            protocol="tensors",
        )

    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_add_repository_maps_a_source_signature_without_outputs_and_keeps_it(tracking_store, fitted_pipeline):
    frame = pd.DataFrame({"age": [22.0, 35.5, 47.0], "city": ["Oslo", "Pune", "Oslo"], "visits": [1, 4, 2]})
    inputs_only = ModelSignature(inputs=infer_signature(frame).inputs)
    with mlflow.start_run():
        mlflow.sklearn.log_model(
            fitted_pipeline,
            name="churn",
            signature=inputs_only,
            input_example=frame,
            registered_model_name="churn",
            serialization_format="cloudpickle",
        )

    info = mlflow_triton.add_repository("models:/churn/1")

    new = Model.load(info.model_uri)
    assert new.signature == inputs_only
    local = mlflow.artifacts.download_artifacts(info.model_uri)
    repository = _repository(pathlib.Path(local))
    report = json.loads((repository / "validation.json").read_text(encoding="utf-8"))
    assert report["output_mapping"]["why"] == "the signature has no outputs"


def test_save_model_maps_the_outputs_of_a_signature_without_outputs_for_a_column_prediction(tmp_path):
    """A prediction frame (named columns) maps its columns, as a full inferred signature would."""

    class Frame(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return pd.DataFrame({"double": model_input["x"] * 2, "label": ["a"] * len(model_input)})

    example = pd.DataFrame({"x": [0.5, 1.5, 2.5]})
    path = tmp_path / "frame"

    pyfunc.save_model(
        Frame(),
        path,
        input_example=example,
        signature=ModelSignature(inputs=Schema([ColSpec(DataType.double, "x")])),
    )

    config = (_repository(path) / "config.pbtxt").read_text(encoding="utf-8")
    assert 'name: "double"' in config and 'name: "label"' in config
    assert Model.load(str(path)).signature.outputs is None


def test_save_model_maps_outputs_from_the_example_when_the_signature_outputs_are_any_and_keeps_them(tmp_path):
    # MLflow records Any for a function from code typed `predict(model_input: list[str])` without a return hint
    from mlflow.types.schema import AnyType

    class Upper(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            texts = model_input.iloc[:, 0] if isinstance(model_input, pd.DataFrame) else model_input
            return [text.upper() for text in texts]

    signature = ModelSignature(inputs=Schema([ColSpec(DataType.string)]), outputs=Schema([ColSpec(AnyType())]))
    path = tmp_path / "upper"

    pyfunc.save_model(Upper(), path, input_example=["a", "bc"], signature=signature)

    report = json.loads((_repository(path) / "validation.json").read_text(encoding="utf-8"))
    assert report["output_mapping"]["why"] == "the signature's outputs are Any (MLflow could not infer their type)"
    assert Model.load(str(path)).signature == signature


class SaysWhatItGot(mlflow.pyfunc.PythonModel):
    """Answers what predict was handed, as the corpus' models from code print their input."""

    def predict(self, context, model_input, params=None):
        return [f"{type(model_input).__name__}: {model_input!r}"]


def test_save_model_refuses_a_model_without_signature_that_predicts_the_example_as_given_otherwise(tmp_path):
    # pyfunc.predict("asdf") hands it the str; a request reaches it as a one-row DataFrame (make corpus: a model from
    # code printing its input FAILed check where add-repository kept the source without a signature)
    with pytest.raises(
        mlflow_triton.errors.ValidationError,
        match=r"^The model has no signature, so MLflow hands predict the input as it is given \(here a str\), while "
        r"a Triton request reaches it as the DataFrame .* the two predictions of the example differ; log the model "
        r"with a signature",
    ):
        pyfunc.save_model(SaysWhatItGot(), tmp_path / "m", input_example="asdf", signature=False, protocol="tensors")

    assert list(tmp_path.iterdir()) == []


def test_save_model_serves_a_model_without_signature_when_its_example_is_already_a_frame(tmp_path):
    pyfunc.save_model(SaysWhatItGot(), tmp_path / "m", input_example=pd.DataFrame({"text": ["asdf"]}), signature=False)

    assert Model.load(str(tmp_path / "m")).signature is None


def test_save_model_refuses_a_model_without_signature_that_cannot_predict_the_example_as_given(tmp_path):
    class FramesOnly(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input.to_numpy()  # a dict has no to_numpy: pyfunc.predict of the example fails

    with pytest.raises(
        mlflow_triton.errors.ValidationError,
        match=r"here a dict\), .* and the example as given fails to predict \(AttributeError\(.*; log the model with",
    ):
        pyfunc.save_model(FramesOnly(), tmp_path / "m", input_example={"a": 1.5, "b": 2.0}, signature=False)

    assert list(tmp_path.iterdir()) == []
