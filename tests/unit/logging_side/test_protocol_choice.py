"""``protocol="auto"`` (the default): the typed mapping where it carries a model exactly, MLflow's serving protocol
where it cannot, and validation.json saying why.

Each model below is one the typed mapping refused or answered otherwise than MLflow's server before the choice was
automatic (#41): a scikit-learn model served with ``predict_proba`` under the signature MLflow inferred from
``predict``, a type-hinted ``list[dict[str, int]]`` model, a model whose output columns depend on a request column
(pmdarima's ``return_conf_int``) and on a parameter, and a ``ChatModel``.
"""

import json
import os
import pathlib

import mlflow
import mlflow.pyfunc
import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
from mlflow.models import ModelSignature, infer_signature
from mlflow.pyfunc import ChatModel
from mlflow.types import ColSpec, DataType, Schema
from mlflow.types.llm import ChatChoice, ChatCompletionResponse, ChatMessage
from sklearn.linear_model import LogisticRegression

import mlflow_triton
from mlflow_triton import cli
from mlflow_triton.errors import MlflowTritonError, ValidationError
from tests.unit.logging_side.test_mlflow_protocol import serving_variable_restored  # noqa: F401 (fixture)

X = pd.DataFrame({"length": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "width": [0.5, 0.1, 0.9, 0.3, 0.7, 0.2]})
Y = np.array([0, 0, 2, 1, 1, 2])


class Summed(mlflow.pyfunc.PythonModel):
    def predict(self, model_input: list[dict[str, int]]) -> list[int]:
        return [sum(row.values()) for row in model_input]


class Forecast(mlflow.pyfunc.PythonModel):
    """Columns as pmdarima's pyfunc answers them: the interval only where the request asks for it."""

    def predict(self, context, model_input, params=None):
        periods = int(model_input["n_periods"].iloc[0])
        frame = pd.DataFrame({"yhat": np.arange(periods, dtype=float)})
        if bool(model_input.get("return_conf_int", pd.Series([False])).iloc[0]) or (params or {}).get("interval"):
            frame["lower"], frame["upper"] = frame["yhat"] - 1.0, frame["yhat"] + 1.0
        return frame


class Echo(ChatModel):
    def predict(self, context, messages, params):
        return ChatCompletionResponse(
            model="echo", choices=[ChatChoice(index=0, message=ChatMessage(role="assistant", content="ok"))]
        )


class Steady(ChatModel):
    """A reply with a fixed ``id``: the same answer to every call, which the typed mapping could carry."""

    def predict(self, context, messages, params):
        message = ChatMessage(role="assistant", content="ok")
        return ChatCompletionResponse(id="reply", model="steady", choices=[ChatChoice(index=0, message=message)])


