"""A failure at any step of the packaging flow leaves TMPDIR and the tracking store clean.

Faults are injected at each step of the packaging flow (``_packaging``): the example prediction,
the native save, the ``1/artifact`` copy, the saved-artifact check, the
repository files, the triton flavor, the rename and, inside ``Model.log``, the
artifact upload and the registration. After each, TMPDIR is empty, no LoggedModel
shows in ``mlflow.search_logged_models`` (a deleted one must not), the
Registry has no version and the artifact store holds no file.
"""

import functools
import os
import shutil

import mlflow
import numpy as np
import pytest
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema, TensorSpec
from sklearn.base import BaseEstimator, ClassifierMixin

from mlflow_triton import _repository_files, _saved_check, sklearn
from mlflow_triton.errors import ValidationError


class InjectedFault(Exception):
    """The error a patched step raises; nothing in the flow raises it by itself."""


class _UnpredictableClassifier(ClassifierMixin, BaseEstimator):
    def predict(self, X):
        raise RuntimeError("cannot predict this input")


def _inject(monkeypatch, owner, attribute, error, *, after_original=True):
    """Make ``owner.attribute`` raise ``error``, by default after the original has done its work."""
    original = getattr(owner, attribute)

    @functools.wraps(original)
    def failing(*args, **kwargs):
        if after_original:
            original(*args, **kwargs)
        raise error

    monkeypatch.setattr(owner, attribute, failing)


def _copy_first_entry_then_fail(source, destination):
    """A ``1/artifact`` copy that runs out of space after the first file."""
    destination.mkdir(parents=True)
    first = sorted(p for p in source.iterdir() if p.is_file())[0]
    shutil.copy2(first, destination / first.name)
    raise InjectedFault("No space left on device while copying 1/artifact")


@pytest.fixture
def assert_clean(tracking_store, workspace):
    def check():
        assert list(workspace.iterdir()) == []
        assert tracking_store.logged_models() == []
        assert tracking_store.model_versions() == []
        assert tracking_store.artifact_files() == []  # a deleted LoggedModel's uploads go with it

    return check


@pytest.fixture
def log(tracking_store, workspace, fitted_pipeline, example_frame):
    def call(**overrides):
        arguments = {"input_example": example_frame, "registered_model_name": "faulty", **overrides}
        return sklearn.log_model(fitted_pipeline, **arguments)

    return call


# -- before Model.log: the prepared package ------------------------------------------------------


@pytest.mark.parametrize("with_signature", [False, True], ids=["inferred-signature", "explicit-signature"])
def test_log_model_leaves_nothing_behind_when_the_example_prediction_raises(
    tracking_store, workspace, example_frame, assert_clean, with_signature
):
    signature = ModelSignature(
        inputs=Schema([ColSpec("double", "age"), ColSpec("string", "city"), ColSpec("long", "visits")]),
        outputs=Schema([TensorSpec(np.dtype("int64"), (-1,))]),
    )

    with pytest.raises(
        ValidationError, match=r"Prediction of the (decoded )?example failed: RuntimeError: cannot predict"
    ):
        sklearn.log_model(
            _UnpredictableClassifier(),
            input_example=example_frame,
            registered_model_name="faulty",
            signature=signature if with_signature else None,
        )

    assert_clean()
    tracking_store.assert_nothing_logged()


STEPS = {
    "native-save": lambda: (mlflow.sklearn, "save_model"),
    "repository-files": lambda: (_repository_files, "write_repository"),
    "triton-flavor": lambda: (_repository_files, "add_triton_flavor"),
    "rename-into-place": lambda: (os, "rename"),
}


@pytest.mark.parametrize("step", list(STEPS))
def test_log_model_leaves_nothing_behind_when_a_packaging_step_raises(
    monkeypatch, log, assert_clean, tracking_store, step
):
    owner, attribute = STEPS[step]()
    _inject(monkeypatch, owner, attribute, InjectedFault(f"{step} failed"), after_original=step != "rename-into-place")

    with pytest.raises(InjectedFault, match=f"^{step} failed$"):
        log()

    assert_clean()
    tracking_store.assert_nothing_logged()


