"""Nested columns (JSON text per row) and a scalar prediction, on a real Triton 2.51 (mapping version 5).

Four models on one server: a PythonModel over a DataFrame with a float64 vector column (numpy arrays, as
``list(matrix)`` gives them) and an Object column, answering a float, an Array and an Object per row; the
same model logged with lists in the example; a PythonModel counting the tags of an ``Array(string)`` column; a
PyTorch module whose ``forward`` returns ``x.sum()``. Each
shipped request is answered like ``pyfunc.predict`` of the saved example (the independent oracle); a request
written by hand from docs/repository.md's convention is answered like ``pyfunc.predict`` of the same value; and
malformed nested rows, and a lone surrogate in a nested text row, get a 400 naming the column and the row.
"""

import json
import shutil
import sys

import cloudpickle
import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
import torch

from mlflow_triton import pyfunc, pytorch
from mlflow_triton.local import TritonInstallation, TritonServer, send_shipped_request
from mlflow_triton.local._compare import compare
from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines
from tests.support.oracle import expected_example_tensors
from tests.support.v2_http import post_infer

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]


class Vectors(mlflow.pyfunc.PythonModel):
    """A float per row (the vector's norm), an Array (the element types predict saw) and an Object."""

    def predict(self, context, model_input, params=None):
        return pd.DataFrame(
            {
                "norm": [float(np.linalg.norm(np.asarray(v, dtype=np.float64))) for v in model_input["vec"]],
                "seen": [[type(v).__name__, str(np.asarray(v).dtype)] for v in model_input["vec"]],
                "meta": [{"id": r["id"], "size": len(v)} for r, v in zip(model_input["rec"], model_input["vec"])],
            }
        )


class Tags(mlflow.pyfunc.PythonModel):
    """How many tags each row holds: an ``Array(string)`` column, where a lone surrogate passes JSON decoding."""

    def predict(self, context, model_input, params=None):
        return pd.DataFrame({"count": [len(tags) for tags in model_input["tags"]]})


class Total(torch.nn.Module):
    def forward(self, x):
        return x.sum()


