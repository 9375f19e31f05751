"""``mlflow_triton.sklearn.save_model``: the logged layout, written to a new local directory."""

import pathlib
import re

import mlflow
import numpy as np
import pytest
from mlflow.models import Model

from mlflow_triton import sklearn, triton
from mlflow_triton.errors import InvalidArgumentError


def _tree(root):
    return {p.relative_to(root).as_posix() for p in pathlib.Path(root).rglob("*") if "__pycache__" not in p.parts}


def test_save_model_writes_the_logged_layout_when_path_is_new(tracking_store, tmp_path, fitted_pipeline, example_frame):
    path = tmp_path / "nested" / "classifier"

    sklearn.save_model(fitted_pipeline, path, input_example=example_frame, pyfunc_predict_fn="predict_proba")

    logged = sklearn.log_model(
        fitted_pipeline, input_example=example_frame, name="classifier", pyfunc_predict_fn="predict_proba"
    )
    logged_root = pathlib.Path(mlflow.artifacts.download_artifacts(logged.model_uri))
    assert _tree(path) == _tree(logged_root) - {"registered_model_meta"}  # MLflow's logging adds it
    assert {
        "MLmodel",
        "model.skops",
        "model_repository/classifier/config.pbtxt",
        "model_repository/classifier/request.json",
        "model_repository/classifier/requirements.txt",
        "model_repository/classifier/validation.json",
        "model_repository/classifier/1/model.py",
        "model_repository/classifier/1/artifact/MLmodel",
        "model_repository/classifier/1/artifact/model.skops",
    } <= _tree(path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["classifier"]


def test_save_model_keeps_native_and_triton_flavors_usable_when_saved(tmp_path, fitted_pipeline, example_frame):
    path = tmp_path / "classifier"

    sklearn.save_model(fitted_pipeline, path, input_example=example_frame, pyfunc_predict_fn="predict_proba")

    assert Model.load(str(path)).flavors["triton"]["data"] == "model_repository/classifier"
    assert triton.load_model(str(path)) == (path / "model_repository" / "classifier").resolve()
    np.testing.assert_allclose(
        mlflow.pyfunc.load_model(str(path)).predict(example_frame), fitted_pipeline.predict_proba(example_frame)
    )


@pytest.mark.parametrize("existing", ["empty-directory", "directory", "file"])
def test_save_model_refuses_and_leaves_it_untouched_when_path_exists(
    tmp_path, workspace, fitted_pipeline, example_frame, existing
):
    path = tmp_path / "classifier"
    if existing == "file":
        path.write_text("keep me")
    else:
        path.mkdir()
        if existing == "directory":
            (path / "notes.txt").write_text("keep me")
    before = sorted(p.name for p in tmp_path.iterdir())

    with pytest.raises(
        InvalidArgumentError, match=re.escape(f"path {str(path)!r} already exists; choose a new directory")
    ):
        sklearn.save_model(fitted_pipeline, path, input_example=example_frame)

    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert list(workspace.iterdir()) == []
    if existing == "file":
        assert path.read_text() == "keep me"
    else:
        assert sorted(p.name for p in path.iterdir()) == ([] if existing == "empty-directory" else ["notes.txt"])


def test_save_model_rejects_without_writing_when_input_example_is_missing(tmp_path, fitted_pipeline):
    with pytest.raises(InvalidArgumentError, match=r"^input_example is required"):
        sklearn.save_model(fitted_pipeline, tmp_path / "classifier", input_example=None)

    assert list(tmp_path.iterdir()) == []