def test_log_model_leaves_nothing_behind_when_the_1_artifact_copy_raises_midway(
    monkeypatch, log, assert_clean, tracking_store
):
    monkeypatch.setattr(_repository_files, "copy_native_package", _copy_first_entry_then_fail)

    with pytest.raises(InjectedFault, match="No space left on device while copying 1/artifact"):
        log()

    assert_clean()
    tracking_store.assert_nothing_logged()


def test_log_model_leaves_nothing_behind_when_the_saved_artifact_check_raises(
    monkeypatch, log, assert_clean, tracking_store
):
    _inject(
        monkeypatch,
        _saved_check,
        "predict_saved_artifact",
        ValidationError("validate_saved_model: the saved artifact could not be reloaded"),
        after_original=False,
    )

    with pytest.raises(ValidationError, match="validate_saved_model: the saved artifact could not be reloaded"):
        log(validate_saved_model=True)

    assert_clean()
    tracking_store.assert_nothing_logged()


def test_log_model_leaves_no_staging_directory_when_interrupted_mid_save(
    monkeypatch, log, assert_clean, tracking_store
):
    _inject(monkeypatch, _repository_files, "write_repository", KeyboardInterrupt())

    with pytest.raises(KeyboardInterrupt):
        log()

    assert_clean()
    tracking_store.assert_nothing_logged()


# -- inside Model.log ----------------------------------------------------------------------------


def test_log_model_deletes_its_logged_model_when_the_artifact_upload_raises(
    monkeypatch, log, assert_clean, tracking_store
):
    _inject(
        monkeypatch,
        mlflow.MlflowClient,
        "log_model_artifacts",
        InjectedFault("artifact store unreachable"),
        after_original=False,
    )

    with pytest.raises(InjectedFault, match="artifact store unreachable"):
        log()

    assert_clean()
    tracking_store.assert_nothing_logged()


def test_log_model_deletes_its_logged_model_when_interrupted_during_the_artifact_upload(
    monkeypatch, log, assert_clean, tracking_store
):
    _inject(monkeypatch, mlflow.MlflowClient, "log_model_artifacts", KeyboardInterrupt(), after_original=False)

    with pytest.raises(KeyboardInterrupt):
        log()

    assert_clean()
    tracking_store.assert_nothing_logged()


@pytest.mark.parametrize("registered_model_name", ["faulty", "it's-a-model", 'say "hi"', "both ' and \"", "trailing\\"])
def test_log_model_deletes_its_logged_and_registered_model_when_creating_the_registry_version_raises(
    monkeypatch, log, assert_clean, tracking_store, registered_model_name
):
    _inject(
        monkeypatch,
        mlflow.MlflowClient,
        "_create_model_version",
        InjectedFault("registry unavailable"),
        after_original=False,
    )

    with pytest.raises(InjectedFault, match="registry unavailable"):
        log(registered_model_name=registered_model_name)

    assert_clean()
    assert tracking_store.registered_models() == []


def test_log_model_keeps_an_existing_registered_model_when_a_new_version_fails(
    monkeypatch, log, assert_clean, tracking_store
):
    tracking_store.client().create_registered_model("faulty")
    _inject(
        monkeypatch,
        mlflow.MlflowClient,
        "_create_model_version",
        InjectedFault("registry unavailable"),
        after_original=False,
    )

    with pytest.raises(InjectedFault, match="registry unavailable"):
        log()

    assert_clean()
    assert [m.name for m in tracking_store.registered_models()] == ["faulty"]