# float64: MLflow reads a saved Array(float) example back as float64 lists and refuses them (docs/limits.md)
MATRIX = np.array([[0.5, 1.25, -2.0], [3.0, 0.1, 4.5]])
ARRAYS = pd.DataFrame({"vec": list(MATRIX), "rec": [{"id": 7}, {"id": 8}]})
LISTS = pd.DataFrame({"vec": [[0.5, 1.25], [3.0, 0.1, 4.5]], "rec": [{"id": 7}, {"id": 8}]})
TAGS = pd.DataFrame({"tags": [["a", "b"], ["c"]]})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(server, {name: (package, repository directory)})."""
    root = tmp_path_factory.mktemp("nested")
    # The models are classes of this test module: pickled by value, so Triton needs no tests package to load them.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    repository = root / "repository"
    repository.mkdir()
    models = {}
    try:
        for name, save in (
            (
                "vectors_ndarray",
                lambda path: pyfunc.save_model(
                    Vectors(), path, input_example=ARRAYS, triton_model_name="vectors_ndarray"
                ),
            ),
            (
                "vectors_lists",
                lambda path: pyfunc.save_model(Vectors(), path, input_example=LISTS, triton_model_name="vectors_lists"),
            ),
            (
                "tags",
                lambda path: pyfunc.save_model(Tags(), path, input_example=TAGS, triton_model_name="tags"),
            ),
            (
                "total",
                lambda path: pytorch.save_model(
                    Total().eval(), path, input_example=MATRIX, serialization_format="pickle", triton_model_name="total"
                ),
            ),
        ):
            save(root / name)
            shutil.copytree(root / name / "model_repository" / name, repository / name)
            models[name] = (root / name, repository / name)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    installation = TritonInstallation.bundled(progress=None)
    lines = [
        line
        for _, model_dir in models.values()
        for line in requirement_lines((model_dir / "requirements.txt").read_text())
    ]
    env = ensure_env_for_requirements(lines, installation.serving_constraints, progress=None, reuse_superset=True)
    with TritonServer(repository, list(models), installation=installation, serving_env=env) as server:
        yield server, models


@pytest.mark.parametrize("name", ["vectors_ndarray", "vectors_lists", "tags", "total"])
def test_shipped_request_is_answered_like_pyfunc_predict_when_columns_are_nested_or_the_prediction_a_scalar(
    served, name
):
    server, models = served
    package, model_dir = models[name]

    response = send_shipped_request(server.url, model_dir)

    comparison = compare(expected_example_tensors(package, model_dir), response.outputs)
    assert all(result["equal"] for result in comparison.values()), comparison


def test_vector_rows_reach_predict_as_lists_as_mlflow_serves_them_when_they_travel_as_json(served):
    server, models = served
    answers = {}
    for name in ("vectors_ndarray", "vectors_lists"):
        response = send_shipped_request(server.url, models[name][1])
        answers[name] = [json.loads(text) for text in response.outputs["seen"].tolist()]

    # As MLflow's own serving and its reading of the saved example: lists, also where the example held arrays.
    assert answers["vectors_ndarray"] == [["list", "float64"], ["list", "float64"]]
    assert answers["vectors_lists"] == [["list", "float64"], ["list", "float64"]]


def _hand_written(vec, rec):
    """The request docs/repository.md shows: one BYTES element of JSON text per row."""
    return [
        {"name": "vec", "datatype": "BYTES", "shape": [len(vec)], "data": vec},
        {"name": "rec", "datatype": "BYTES", "shape": [len(rec)], "data": rec},
    ]


def test_a_request_written_from_the_docs_is_answered_like_pyfunc_predict_of_the_same_value(served):
    server, models = served
    package, _ = models["vectors_ndarray"]

    status, body = post_infer(
        server, "vectors_ndarray", _hand_written(["[1.5, -2.25]", "[0.5]"], ['{"id": 1}', '{"id": 2}'])
    )

    assert status == 200, body
    outputs = {o["name"]: o["data"] for o in body["outputs"]}
    value = pd.DataFrame({"vec": [[1.5, -2.25], [0.5]], "rec": [{"id": 1}, {"id": 2}]})
    expected = mlflow.pyfunc.load_model(str(package)).predict(value)
    assert outputs["norm"] == expected["norm"].tolist()
    assert [json.loads(text) for text in outputs["meta"]] == expected["meta"].tolist()


@pytest.mark.parametrize(
    ("vec", "rec", "message"),
    [
        (["[1.5]", "[1.5"], ['{"id": 1}', '{"id": 2}'], "Tensor `vec`: row 1 is not valid JSON"),
        (["[1.5]", "[2.0]"], ['{"id": 1}', "{}"], "column `rec`, row 1: Missing required properties: {'id'}"),
        (["[1.5]", '["x"]'], ['{"id": 1}', '{"id": 2}'], "column `vec`, row 1: Incompatible input types"),
    ],
)
def test_a_malformed_nested_row_gets_a_400_naming_the_column_and_row(served, vec, rec, message):
    server, _ = served

    status, body = post_infer(
        server, "vectors_lists" if "Missing" in message else "vectors_ndarray", _hand_written(vec, rec)
    )

    assert status == 400, body
    assert message in body["error"]


def test_a_lone_surrogate_in_a_nested_text_row_gets_a_400_naming_the_tensor_and_row(served):
    # before (#42): 200 counting the row, where MLflow's scoring server answers 400 naming the column
    server, _ = served

    status, body = post_infer(
        server, "tags", [{"name": "tags", "datatype": "BYTES", "shape": [2], "data": ['["a"]', '["b", "\\ud800"]']}]
    )

    assert status == 400, body
    assert body["error"].startswith("Tensor `tags`: row 1 holds text that is not valid Unicode (a lone surrogate")
