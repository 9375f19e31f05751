"""``--input FILE`` takes every body ``mlflow models serve`` answers (issue #53 point 6).

The oracle is MLflow's scoring server itself: ``mlflow.pyfunc.scoring_server.invocations`` (the function behind its
``/invocations`` route) answers each body, and the file read by ``load_user_input`` (what ``check --input`` and
``add-repository --input`` read), predicted as ``check`` predicts it (``pyfunc.predict(input, params=params)``),
gives the same predictions. A body MLflow refuses is refused with MLflow's message, saying MLflow refuses it.
"""

import io
import json

import mlflow.pyfunc
import pandas as pd
import pytest
from mlflow.exceptions import MlflowException
from mlflow.models import infer_signature
from mlflow.pyfunc import scoring_server

from mlflow_triton.local.errors import InputFileError
from mlflow_triton.local.user_input import load_user_input, split_params

TAGS = pd.DataFrame({"tags": [["a", "b"], ["c"], ["d", "e", "f"]], "name": ["x", "y", "z"]})
ROWS = [{"tags": ["a", "b"], "name": "x"}, {"tags": ["q"], "name": "w"}]


class CountTags(mlflow.pyfunc.PythonModel):
    """An Array(string) column and a float param, as MLflow's test_pyfunc_model_schema_enforcement_complex has."""

    def predict(self, context, model_input, params=None):
        scale = (params or {}).get("scale", 1.0)
        return pd.DataFrame({"count": [len(tags) * scale for tags in model_input["tags"]], "name": model_input["name"]})


class Lengths(mlflow.pyfunc.PythonModel):
    """The lengths of the texts of an unwrapped LLM body (``{"input": [...]}``, an embeddings request)."""

    def predict(self, context, model_input, params=None):
        texts = model_input["input"] if isinstance(model_input, dict) else model_input["input"].iloc[0]
        return [len(text) for text in texts]


class Hinted(mlflow.pyfunc.PythonModel):
    """A type-hinted model: MLflow hands it the body's ``inputs`` as they are."""

    def predict(self, model_input: list[str], params=None) -> list[int]:
        return [len(text) for text in model_input]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{name: the model as MLflow's scoring server loads it}."""
    root = tmp_path_factory.mktemp("bodies")
    mlflow.pyfunc.save_model(
        root / "tags",
        python_model=CountTags(),
        signature=infer_signature(TAGS, CountTags().predict(None, TAGS), params={"scale": 1.0}),
    )
    mlflow.pyfunc.save_model(root / "plain", python_model=CountTags(), signature=infer_signature(TAGS))
    mlflow.pyfunc.save_model(root / "lengths", python_model=Lengths(), input_example={"input": ["hello", "hi"]})
    mlflow.pyfunc.save_model(root / "hinted", python_model=Hinted(), input_example=["hello", "hi"])
    return {name: mlflow.pyfunc.load_model(str(root / name)) for name in ("tags", "plain", "lengths", "hinted")}


def served(model, body):
    """MLflow's scoring server's answer to ``body``: ``(status, predictions or MLflow's message)``."""
    try:
        response = scoring_server.invocations(body, "application/json", model, model.metadata.get_input_schema())
    except MlflowException as error:
        return error.get_http_status_code(), error.message
    answer = json.loads(response.response)
    return response.status, answer["predictions"] if isinstance(answer, dict) and "predictions" in answer else answer


def read_and_predicted(model, path):
    """The file as ``load_user_input`` reads it, predicted as ``check`` predicts it, written as MLflow writes it."""
    value, params = split_params(load_user_input(path, model.metadata))
    written = io.StringIO()
    scoring_server.unwrapped_predictions_to_json(model.predict(value, params=params), written)
    return json.loads(written.getvalue())


ANSWERED = {
    "inputs records with nested lists and params": ("tags", {"inputs": ROWS, "params": {"scale": 2.5}}),
    "inputs records with nested lists": ("tags", {"inputs": ROWS}),
    "dataframe_split with nested lists and params": (
        "tags",
        {"dataframe_split": pd.DataFrame(ROWS).to_dict("split"), "params": {"scale": 2.5}},
    ),
    "dataframe_records with nested lists and params": ("tags", {"dataframe_records": ROWS, "params": {"scale": 2.5}}),
    "inputs records and a key MLflow ignores": ("tags", {"inputs": ROWS, "extra": 1, "params": {"scale": 0.5}}),
    "params that are not an object, no params schema": ("plain", {"inputs": ROWS, "params": [1]}),
    "an unwrapped LLM body": ("lengths", {"input": ["hello", "good day"]}),
    "a type-hinted model's inputs": ("hinted", {"inputs": ["hello", "good day"]}),
}


@pytest.mark.parametrize(("name", "body"), list(ANSWERED.values()), ids=list(ANSWERED))
def test_load_user_input_reads_a_body_as_mlflows_scoring_server_answers_it(models, tmp_path, name, body):
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    status, expected = served(models[name], json.dumps(body))

    predicted = read_and_predicted(models[name], path)

    assert (status, predicted) == (200, expected)


REFUSED = {
    "two formats": ("tags", {"inputs": ROWS, "dataframe_records": ROWS}),
    "instances records with ragged nested lists": ("tags", {"instances": ROWS}),
    "a list": ("tags", [ROWS]),
    "params that are not an object, a params schema": ("tags", {"inputs": ROWS, "params": [1]}),
}


@pytest.mark.parametrize(("name", "body"), list(REFUSED.values()), ids=list(REFUSED))
def test_load_user_input_says_mlflow_refuses_a_body_mlflows_scoring_server_refuses(models, tmp_path, name, body):
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    status, message = served(models[name], json.dumps(body))
    assert status == 400

    with pytest.raises(InputFileError) as refused:
        load_user_input(path, models[name].metadata)
    said = str(refused.value)
    assert said.startswith(f"--input {path}: MLflow's scoring server refuses this body: ")
    assert said.split(": ", 2)[2].split("\n")[0] in message