@pytest.mark.parametrize("registered_before", [False, True], ids=["new-registered-model", "existing-one"])
def test_log_model_deletes_the_version_it_registered_when_interrupted_after_the_registration(
    monkeypatch, log, assert_clean, tracking_store, registered_before
):
    if registered_before:
        tracking_store.client().create_registered_model("faulty")
    _inject(monkeypatch, mlflow.MlflowClient, "_create_model_version", KeyboardInterrupt())  # after the version exists

    with pytest.raises(KeyboardInterrupt):
        log()

    assert_clean()
    assert [m.name for m in tracking_store.registered_models()] == (["faulty"] if registered_before else [])
    assert tracking_store.client().search_model_versions("name = 'faulty'") == []


def test_log_model_deletes_its_logged_model_when_logging_into_a_run_raises(
    monkeypatch, log, assert_clean, tracking_store
):
    with mlflow.start_run() as run:
        pass
    _inject(
        monkeypatch,
        mlflow.MlflowClient,
        "log_model_artifacts",
        InjectedFault("artifact store unreachable"),
        after_original=False,
    )

    with pytest.raises(InjectedFault, match="artifact store unreachable"):
        log(run_id=run.info.run_id, params={"alpha": 1})

    assert_clean()
    assert tracking_store.client().get_run(run.info.run_id).info.lifecycle_stage == "active"


def test_log_model_deletes_its_logged_model_when_linking_it_to_the_run_raises(
    monkeypatch, log, assert_clean, tracking_store
):
    # MLflow creates the LoggedModel, then links it to the run before the package is moved into place.
    with mlflow.start_run() as run:
        pass
    _inject(
        monkeypatch, mlflow.MlflowClient, "log_outputs", InjectedFault("run outputs rejected"), after_original=False
    )

    with pytest.raises(InjectedFault, match="run outputs rejected"):
        log(run_id=run.info.run_id)

    assert_clean()
    tracking_store.assert_nothing_logged()


def test_log_model_leaves_nothing_behind_when_the_run_id_is_unknown(log, assert_clean, tracking_store):
    with pytest.raises(mlflow.exceptions.MlflowException, match="0123456789abcdef0123456789abcdef"):
        log(run_id="0123456789abcdef0123456789abcdef")

    assert_clean()
    tracking_store.assert_nothing_logged()


# -- save_model to a local directory -------------------------------------------------------------


def test_save_model_leaves_neither_path_nor_staging_when_interrupted_mid_save(
    monkeypatch, tmp_path, workspace, fitted_pipeline, example_frame
):
    parent = tmp_path / "models"
    parent.mkdir()
    _inject(monkeypatch, _repository_files, "add_triton_flavor", KeyboardInterrupt())

    with pytest.raises(KeyboardInterrupt):
        sklearn.save_model(fitted_pipeline, parent / "classifier", input_example=example_frame)

    assert list(parent.iterdir()) == []
    assert list(workspace.iterdir()) == []


def test_save_model_leaves_neither_path_nor_staging_when_the_native_save_raises(
    monkeypatch, tmp_path, workspace, fitted_pipeline, example_frame
):
    parent = tmp_path / "models"
    parent.mkdir()
    _inject(monkeypatch, mlflow.sklearn, "save_model", InjectedFault("native save failed"))

    with pytest.raises(InjectedFault, match="native save failed"):
        sklearn.save_model(fitted_pipeline, parent / "classifier", input_example=example_frame)

    assert list(parent.iterdir()) == []
    assert list(workspace.iterdir()) == []


def test_save_model_removes_the_parents_it_created_when_the_native_save_raises(
    monkeypatch, tmp_path, workspace, fitted_pipeline, example_frame
):
    parent = tmp_path / "models"
    parent.mkdir()
    _inject(monkeypatch, mlflow.sklearn, "save_model", InjectedFault("native save failed"))

    with pytest.raises(InjectedFault, match="native save failed"):
        sklearn.save_model(fitted_pipeline, parent / "new" / "nested" / "classifier", input_example=example_frame)

    assert list(parent.iterdir()) == []
    assert list(workspace.iterdir()) == []
