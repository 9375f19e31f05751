"""A decimal request parameter to a batched model on a real Triton 2.51 (issue #52).

A ``PythonModel`` that cannot predict without its float ``scale`` param is logged without a signature, with the
example ``(rows, {"scale": 1.5})``, unbatched (``plain``) and with ``max_batch_size=8`` (``batched``): MLflow's own
inference predicts the example with its params, and so does logging. ``check`` of the batched model PASSes (its
shipped request and an ``--input`` body with ``"params": {"scale": 2.5}``), and over HTTP/JSON and gRPC both models
answer ``{"scale": 2.5}`` alike and like ``pyfunc.predict(rows, params={"scale": 2.5})``. Runtime 2.10's zero-row
guard answered such a request 500. ``check --input`` of a batched model with an Array(string) column takes the
``{"inputs": [records with nested lists], "params": ...}`` body ``mlflow models serve`` answers (issue #53 point 6).
"""

import json

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
import tritonclient.grpc
import tritonclient.http

from mlflow_triton import pyfunc
from mlflow_triton.local import TritonInstallation, TritonServer, check_models, ensure_serving_env
from mlflow_triton.repository.config import read_config

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

EXAMPLE = pd.DataFrame({"count": [1, 2, 3], "weight": [0.5, 1.25, 2.0]})
ROWS = pd.DataFrame({"count": [4, 1, 7, 2, 9], "weight": [3.5, 0.25, 1.0, 2.75, 0.5]})
PARAMS = {"scale": 2.5}
NAMES = {"plain": 0, "batched": 8}


def scaled():
    class Scaled(mlflow.pyfunc.PythonModel):  # defined here, so cloudpickle stores it by value
        def predict(self, context, model_input, params=None):
            return pd.DataFrame({"score": model_input["count"] * params["scale"] + model_input["weight"]})

    return Scaled()


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """{model name: package} of ``plain`` and ``batched``, logged with the example's params and no signature."""
    root = tmp_path_factory.mktemp("batching-params")
    for name, max_batch_size in NAMES.items():
        pyfunc.save_model(
            scaled(),
            root / name,
            input_example=(EXAMPLE, {"scale": 1.5}),
            triton_model_name=name,
            max_batch_size=max_batch_size,
        )
    return {name: root / name for name in NAMES}


@pytest.fixture(scope="module")
def installation():
    return TritonInstallation.bundled(progress=None)


@pytest.fixture(scope="module")
def served(packages, installation):
    """One server holding both models."""
    directories = [packages[name] / "model_repository" / name for name in NAMES]
    env = ensure_serving_env(directories[0] / "requirements.txt", installation.serving_constraints, progress=None)
    with TritonServer(
        [d.parent for d in directories], list(NAMES), installation=installation, serving_env=env
    ) as server:
        yield server


def test_check_passes_the_batched_model_logged_with_float_example_params(packages, installation, tmp_path):
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"dataframe_split": ROWS.to_dict("split"), "params": PARAMS}))
    said = []

    [report] = check_models(
        [str(packages["batched"])], tmp_path / "work", installation, input_file=body, progress=None, out=said.append
    )

    assert report.passed, "\n".join(said)
    assert said[-1].startswith(f"PASS {packages['batched']}: ")


def inputs_of(client_module, package, name):
    """``ROWS`` as the model's inputs, in the shapes its config declares (``[rows]`` or ``[rows, 1]``)."""
    config, _ = read_config(package / "model_repository" / name / "config.pbtxt")
    batched = config.max_batch_size > 0
    inputs = []
    for column, datatype in (("count", "INT64"), ("weight", "FP64")):
        values = ROWS[column].to_numpy()[:, None] if batched else ROWS[column].to_numpy()
        entry = client_module.InferInput(column, list(values.shape), datatype)
        entry.set_data_from_numpy(values)
        inputs.append(entry)
    return inputs


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_batched_model_answers_a_decimal_parameter_like_the_unbatched_model_and_pyfunc_predict(
    served, packages, protocol
):
    client_module = tritonclient.http if protocol == "http" else tritonclient.grpc
    url = served.url.removeprefix("http://") if protocol == "http" else served.grpc_url
    client = client_module.InferenceServerClient(url)

    answers = {
        name: client.infer(name, inputs_of(client_module, packages[name], name), parameters=PARAMS)
        .as_numpy("score")
        .reshape(-1)
        for name in NAMES
    }

    expected = mlflow.pyfunc.load_model(str(packages["plain"])).predict(ROWS, params=PARAMS)["score"].to_numpy()
    np.testing.assert_array_equal(answers["batched"], answers["plain"])
    np.testing.assert_array_equal(answers["batched"], expected)
    assert expected.tolist() == (ROWS["count"] * 2.5 + ROWS["weight"]).tolist()


def count_tags():
    class CountTags(mlflow.pyfunc.PythonModel):  # an Array(string) column, as MLflow's schema_enforcement_complex
        def predict(self, context, model_input, params=None):
            return pd.DataFrame({"count": [len(tags) * params["scale"] for tags in model_input["tags"]]})

    return CountTags()


def test_check_passes_a_batched_array_column_model_given_nested_records_with_params(installation, tmp_path):
    """``{"inputs": [records with nested lists], "params": ...}``, which ``mlflow models serve`` answers (issue #53
    point 6), sent by ``check --input`` to a batched model with an Array(string) column."""
    tags = pd.DataFrame({"tags": [["a", "b"], ["c"], ["d", "e", "f"]], "name": ["x", "y", "z"]})
    pyfunc.save_model(
        count_tags(),
        tmp_path / "tags",
        input_example=(tags, {"scale": 1.5}),
        triton_model_name="tags",
        max_batch_size=4,
    )
    body = tmp_path / "body.json"
    rows = [{"tags": ["a", "b"], "name": "x"}, {"tags": ["q"], "name": "w"}, {"tags": [], "name": "v"}]
    body.write_text(json.dumps({"inputs": rows, "params": PARAMS}))
    said = []

    [report] = check_models(
        [str(tmp_path / "tags")], tmp_path / "work", installation, input_file=body, progress=None, out=said.append
    )

    assert report.passed, "\n".join(said)
    assert said[-1].endswith("and the input file body.json (3 rows, json) like pyfunc.predict of it")
