"""Log, register and load through a real MLflow tracking server.

The server (``tests/support/mlflow_server.py``) keeps its sqlite store and its artifacts
in a temporary directory and serves the artifacts through its proxy, so every upload and
download below crosses HTTP (``mlflow-artifacts:`` URIs), as with a remote team server.
"""

import json
import uuid

import mlflow
import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from sklearn.linear_model import LogisticRegression

from mlflow_triton import sklearn as mlflow_triton_sklearn
from mlflow_triton import triton
from mlflow_triton.local._compare import differences
from tests.support import tiny_models
from tests.support.mlflow_server import file_tree, mlflow_server, using_tracking, write_triton_repository  # noqa: F401
from tests.support.oracle import expected_example_tensors

pytestmark = pytest.mark.mlflow_server


@pytest.fixture(scope="module")
def server(mlflow_server):  # noqa: F811
    with using_tracking(mlflow_server.url):
        mlflow.set_experiment(f"server-{uuid.uuid4().hex}")
        yield mlflow_server


def _registered_name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def logged(server, tmp_path_factory):
    """Both kinds of artifact, logged in one run, registered, each with alias ``champion``."""
    source = write_triton_repository(tmp_path_factory.mktemp("source"), "iris_classifier")
    frame = pd.DataFrame({"sepal": [1.0, 2.0, 3.0, 4.0], "petal": [0.5, 1.5, 2.0, 3.5]})
    classifier = LogisticRegression().fit(frame, [0, 1, 0, 1])
    existing, generated = _registered_name("existing"), _registered_name("sklearn")
    with mlflow.start_run() as run:
        existing_info = triton.log_model(source, name="existing", registered_model_name=existing)
        sklearn_info = mlflow_triton_sklearn.log_model(
            classifier,
            input_example=frame.iloc[:2],
            name="classifier",
            registered_model_name=generated,
            pyfunc_predict_fn="predict_proba",
        )
    client = MlflowClient()
    client.set_registered_model_alias(existing, "champion", "1")
    client.set_registered_model_alias(generated, "champion", "1")
    return {
        "source": source,
        "frame": frame,
        "classifier": classifier,
        "existing-directory": (run.info.run_id, "existing", existing_info, existing),
        "sklearn-wrapper": (run.info.run_id, "classifier", sklearn_info, generated),
    }


URI_KINDS = {
    "run": lambda run_id, name, info, registered: f"runs:/{run_id}/{name}",
    "logged-model": lambda run_id, name, info, registered: info.model_uri,
    "registry-version": lambda run_id, name, info, registered: f"models:/{registered}/1",
    "registry-alias": lambda run_id, name, info, registered: f"models:/{registered}@champion",
}


def test_artifacts_are_stored_through_the_server_proxy(server, logged):
    for kind in ("existing-directory", "sklearn-wrapper"):
        info = logged[kind][2]

        location = mlflow.get_logged_model(info.model_id).artifact_location

        assert location.startswith("mlflow-artifacts:/"), location
        stored = sorted(server.artifacts.rglob("MLmodel"))
        assert any(info.model_id in str(path) for path in stored), (info.model_id, stored)


def test_existing_directory_round_trips_byte_identical_through_the_registry(server, logged):
    registered = logged["existing-directory"][3]

    repository = triton.load_model(f"models:/{registered}/1")

    assert not repository.is_relative_to(server.root)  # downloaded, not read from the server's disk
    assert repository.name == "iris_classifier"
    assert sorted(file_tree(repository)) == sorted(file_tree(logged["source"]))
    assert file_tree(repository) == file_tree(logged["source"])


def test_registration_through_the_server_creates_version_1_from_the_logged_model(server, logged):
    for kind in ("existing-directory", "sklearn-wrapper"):
        _, _, info, registered = logged[kind]

        version = MlflowClient().get_model_version_by_alias(registered, "champion")

        assert (version.version, version.source, str(info.registered_model_version)) == ("1", info.model_uri, "1")


@pytest.mark.parametrize("uri_kind", URI_KINDS)
def test_load_model_returns_the_existing_directory_through_the_server(logged, uri_kind):
    repository = triton.load_model(URI_KINDS[uri_kind](*logged["existing-directory"]))

    assert file_tree(repository) == file_tree(logged["source"])


