"""Predictions that do not fit their declared outputs, on a real Triton 2.51: a 500 naming them, never a 200.

Issue #17.1: every value conversion the runtime refuses (``runtime/conversions.py``) is proven on the real
server, not only in unit tests with a fake ``triton_python_backend_utils``. Each model is a
``LookupEstimator`` (``tests/support/misfit_models``, travelling with ``code_paths``) logged with an
explicit signature: it predicts a value that fits the declared output for the input example -- logging
checks the example's prediction against the outputs and would refuse a misfit -- and the misfit for the
rows the test sends. One server holds every model.
"""

import http.client
import importlib.util
import json
import pathlib
import shutil
import sys
import time

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema, TensorSpec

from mlflow_triton import sklearn
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

MISFIT_MODELS_DIR = pathlib.Path(__file__).resolve().parents[1] / "support" / "misfit_models"
DOES_NOT_FIT = "The prediction does not fit the configured outputs: Tensor `output_0`: "


def objects(*items):
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


# name: (declared output, lookup table, rows sent, the rest of the error message). Row 0 is the input
# example's, and fits; the rows sent hold the misfit.
MISFITS = {
    "uint64_for_long": (
        ColSpec("long"),
        np.array([1, 2**63], dtype=np.uint64),
        [1],
        "element 0 (9223372036854775808) does not fit TYPE_INT64 (int64) unchanged",
    ),
    "float64_for_float16": (
        TensorSpec(np.dtype(np.float16), (-1,)),
        np.array([0.5, 1e6]),
        [0, 1],
        "element 1 (1000000.0) does not fit TYPE_FP16 (float16) unchanged",
    ),
    "int64_for_double": (
        ColSpec("double"),
        np.array([1, 2**53 + 1], dtype=np.int64),
        [1],
        "element 0 (9007199254740993) does not fit TYPE_FP64 (float64) unchanged",
    ),
    # Floats never become integers: every element is refused, so the message names the kind, not an index.
    "float_objects_for_long": (
        ColSpec("long"),
        objects(1, 0.7, 1.9),
        [1, 2],
        "cannot convert float values to TYPE_INT64 (int64)",
    ),
    "big_objects_for_integer": (
        ColSpec("integer"),
        objects(1, 2**40, 1),
        [1, 2],
        "element 0 (1099511627776) does not fit TYPE_INT32 (int32) unchanged",
    ),
    "none_for_boolean": (
        ColSpec("boolean"),
        objects(True, None),
        [0, 1],
        "element 1 is missing (None), not a number (TYPE_BOOL expected)",
    ),
    "text_for_long": (
        ColSpec("long"),
        objects(1, "1", "2"),
        [1, 2],
        "element 0 is a str, not a number (TYPE_INT64 expected)",
    ),
}


def lookup_estimator_class():
    """``misfit_models.lookup.LookupEstimator``, imported by its top-level name as Triton imports it."""
    if "misfit_models" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "misfit_models", MISFIT_MODELS_DIR / "__init__.py", submodule_search_locations=[str(MISFIT_MODELS_DIR)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["misfit_models"] = module
        spec.loader.exec_module(module)
    from misfit_models.lookup import LookupEstimator

    return LookupEstimator


@pytest.fixture(scope="module")
def misfit_server(tmp_path_factory):
    """(server, repository, {name: saved MLflow package}) with every model of MISFITS loaded."""
    root = tmp_path_factory.mktemp("misfits")
    repository = root / "repository"
    repository.mkdir()
    estimator = lookup_estimator_class()
    example = pd.DataFrame({"row": np.array([0], dtype=np.int64)})
    packages = {}
    started = time.monotonic()
    for name, (output, table, _, _) in MISFITS.items():
        signature = ModelSignature(Schema([ColSpec("long", "row")]), Schema([output]))
        package = root / "packages" / name
        sklearn.save_model(
            estimator(table=table),
            package,
            input_example=example,
            signature=signature,
            triton_model_name=name,
            code_paths=[str(MISFIT_MODELS_DIR)],
            serialization_format="cloudpickle",
        )
        shutil.move(str(package / "model_repository" / name), str(repository / name))
        packages[name] = package
    print(f"[timing] saving {len(MISFITS)} models: {time.monotonic() - started:.1f}s")

    started = time.monotonic()
    installation = TritonInstallation.bundled(progress=None)
    first = repository / next(iter(MISFITS)) / "requirements.txt"
    assert all((repository / name / "requirements.txt").read_text() == first.read_text() for name in MISFITS)
    env = ensure_serving_env(first, installation.serving_constraints, progress=None)
    with TritonServer(repository, list(MISFITS), installation=installation, serving_env=env) as server:
        print(f"[timing] server with {len(MISFITS)} models ready: {time.monotonic() - started:.1f}s")
        yield server, repository, packages


def post_rows(server, model, rows, binary_output):
    """POST a v2 JSON body with ``rows``; returns (HTTP status, parsed body). FP16 outputs are asked for as
    binary (Triton sends no FP16 as JSON), as the README tells a JSON client."""
    body = {"inputs": [{"name": "row", "datatype": "INT64", "shape": [len(rows)], "data": rows}]}
    if binary_output:
        body["outputs"] = [{"name": "output_0", "parameters": {"binary_data": True}}]
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    try:
        connection.request(
            "POST",
            f"/v2/models/{model}/infer",
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("name", MISFITS)
def test_real_triton_answers_500_naming_the_misfit_when_a_prediction_does_not_fit_its_declared_output(
    misfit_server, name
):
    server, _, packages = misfit_server
    _, table, rows, message = MISFITS[name]
    predicted = mlflow.pyfunc.load_model(str(packages[name])).predict(pd.DataFrame({"row": np.array(rows)}))
    assert np.asarray(predicted).tolist() == table[rows].tolist()  # what a 200 would have to carry unchanged

    status, content = post_rows(server, name, rows, binary_output=name == "float64_for_float16")

    assert status == 500, content[:500]
    assert json.loads(content)["error"] == DOES_NOT_FIT + message


@pytest.mark.parametrize("name", MISFITS)
def test_real_triton_answers_the_shipped_request_like_pyfunc_when_the_prediction_fits(misfit_server, name):
    server, repository, packages = misfit_server
    example = pd.DataFrame({"row": np.array([0], dtype=np.int64)})

    response = send_shipped_request(server.url, repository / name)

    expected = np.asarray(mlflow.pyfunc.load_model(str(packages[name])).predict(example))
    assert response.outputs["output_0"].tolist() == expected.tolist()
