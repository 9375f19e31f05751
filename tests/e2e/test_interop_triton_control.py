"""Deployment interop: ``mlflow-triton-control`` reads the same ``triton`` flavor.

``mlflow_triton_control.triton.load_model(model_uri)`` must return the complete Triton
repository for artifacts written by this package (the sklearn wrapper and
``triton.log_model``), file for file and byte for byte what ``mlflow_triton.triton.load_model``
returns. The reverse holds too: a directory logged by Triton Control loads here.
Checked through a real MLflow server (proxied artifacts) and a local sqlite store.
"""

import uuid

import mlflow
import mlflow_triton_control.triton as control  # noqa: E402  (the tests extra installs it)
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from mlflow_triton import sklearn as mlflow_triton_sklearn
from mlflow_triton import triton
from tests.support.mlflow_server import file_tree, mlflow_server, using_tracking, write_triton_repository  # noqa: F401


def _log_sklearn(source_dir, registered):
    frame = pd.DataFrame({"sepal": [1.0, 2.0, 3.0, 4.0], "petal": [0.5, 1.5, 2.0, 3.5]})
    classifier = LogisticRegression().fit(frame, [0, 1, 0, 1])
    return mlflow_triton_sklearn.log_model(
        classifier, input_example=frame.iloc[:2], name="classifier", registered_model_name=registered
    )


def _log_existing(source_dir, registered):
    return triton.log_model(write_triton_repository(source_dir), name="existing", registered_model_name=registered)


LOGGERS = {"sklearn-wrapper": _log_sklearn, "existing-directory": _log_existing}


def _assert_same_repository(model_uri):
    ours = triton.load_model(model_uri)

    theirs = control.load_model(model_uri)

    assert theirs.name == ours.name
    assert sorted(file_tree(theirs)) == sorted(file_tree(ours))
    assert file_tree(theirs) == file_tree(ours)
    return ours, theirs


# --- through a real MLflow server ---------------------------------------------------------------


@pytest.fixture
def server(mlflow_server):  # noqa: F811
    with using_tracking(mlflow_server.url):
        mlflow.set_experiment(f"interop-{uuid.uuid4().hex}")
        yield mlflow_server


@pytest.mark.mlflow_server
@pytest.mark.parametrize("kind", LOGGERS)
def test_triton_control_loads_the_complete_repository_through_the_server(server, tmp_path, kind):
    registered = f"interop-{kind}-{uuid.uuid4().hex[:8]}"
    info = LOGGERS[kind](tmp_path, registered)

    for model_uri in (info.model_uri, f"models:/{registered}/1"):
        ours, theirs = _assert_same_repository(model_uri)
        assert ours != theirs  # two separate downloads, compared file by file
        assert {"config.pbtxt", "1/model.py"} <= set(file_tree(theirs))


@pytest.mark.mlflow_server
def test_a_directory_logged_by_triton_control_loads_here_through_the_server(server, tmp_path):
    source = write_triton_repository(tmp_path, "from_control")

    info = control.log_model(source, name="from-control")

    assert info.flavors["triton"] == {"data": "model/from_control", "model_name": "from_control"}
    assert file_tree(triton.load_model(info.model_uri)) == file_tree(source)


# --- through a local sqlite store ---------------------------------------------------------------


@pytest.fixture(scope="module")
def local_database(tmp_path_factory):
    return tmp_path_factory.mktemp("local-store") / "mlflow.db"


@pytest.fixture
def local_store(local_database, tmp_path):
    with using_tracking(f"sqlite:///{local_database}"):
        artifacts = (tmp_path / "artifacts").as_uri()
        mlflow.set_experiment(experiment_id=mlflow.create_experiment(uuid.uuid4().hex, artifact_location=artifacts))
        yield


@pytest.mark.parametrize("kind", LOGGERS)
def test_triton_control_loads_the_complete_repository_from_a_local_store(local_store, tmp_path, kind):
    registered = f"interop-{kind}-{uuid.uuid4().hex[:8]}"
    info = LOGGERS[kind](tmp_path, registered)

    for model_uri in (info.model_uri, f"models:/{registered}/1"):
        _assert_same_repository(model_uri)


def test_triton_control_and_this_package_write_the_same_flavor_entry(tmp_path):
    source = write_triton_repository(tmp_path, "same_flavor")
    triton.save_model(source, tmp_path / "ours")
    control.save_model(source, tmp_path / "theirs")

    ours = mlflow.models.Model.load(str(tmp_path / "ours" / "MLmodel")).flavors
    theirs = mlflow.models.Model.load(str(tmp_path / "theirs" / "MLmodel")).flavors

    assert ours == theirs == {"triton": {"data": "model/same_flavor", "model_name": "same_flavor"}}
    assert _without_mlmodel(tmp_path / "ours") == _without_mlmodel(tmp_path / "theirs")


def _without_mlmodel(root):
    """Every file but MLmodel, whose creation time differs."""
    return {path: data for path, data in file_tree(root).items() if path != "MLmodel"}