@pytest.mark.parametrize("uri_kind", URI_KINDS)
def test_load_model_returns_the_generated_repository_through_the_server(logged, uri_kind):
    info = logged["sklearn-wrapper"][2]
    reference = file_tree(triton.load_model(info.model_uri))

    repository = triton.load_model(URI_KINDS[uri_kind](*logged["sklearn-wrapper"]))

    assert repository.parent.name == "model_repository"
    assert repository.name == info.flavors["triton"]["model_name"]
    files = file_tree(repository)
    assert {
        "config.pbtxt",
        "requirements.txt",
        "validation.json",
        "request.json",
        "1/model.py",
        "1/artifact/MLmodel",
    } <= set(files)
    assert files == reference


def test_sklearn_wrapper_native_flavor_predicts_after_the_server_round_trip(logged):
    registered = logged["sklearn-wrapper"][3]

    prediction = mlflow.pyfunc.load_model(f"models:/{registered}@champion").predict(logged["frame"])

    np.testing.assert_allclose(prediction, logged["classifier"].predict_proba(logged["frame"]))


# --- PyTorch and Transformers wrappers ----------------------------------------------------------


def _log_pytorch(registered):
    from mlflow_triton import pytorch as mlflow_triton_pytorch

    return mlflow_triton_pytorch.log_model(
        tiny_models.shared_tiny_mlp(),
        input_example=tiny_models.mlp_example(),
        name="network",
        code_paths=[str(tiny_models.CUSTOM_NET_DIR)],
        architecture_init_kwargs=tiny_models.MLP_SIZES,
        registered_model_name=registered,
    )


def _log_transformers(registered):
    from mlflow_triton import transformers as mlflow_triton_transformers

    return mlflow_triton_transformers.log_model(
        tiny_models.shared_text_classification_pipeline(),
        input_example=tiny_models.TEXT_EXAMPLE,
        name="classifier",
        registered_model_name=registered,
    )


@pytest.mark.parametrize("log", [_log_pytorch, _log_transformers], ids=["pytorch", "transformers"])
def test_framework_wrapper_repository_fetched_from_the_server_answers_like_pyfunc_with_the_fake_pb_utils(server, log):
    """Logged and registered through the server, fetched back, answered by its model.py in this process.

    The generated model.py runs under the in-process fake ``triton_python_backend_utils`` on CPU (a real
    Triton serves these examples in ``tests/e2e/test_runner.py``); its answer to the shipped request is
    compared with ``pyfunc.predict`` of the saved example, encoded independently (``tests/support/oracle.py``).
    """
    registered = _registered_name(log.__name__.removeprefix("_log_"))
    info = log(registered)

    repository = triton.load_model(f"models:/{registered}/1")

    files = file_tree(repository)
    assert {"config.pbtxt", "1/model.py", "1/artifact/MLmodel", "1/artifact/architecture.json"} <= set(files)
    assert files == file_tree(triton.load_model(info.model_uri))
    answer = tiny_models.serve_request(repository)
    assert {name: list(array.shape) for name, array in answer.items()} == _validated_shapes(repository)
    assert differences(expected_example_tensors(repository / "1" / "artifact", repository), answer) == []


def _validated_shapes(repository):
    return json.loads((repository / "validation.json").read_text())["tensor_mapping"]["outputs"]


def test_sklearn_wrapper_repository_serves_after_the_server_round_trip(logged):
    repository = triton.load_model(f"models:/{logged['sklearn-wrapper'][3]}@champion")

    outputs = tiny_models.serve_request(repository)

    [probabilities] = outputs.values()
    np.testing.assert_allclose(probabilities, logged["classifier"].predict_proba(logged["frame"].iloc[:2]))


# --- empty directories (the proxy stores files only; the flavor lists them) -----------------------


def test_empty_version_directory_survives_the_server_round_trip(server, tmp_path):
    source = tmp_path / "ensemble"
    (source / "1").mkdir(parents=True)
    (source / "config.pbtxt").write_text('name: "ensemble"\nplatform: "ensemble"\n')
    info = triton.log_model(source)

    repository = triton.load_model(info.model_uri)

    assert (repository / "1").is_dir()
