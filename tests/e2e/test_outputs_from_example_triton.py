"""Outputs mapped from the example's prediction, and optional output columns, on a real Triton 2.51.

Two models whose MLflow signature says nothing of their outputs, as MLflow's own tests log them: one with
``infer_signature(X)`` (inputs only), one with ``signature=False``; and an identity model whose prediction frame
holds NaN and ``None`` (optional output columns, answered with ``<tensor>__missing`` masks). Each repository's
shipped request is answered like ``pyfunc.predict`` of the saved example (the independent oracle), and the MLflow
model keeps its signature.
"""

import shutil

import numpy as np
import pandas as pd
import pytest
from mlflow.models import Model, ModelSignature, infer_signature
from sklearn.linear_model import LogisticRegression

from mlflow_triton import sklearn
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local._compare import compare
from tests.support.column_models import identity_model
from tests.support.oracle import expected_example_tensors

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

EXAMPLE = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.5, 0.1, 0.9, 0.3]})
SIGNATURES = {"inputs_only": ModelSignature(inputs=infer_signature(EXAMPLE).inputs), "no_signature": False}
WITH_MISSING = pd.DataFrame({"size": [1.5, np.nan, 3.25], "city": ["Oslo", None, "Pune"]})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(server, {name: (package, repository directory)}) for both models on one server."""
    root = tmp_path_factory.mktemp("outputs-from-example")
    model = LogisticRegression().fit(EXAMPLE, [0, 1, 0, 1])
    repository = root / "repository"
    repository.mkdir()
    models = {}
    for name, signature in SIGNATURES.items():
        package = root / name
        sklearn.save_model(model, package, input_example=EXAMPLE.iloc[:3], signature=signature, triton_model_name=name)
        shutil.copytree(package / "model_repository" / name, repository / name)
        models[name] = (package, repository / name)
    package = root / "optional_outputs"
    sklearn.save_model(identity_model(), package, input_example=WITH_MISSING, serialization_format="cloudpickle")
    shutil.copytree(package / "model_repository" / "optional_outputs", repository / "optional_outputs")
    models["optional_outputs"] = (package, repository / "optional_outputs")
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_serving_env(
        repository / "inputs_only" / "requirements.txt", installation.serving_constraints, progress=None
    )
    with TritonServer(repository, list(models), installation=installation, serving_env=env) as server:
        yield server, models


@pytest.mark.parametrize("name", list(SIGNATURES))
def test_shipped_request_is_answered_like_pyfunc_predict_when_the_signature_has_no_outputs(served, name):
    server, models = served
    package, model_dir = models[name]

    response = send_shipped_request(server.url, model_dir)

    comparison = compare(expected_example_tensors(package, model_dir), response.outputs)
    assert all(result["equal"] for result in comparison.values()), comparison
    recorded = Model.load(str(package)).signature
    assert recorded == (None if SIGNATURES[name] is False else SIGNATURES[name])


def test_shipped_request_is_answered_with_masks_like_pyfunc_predict_when_output_columns_are_optional(served):
    server, models = served
    package, model_dir = models["optional_outputs"]

    response = send_shipped_request(server.url, model_dir)

    assert response.form == "json"  # JSON has no NaN: the masks carry the missing rows
    expected = expected_example_tensors(package, model_dir)
    assert sorted(response.outputs) == sorted(expected) == ["city_2", "city_2__missing", "size_2", "size_2__missing"]
    comparison = compare(expected, response.outputs)
    assert all(result["equal"] for result in comparison.values()), comparison
    assert response.outputs["size_2__missing"].tolist() == [False, True, False]