class Failing(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        raise RuntimeError("no answer")


FORECAST_EXAMPLE = pd.DataFrame({"n_periods": [3], "return_conf_int": [False]})


def validation(info, tmp_path):
    local = pathlib.Path(mlflow.artifacts.download_artifacts(artifact_uri=info.model_uri, dst_path=str(tmp_path)))
    [path] = (local / "model_repository").glob("*/validation.json")
    return json.loads(path.read_text())


def test_a_predict_proba_source_whose_signature_mlflow_inferred_from_predict_speaks_mlflows_protocol(
    tracking_store, tmp_path
):
    with mlflow.start_run():
        source = mlflow.sklearn.log_model(
            LogisticRegression().fit(X, Y), name="clf", pyfunc_predict_fn="predict_proba", input_example=X.head(3)
        )

    report = validation(mlflow_triton.add_repository(source.model_uri), tmp_path)

    assert report["protocol"] == "mlflow"
    assert "Cannot split a ndarray of shape [3, 3]" in report["protocol_chosen_because"]
    with pytest.raises(ValidationError, match=r"Cannot split a ndarray of shape \[3, 3\]"):
        mlflow_triton.add_repository(source.model_uri, protocol="tensors")


def test_a_type_hinted_list_of_dicts_model_speaks_mlflows_protocol(tracking_store, tmp_path):
    with mlflow.start_run():
        source = mlflow.pyfunc.log_model(name="summed", python_model=Summed(), input_example=[{"a": 1, "b": 2}])

    report = validation(mlflow_triton.add_repository(source.model_uri), tmp_path)

    assert report["protocol"] == "mlflow"
    assert report["protocol_chosen_because"].startswith("the typed mapping refuses it: ")


def test_output_columns_that_depend_on_a_request_column_are_found_by_flipping_it(tracking_store, tmp_path):
    with mlflow.start_run():
        source = mlflow.pyfunc.log_model(name="forecast", python_model=Forecast(), input_example=FORECAST_EXAMPLE)

    report = validation(mlflow_triton.add_repository(source.model_uri), tmp_path)

    assert report["protocol"] == "mlflow"
    assert report["protocol_chosen_because"] == (
        "the typed mapping refuses it: the prediction's columns depend on the request: with input column "
        "`return_conf_int` flipped the example predicts yhat, lower, upper instead of yhat"
    )


def test_output_columns_that_depend_on_a_boolean_parameter_are_found_by_flipping_it(tracking_store, tmp_path):
    example = pd.DataFrame({"n_periods": [3]})
    signature = infer_signature(example, Forecast().predict(None, example), params={"interval": False})

    info = mlflow_triton.pyfunc.log_model(Forecast(), name="forecast", input_example=example, signature=signature)

    assert "with parameter `interval` flipped" in validation(info, tmp_path)["protocol_chosen_because"]


def test_a_chat_model_speaks_mlflows_protocol_by_its_interface(tracking_store, tmp_path):
    info = mlflow_triton.pyfunc.log_model(
        Echo(), name="echo", input_example={"messages": [{"role": "user", "content": "hi"}]}
    )

    report = validation(info, tmp_path)
    assert report["protocol"] == "mlflow"
    assert report["protocol_chosen_because"].startswith("the model is MLflow's ChatModel")


def test_a_chat_model_added_from_mlflow_speaks_mlflows_protocol_by_its_interface_when_its_reply_is_steady(
    tracking_store, tmp_path
):
    example = {"messages": [{"role": "user", "content": "hi"}]}
    source = mlflow.pyfunc.log_model(name="steady", python_model=Steady(), input_example=example)

    info = mlflow_triton.add_repository(source.model_uri)

    report = validation(info, tmp_path)
    assert report["protocol"] == "mlflow"
    assert report["protocol_chosen_because"].startswith("the model is MLflow's ChatModel")


@pytest.mark.parametrize("batching", [{}, {"max_batch_size": 4}], ids=["tensors", "batched"])
def test_a_chat_model_asked_for_typed_tensors_is_refused_naming_the_protocols_that_serve_it_leaving_nothing(
    tracking_store, workspace, batching
):
    options = batching or {"protocol": "tensors"}
    example = {"messages": [{"role": "user", "content": "hi"}]}

    with pytest.raises(MlflowTritonError) as refused:  # was: KeyError(-1) and "pass pd.DataFrame(...)"
        mlflow_triton.pyfunc.log_model(Echo(), name="echo", input_example=example, **options)

    message = str(refused.value)
    assert message.startswith("MLflow's ChatModel takes MLflow's chat or agent request bodies")
    assert "protocol='auto' (the default) or 'mlflow'" in message
    assert ("and max_batch_size=0" in message) == bool(batching)
    assert tracking_store.logged_models() == [] and list(workspace.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "because"),
    [
        ({}, "the typed mapping carries the model exactly (one typed tensor per field of the signature)"),
        ({"protocol": "tensors"}, "asked for with protocol='tensors'"),
        (
            {"max_batch_size": 4},
            "max_batch_size=4: batching needs the typed mapping (MLflow's protocol answers one body per request)",
        ),
    ],
    ids=["auto", "asked", "batched"],
)
def test_a_model_the_typed_mapping_carries_keeps_it_and_records_why(tracking_store, tmp_path, options, because):
    info = mlflow_triton.sklearn.log_model(LogisticRegression().fit(X, Y), input_example=X.head(3), **options)

    report = validation(info, tmp_path)
    assert (report["protocol"], report["protocol_chosen_because"]) == ("tensors", because)


def test_a_model_asked_to_speak_mlflows_protocol_records_that_it_was_asked(tracking_store, tmp_path):
    info = mlflow_triton.sklearn.log_model(LogisticRegression().fit(X, Y), input_example=X.head(3), protocol="mlflow")

    report = validation(info, tmp_path)
    assert (report["protocol"], report["protocol_chosen_because"]) == ("mlflow", "asked for with protocol='mlflow'")


def test_a_wrapped_model_whose_declared_outputs_differ_from_its_prediction_speaks_mlflows_protocol_unbatched(
    tracking_store, tmp_path
):
    model = LogisticRegression().fit(X, Y)
    declared = infer_signature(X, model.predict(X))  # one column, while predict_proba answers three
    options = {"input_example": X.head(3), "signature": declared, "pyfunc_predict_fn": "predict_proba"}

    report = validation(mlflow_triton.sklearn.log_model(model, **options), tmp_path)

    assert report["protocol"] == "mlflow"
    with pytest.raises(ValidationError, match=r"The prediction does not fit the signature's output tensors"):
        mlflow_triton.sklearn.log_model(model, **options, max_batch_size=8)  # MLflow's protocol does not batch
    assert len(tracking_store.logged_models()) == 1


def test_where_mlflows_protocol_refuses_too_the_typed_refusal_is_raised_with_mlflows_reason_leaving_nothing(
    tracking_store, workspace
):
    with pytest.raises(ValidationError, match=r"no answer .*MLflow's serving protocol cannot serve it either"):
        mlflow_triton.pyfunc.log_model(Failing(), name="failing", input_example=X.head(2))
    assert tracking_store.logged_models() == []
    assert list(workspace.iterdir()) == []  # the package saved to ask MLflow's scoring code is gone


def test_a_source_declaring_a_datetime_output_it_does_not_predict_speaks_mlflows_protocol(tracking_store, tmp_path):
    declared = ModelSignature(inputs=infer_signature(X).inputs, outputs=Schema([ColSpec(DataType.datetime)]))
    with mlflow.start_run():
        source = mlflow.sklearn.log_model(
            LogisticRegression().fit(X, Y), name="clf", signature=declared, input_example=X.head(2)
        )

    report = validation(mlflow_triton.add_repository(source.model_uri), tmp_path)

    assert report["protocol"] == "mlflow"
    assert "datetime output columns are not mapped" in report["protocol_chosen_because"]


def test_the_command_line_chooses_automatically_by_default(capsys):
    with pytest.raises(SystemExit):
        cli.main(["add-repository", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "{auto,tensors,mlflow}" in said
    assert "auto (default: tensors where it carries the model exactly, else mlflow; validation.json says why)" in said


class Joined(mlflow.pyfunc.PythonModel):
    def predict(self, model_input: list[list[str]]) -> list[str]:
        return [" ".join(words) for words in model_input]


def test_a_type_hinted_list_of_lists_model_speaks_mlflows_protocol_where_the_typed_mapping_cannot_frame_its_example(
    tracking_store, tmp_path
):
    with mlflow.start_run():
        source = mlflow.pyfunc.log_model(name="joined", python_model=Joined(), input_example=[["a", "b"], ["c"]])

    report = validation(mlflow_triton.add_repository(source.model_uri), tmp_path)

    assert report["protocol"] == "mlflow"
    assert "input_example is a list of lists" in report["protocol_chosen_because"]


class Raw(mlflow.pyfunc.PythonModel):
    def predict(self, model_input: list[bytes]) -> list[bytes]:
        return model_input


SERVING_MARK = "_MLFLOW_IS_IN_SERVING_ENVIRONMENT"  # set for good by MLflow's scoring_server.init


@pytest.mark.parametrize("marked", [False, True], ids=["plain-process", "marked-process"])
def test_a_type_hinted_bytes_model_is_added_alike_whether_or_not_the_callers_process_carries_mlflows_serving_mark(
    tracking_store, tmp_path, monkeypatch, marked
):
    with mlflow.start_run():  # MLflow saves the example's bytes as base64 text and reads that text back
        source = mlflow.pyfunc.log_model(name="raw", python_model=Raw(), input_example=[b"bytes"])
    if marked:  # was: the typed mapping took the base64 text as the bytes, and Triton answered it back (a corpus FAIL)
        monkeypatch.setenv(SERVING_MARK, "true")

    report = validation(mlflow_triton.add_repository(source.model_uri), tmp_path)

    assert report["protocol"] == "mlflow"
    assert "Expected type bytes, but got str" in report["protocol_chosen_because"]
    assert os.environ.get(SERVING_MARK) == ("true" if marked else None)  # the caller's process as it was


class Shouted(mlflow.pyfunc.PythonModel):
    def predict(self, model_input: list[str]) -> list[str]:
        return [text.upper() for text in model_input]


def test_checks_oracle_predicts_outside_mlflows_serving_mark(tracking_store, tmp_path, monkeypatch):
    from mlflow.exceptions import MlflowException

    from mlflow_triton.local._compare import predict_outputs

    with mlflow.start_run():
        source = mlflow.pyfunc.log_model(name="raw", python_model=Raw(), input_example=[b"bytes"])
    model = mlflow.pyfunc.load_model(source.model_uri)
    monkeypatch.setenv(SERVING_MARK, "true")

    with pytest.raises(MlflowException, match="Expected type bytes, but got str"):  # was: base64-decoded to b"bytes"
        predict_outputs(model, ["Ynl0ZXM=\n"], tmp_path)  # (the prediction fails before the repository is read)
    assert os.environ[SERVING_MARK] == "true"


def test_a_typed_repositorys_model_leaves_mlflows_serving_mark_its_proof_never_had(
    tracking_store, tmp_path, monkeypatch, drive_model_py
):
    info = mlflow_triton.pyfunc.log_model(Shouted(), name="shouted", input_example=["hi"], protocol="tensors")
    local = pathlib.Path(mlflow.artifacts.download_artifacts(artifact_uri=info.model_uri, dst_path=str(tmp_path)))
    [repository] = (local / "model_repository").iterdir()
    monkeypatch.setenv(SERVING_MARK, "true")

    answered = drive_model_py(repository, {"input_0": np.array([b"hello"], dtype=object)})

    assert [bytes(value) for value in np.asarray(answered["output_0"]).ravel()] == [b"HELLO"]
    assert SERVING_MARK not in os.environ
