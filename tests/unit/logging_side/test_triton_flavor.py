"""The ``triton`` flavor: ``mlflow_triton.triton.log_model`` / ``save_model`` / ``load_model``.

Runs against a local sqlite tracking store (one per module) with one experiment per test,
so "nothing was logged" can be checked with ``mlflow.search_logged_models``.
"""

import inspect
import os
import pathlib
import tempfile
import urllib.parse
import uuid

import mlflow
import mlflow.models.model
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.models import Model
from sklearn.linear_model import LogisticRegression

from mlflow_triton import sklearn as mlflow_triton_sklearn
from mlflow_triton import triton
from mlflow_triton.errors import InvalidArgumentError
from tests.support.mlflow_server import file_tree, using_tracking, write_triton_repository

REJECTED_REGISTRY_NAME = "must-not-be-registered"


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tracking_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("tracking")
    with using_tracking(f"sqlite:///{root / 'mlflow.db'}"):
        yield root


def _new_experiment(tracking_root):
    name = f"exp-{uuid.uuid4().hex}"
    experiment_id = mlflow.create_experiment(name, artifact_location=(tracking_root / name).as_uri())
    mlflow.set_experiment(experiment_id=experiment_id)
    return experiment_id


@pytest.fixture
def experiment_id(tracking_root):
    experiment_id = _new_experiment(tracking_root)
    yield experiment_id
    while mlflow.active_run() is not None:
        mlflow.end_run()


@pytest.fixture
def logged_model_creations(monkeypatch):
    """Records every LoggedModel MLflow creates (``Model.log`` creates one before saving)."""
    calls = []
    create = mlflow.models.model._create_logged_model

    def recording(*args, **kwargs):
        calls.append(kwargs.get("name"))
        return create(*args, **kwargs)

    monkeypatch.setattr(mlflow.models.model, "_create_logged_model", recording)
    return calls


def _fitted_classifier():
    frame = pd.DataFrame({"sepal": [1.0, 2.0, 3.0, 4.0], "petal": [0.5, 1.5, 2.0, 3.5]})
    return LogisticRegression().fit(frame, [0, 1, 0, 1]), frame.iloc[:2]


# --- the public signature -----------------------------------------------------------------------


def test_log_model_has_exactly_the_documented_parameters():
    parameters = inspect.signature(triton.log_model).parameters

    assert [(p.name, p.kind, p.default) for p in parameters.values()] == [
        ("triton_model_path", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("name", inspect.Parameter.POSITIONAL_OR_KEYWORD, "triton-model"),
        ("registered_model_name", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("await_registration_for", inspect.Parameter.POSITIONAL_OR_KEYWORD, 300),
        ("run_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("metadata", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
    ]


def test_flavor_module_exports_the_documented_api():
    assert {"FLAVOR_NAME", "load_model", "log_model", "save_model"} <= set(triton.__all__)
    assert all(hasattr(triton, name) for name in triton.__all__)
    assert triton.FLAVOR_NAME == "triton"


# --- accepted directories -----------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1", "12"])
def test_check_model_directory_accepts_a_positive_numbered_version(tmp_path, version):
    (tmp_path / "model" / version).mkdir(parents=True)
    (tmp_path / "model" / "0").mkdir()

    assert triton.check_model_directory(tmp_path / "model") == (tmp_path / "model").resolve()


def test_log_model_copies_the_directory_and_records_the_flavor(tmp_path, experiment_id, workspace):
    source = write_triton_repository(tmp_path, "iris_classifier")

    info = triton.log_model(source, metadata={"owner": "tests"})

    assert info.flavors["triton"] == {"data": "model/iris_classifier", "model_name": "iris_classifier"}
    assert info.registered_model_version is None
    assert info.metadata == {"owner": "tests"}
    assert file_tree(triton.load_model(info.model_uri)) == file_tree(source)
    assert list(workspace.iterdir()) == []


def test_log_model_registers_a_version_when_registered_model_name_is_given(tmp_path, experiment_id):
    source = write_triton_repository(tmp_path)
    name = f"reg-{uuid.uuid4().hex[:8]}"

    info = triton.log_model(source, name="serving", registered_model_name=name)

    assert info.registered_model_version == 1
    assert MlflowClient().get_model_version(name, "1").source == info.model_uri


# --- rejections: a clear message and nothing logged --------------------------------------------


def _missing(tmp_path):
    return tmp_path / "does-not-exist"


def _a_file(tmp_path):
    path = tmp_path / "config.pbtxt"
    path.write_text('name: "x"\n')
    return path


def _with_entries(*entries):
    """A directory holding the given version-like entries: ``"name/"`` a directory, ``"name"`` a file."""

    def build(tmp_path):
        root = tmp_path / "model"
        root.mkdir()
        (root / "config.pbtxt").write_text('name: "model"\n')
        for entry in entries:
            if entry.endswith("/"):
                (root / entry).mkdir()
                (root / entry / "model.py").write_text("pass\n")
            else:
                (root / entry).write_text("not a directory\n")
        return root

    return build


def _with_link(kind):
    def build(tmp_path):
        root = write_triton_repository(tmp_path, "model")
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("outside\n")
        if kind == "file":
            (root / "1" / "linked.txt").symlink_to(outside / "secret.txt")
        elif kind == "directory":
            (root / "3" / "assets" / "linked").symlink_to(outside, target_is_directory=True)
        elif kind == "dangling":
            (root / "1" / "dangling").symlink_to(tmp_path / "nowhere")
        elif kind == "version":
            (root / "7").symlink_to(outside, target_is_directory=True)
        elif kind == "root":
            link = tmp_path / "model-link"
            link.symlink_to(root, target_is_directory=True)
            return link
        return root

    return build


def _with_fifo(where):
    def build(tmp_path):
        root = write_triton_repository(tmp_path, "model")
        os.mkfifo(root / where)
        return root

    return build


def _named(name):
    def build(tmp_path):
        return write_triton_repository(tmp_path, name)

    return build


REJECTIONS = {
    "missing-directory": (_missing, "is not an existing directory"),
    "a-file-not-a-directory": (_a_file, "is not an existing directory"),
    "no-version-at-all": (_with_entries(), "has no numbered version directory"),
    "version-0": (_with_entries("0/"), "has no numbered version directory"),
    "version-v1": (_with_entries("v1/"), "has no numbered version directory"),
    "version-01a": (_with_entries("01a/"), "has no numbered version directory"),
    "version-leading-zero-01": (_with_entries("01/"), "has no numbered version directory"),
    "version-negative": (_with_entries("-1/"), "has no numbered version directory"),
    "version-non-ascii-digit": (_with_entries("\u0661/"), "has no numbered version directory"),
    "a-file-named-1": (_with_entries("1"), "has no numbered version directory"),
    "all-invalid-together": (_with_entries("0/", "v1/", "01a/", "01/", "1"), "has no numbered version directory"),
    "symlink-to-file-inside": (_with_link("file"), "must not contain symbolic links"),
    "symlink-to-directory-inside": (_with_link("directory"), "must not contain symbolic links"),
    "dangling-symlink-inside": (_with_link("dangling"), "must not contain symbolic links"),
    "symlinked-version-directory": (_with_link("version"), "must not contain symbolic links"),
    "the-directory-is-a-symlink": (_with_link("root"), "must not contain symbolic links"),
    "fifo-in-a-version": (_with_fifo("1/pipe"), r"only regular files and directories; .*pipe' is a named pipe"),
    "fifo-at-the-top": (_with_fifo("pipe"), r"only regular files and directories; .*pipe' is a named pipe"),
    "name-with-a-newline": (_named("bad\nname"), r"directory name 'bad\\nname' becomes Triton's model name"),
    "name-with-protobuf-text": (_named('q"name }{ backend: "x'), "becomes Triton's model name and is not a safe one"),
    "name-starting-with-a-dot": (_named(".hidden_model"), "becomes Triton's model name and is not a safe one"),
    "name-starting-with-a-dash": (_named("-model"), "becomes Triton's model name and is not a safe one"),
    "name-with-dot-dot": (_named("a..b"), "becomes Triton's model name and is not a safe one"),
    "name-with-non-ascii": (_named("mod\u00e8le"), "becomes Triton's model name and is not a safe one"),
    "name-too-long": (_named("m" * 129), "at most 128 characters; rename the directory"),
}


@pytest.mark.parametrize(("build", "message"), REJECTIONS.values(), ids=REJECTIONS.keys())
def test_log_model_rejects_and_logs_nothing_when_directory_is_invalid(
    tmp_path, experiment_id, workspace, logged_model_creations, build, message
):
    source = build(tmp_path)

    with mlflow.start_run() as run:
        with pytest.raises(InvalidArgumentError, match=message):
            triton.log_model(source, registered_model_name=REJECTED_REGISTRY_NAME)

    assert logged_model_creations == []  # validated before Model.log created a LoggedModel
    assert mlflow.search_logged_models(experiment_ids=[experiment_id], output_format="list") == []
    assert MlflowClient().search_model_versions(f"name='{REJECTED_REGISTRY_NAME}'") == []
    assert MlflowClient().search_registered_models(f"name='{REJECTED_REGISTRY_NAME}'") == []
    assert MlflowClient().get_run(run.info.run_id).outputs.model_outputs == []
    assert list(workspace.iterdir()) == []


@pytest.mark.parametrize(("build", "message"), REJECTIONS.values(), ids=REJECTIONS.keys())
def test_save_model_rejects_and_writes_nothing_when_directory_is_invalid(tmp_path, build, message):
    source = build(tmp_path)
    destination = tmp_path / "out" / "mlflow-model"
    before = sorted(p.name for p in tmp_path.iterdir())

    with pytest.raises(InvalidArgumentError, match=message):
        triton.save_model(source, destination)

    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_log_model_reaches_model_log_only_after_validation(tmp_path, experiment_id, logged_model_creations):
    """The spy sees valid calls, so an empty record above really means 'never reached'."""
    triton.log_model(write_triton_repository(tmp_path), name="valid")

    assert logged_model_creations == ["valid"]


@pytest.mark.parametrize("inside", [".", "mlflow-model", "1/mlflow-model", "3/assets/deeper/mlflow-model"])
def test_save_model_rejects_and_writes_nothing_when_destination_is_inside_the_source(tmp_path, inside):
    source = write_triton_repository(tmp_path)
    before = file_tree(source)
    listing = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))

    with pytest.raises(InvalidArgumentError, match="lies inside the Triton model directory"):
        triton.save_model(source, source / inside)

    assert file_tree(source) == before
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == listing


def test_log_model_rejects_and_logs_nothing_when_tmpdir_is_inside_the_source(
    tmp_path, experiment_id, logged_model_creations, monkeypatch
):
    source = write_triton_repository(tmp_path)
    (source / "scratch").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(source / "scratch"))

    with pytest.raises(InvalidArgumentError, match="TMPDIR .* lies inside the Triton model directory"):
        triton.log_model(source)

    assert logged_model_creations == []
    assert mlflow.search_logged_models(experiment_ids=[experiment_id], output_format="list") == []
    assert list((source / "scratch").iterdir()) == []


def test_save_model_rejects_when_destination_exists(tmp_path):
    source = write_triton_repository(tmp_path)
    (tmp_path / "taken").mkdir()

    with pytest.raises(InvalidArgumentError, match="already exists"):
        triton.save_model(source, tmp_path / "taken")


def test_save_model_writes_the_flavor_and_an_exact_copy_without_staging_leftovers(tmp_path):
    source = write_triton_repository(tmp_path, "iris_classifier")
    destination = tmp_path / "out" / "mlflow-model"

    triton.save_model(source, destination)

    assert Model.load(str(destination / "MLmodel")).flavors["triton"] == {
        "data": "model/iris_classifier",
        "model_name": "iris_classifier",
    }
    assert file_tree(destination / "model" / "iris_classifier") == file_tree(source)
    assert sorted(os.listdir(tmp_path / "out")) == ["mlflow-model"]


def test_save_model_neither_reuses_nor_deletes_a_stale_staging_directory(tmp_path):
    source = write_triton_repository(tmp_path, "iris_classifier")
    stale = tmp_path / ".mlflow-model.staging" / "model" / "iris_classifier"
    stale.mkdir(parents=True)
    (stale / "partial").write_text("left by a killed process\n")

    triton.save_model(source, tmp_path / "mlflow-model")

    assert file_tree(tmp_path / "mlflow-model" / "model" / "iris_classifier") == file_tree(source)
    assert file_tree(tmp_path / ".mlflow-model.staging") == {
        "model/iris_classifier/partial": b"left by a killed process\n"
    }


def test_save_model_creates_the_model_directory_with_default_permissions(tmp_path):
    source = write_triton_repository(tmp_path)
    (tmp_path / "reference").mkdir()

    triton.save_model(source, tmp_path / "mlflow-model")

    assert (tmp_path / "mlflow-model").stat().st_mode == (tmp_path / "reference").stat().st_mode


# --- load_model for every URI kind and both kinds of artifact -----------------------------------


@pytest.fixture(scope="module")
def logged(tracking_root, tmp_path_factory):
    """Both kinds of artifact, each logged in a run and registered with alias ``champion``."""
    _new_experiment(tracking_root)
    source = write_triton_repository(tmp_path_factory.mktemp("source"), "iris_classifier")
    classifier, example = _fitted_classifier()
    suffix = uuid.uuid4().hex[:8]
    artifacts = {}
    with mlflow.start_run() as run:
        info = triton.log_model(source, name="existing", registered_model_name=f"existing-{suffix}")
        artifacts["existing-directory"] = (run.info.run_id, "existing", info, f"existing-{suffix}")
        info = mlflow_triton_sklearn.log_model(
            classifier, input_example=example, name="classifier", registered_model_name=f"sklearn-{suffix}"
        )
        artifacts["sklearn-wrapper"] = (run.info.run_id, "classifier", info, f"sklearn-{suffix}")
    client = MlflowClient()
    for _, _, info, registered in artifacts.values():
        client.set_registered_model_alias(registered, "champion", info.registered_model_version)
    return source, artifacts


URI_KINDS = {
    "run": lambda run_id, name, info, registered: f"runs:/{run_id}/{name}",
    "logged-model": lambda run_id, name, info, registered: info.model_uri,
    "registry-version": lambda run_id, name, info, registered: f"models:/{registered}/1",
    "registry-alias": lambda run_id, name, info, registered: f"models:/{registered}@champion",
}


@pytest.mark.parametrize("uri_kind", URI_KINDS)
def test_load_model_returns_the_existing_directory_for_every_uri_kind(logged, uri_kind):
    source, artifacts = logged

    repository = triton.load_model(URI_KINDS[uri_kind](*artifacts["existing-directory"]))

    assert repository.name == "iris_classifier"
    assert file_tree(repository) == file_tree(source)


@pytest.mark.parametrize("uri_kind", URI_KINDS)
def test_load_model_returns_the_generated_repository_for_every_uri_kind(logged, uri_kind):
    _, artifacts = logged
    reference = triton.load_model(artifacts["sklearn-wrapper"][2].model_uri)

    repository = triton.load_model(URI_KINDS[uri_kind](*artifacts["sklearn-wrapper"]))

    assert repository.parent.name == "model_repository"
    assert repository.name == artifacts["sklearn-wrapper"][2].flavors["triton"]["model_name"]
    files = file_tree(repository)
    assert {"config.pbtxt", "1/model.py", "1/artifact/MLmodel"} <= set(files)
    assert files == file_tree(reference)


# --- load_model refusals ------------------------------------------------------------------------


def _local_model(tmp_path, data, make_target=True):
    model_dir = tmp_path / "local-model"
    model_dir.mkdir()
    Model().add_flavor("triton", data=data, model_name="x").save(str(model_dir / "MLmodel"))
    if make_target:
        target = (model_dir / data) if data and not os.path.isabs(data) else None
        for directory in filter(None, [target, tmp_path / "x"]):
            (directory / "1").mkdir(parents=True, exist_ok=True)
    return model_dir


@pytest.mark.parametrize(
    "data",
    ["../x", "model/../../x", "", ".", "model/.."],
    ids=["parent", "dotdot-inside", "empty", "dot", "back-to-root"],
)
def test_load_model_refuses_a_data_path_that_escapes_the_model(tmp_path, data):
    model_dir = _local_model(tmp_path, data)

    with pytest.raises(InvalidArgumentError, match="data path .* escapes the model"):
        triton.load_model(str(model_dir))


def test_load_model_refuses_an_absolute_data_path(tmp_path):
    (tmp_path / "x" / "1").mkdir(parents=True)
    model_dir = _local_model(tmp_path, str(tmp_path / "x"), make_target=False)

    with pytest.raises(InvalidArgumentError, match="escapes the model"):
        triton.load_model(str(model_dir))


def test_load_model_refuses_a_data_path_that_escapes_through_a_symlink(tmp_path):
    (tmp_path / "x" / "1").mkdir(parents=True)
    model_dir = _local_model(tmp_path, "model/x", make_target=False)
    (model_dir / "model").mkdir()
    (model_dir / "model" / "x").symlink_to(tmp_path / "x", target_is_directory=True)

    with pytest.raises(InvalidArgumentError, match="escapes the model"):
        triton.load_model(str(model_dir))


def test_load_model_refuses_a_model_without_triton_flavor(tmp_path):
    model_dir = tmp_path / "no-flavor"
    model_dir.mkdir()
    Model().add_flavor("python_function", loader_module="x").save(str(model_dir / "MLmodel"))

    with pytest.raises(InvalidArgumentError, match="has no 'triton' flavor; flavors: python_function"):
        triton.load_model(str(model_dir))


def test_load_model_refuses_a_missing_data_directory(tmp_path):
    model_dir = _local_model(tmp_path, "model/x", make_target=False)

    with pytest.raises(InvalidArgumentError, match="Triton model directory 'model/x' is missing"):
        triton.load_model(str(model_dir))


def test_load_model_returns_the_directory_of_a_local_model(tmp_path):
    source = write_triton_repository(tmp_path, "local")
    triton.save_model(source, tmp_path / "saved")

    repository = triton.load_model(str(tmp_path / "saved"))

    assert repository == (tmp_path / "saved" / "model" / "local").resolve()
    assert file_tree(repository) == file_tree(source)


# --- a failure inside Model.log leaves no LoggedModel and no empty registered model --------------


class InjectedFault(Exception):
    """Raised by a patched MLflow step; nothing else raises it."""


def _failing(error):
    def fail(*args, **kwargs):
        raise error

    return fail


@pytest.mark.parametrize("registered_model_name", ["triton-faulty", "it's-a-model", 'say "hi"', "back\\slash\\"])
@pytest.mark.parametrize("step", ["artifact-upload", "registry-version"])
def test_log_model_leaves_no_logged_or_registered_model_when_model_log_fails_after_creating_one(
    tmp_path, experiment_id, workspace, logged_model_creations, monkeypatch, step, registered_model_name
):
    source = write_triton_repository(tmp_path)
    if step == "artifact-upload":
        monkeypatch.setattr(MlflowClient, "log_model_artifacts", _failing(InjectedFault(step)))
    else:
        monkeypatch.setattr(MlflowClient, "_create_model_version", _failing(InjectedFault(step)))

    with pytest.raises(InjectedFault, match=step):
        triton.log_model(source, registered_model_name=registered_model_name)

    assert logged_model_creations == ["triton-model"]  # Model.log did create one ...
    assert mlflow.search_logged_models(experiment_ids=[experiment_id], output_format="list") == []  # ... deleted
    assert [m.name for m in MlflowClient().search_registered_models() if m.name == registered_model_name] == []
    assert list(workspace.iterdir()) == []


# --- load_model: the flavor's empty_directories ------------------------------------------------


def _tree_with_directories(root):
    """``{relative path: bytes, or None for a directory}`` of everything below ``root``."""
    return {
        path.relative_to(root).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in sorted(pathlib.Path(root).rglob("*"))
    }


def _ensemble(parent, name="ensemble"):
    """A Triton ensemble directory: config.pbtxt and an empty version directory ``1/``."""
    source = pathlib.Path(parent) / name
    (source / "1").mkdir(parents=True)
    (source / "config.pbtxt").write_text(f'name: "{name}"\nplatform: "ensemble"\n')
    return source


def _stored_model_directory(info):
    """The LoggedModel's artifact directory inside the local artifact store."""
    return pathlib.Path(urllib.parse.urlparse(mlflow.get_logged_model(info.model_id).artifact_location).path)


@pytest.mark.parametrize(
    "listed",
    ["1", ["1", 2], [""], {"1": True}, [["1"]]],
    ids=["a-string", "a-non-string-entry", "an-empty-entry", "a-mapping", "a-nested-list"],
)
def test_load_model_refuses_and_creates_nothing_when_empty_directories_is_not_a_list_of_paths(tmp_path, listed):
    model_dir = tmp_path / "local-model"
    (model_dir / "model" / "x" / "2").mkdir(parents=True)
    Model().add_flavor("triton", data="model/x", model_name="x", empty_directories=listed).save(
        str(model_dir / "MLmodel")
    )
    before = _tree_with_directories(model_dir)

    with pytest.raises(InvalidArgumentError, match="empty_directories must be a list of non-empty relative paths"):
        triton.load_model(str(model_dir))

    assert _tree_with_directories(model_dir) == before


def test_load_model_refuses_an_empty_directory_that_escapes_the_model(tmp_path):
    model_dir = tmp_path / "local-model"
    (model_dir / "model" / "x" / "1").mkdir(parents=True)
    Model().add_flavor("triton", data="model/x", model_name="x", empty_directories=["../../escaped"]).save(
        str(model_dir / "MLmodel")
    )

    with pytest.raises(InvalidArgumentError, match="empty directory '../../escaped' escapes the model"):
        triton.load_model(str(model_dir))

    assert not (tmp_path / "escaped").exists()


# --- load_model never writes into a local store; dst_path gives a copy to serve -----------------


def test_load_model_returns_a_copy_under_dst_path_with_the_empty_directories(tmp_path, experiment_id):
    info = triton.log_model(_ensemble(tmp_path))
    stored = _stored_model_directory(info)
    before = _tree_with_directories(stored)

    repository = triton.load_model(info.model_uri, dst_path=tmp_path / "serve")

    assert repository == (tmp_path / "serve" / "model" / "ensemble").resolve()
    assert _tree_with_directories(repository) == {
        "1": None,
        "config.pbtxt": b'name: "ensemble"\nplatform: "ensemble"\n',
    }
    (repository / "1" / "__pycache__").mkdir()  # what Triton writes when it imports a model.py
    assert _tree_with_directories(stored) == before


def test_load_model_without_dst_path_recreates_missing_empty_directories_in_a_copy_not_in_the_store(
    tmp_path, experiment_id
):
    info = triton.log_model(_ensemble(tmp_path))
    stored = _stored_model_directory(info)
    (stored / "model" / "ensemble" / "1").rmdir()  # as in a store that keeps files only
    before = _tree_with_directories(stored)

    repository = triton.load_model(info.model_uri)

    assert not repository.is_relative_to(stored.resolve())
    assert _tree_with_directories(repository) == {
        "1": None,
        "config.pbtxt": b'name: "ensemble"\nplatform: "ensemble"\n',
    }
    assert _tree_with_directories(stored) == before


@pytest.mark.parametrize("uri_kind", URI_KINDS)
def test_load_model_without_dst_path_writes_nothing_into_a_local_store_for_every_uri_kind(
    tmp_path, experiment_id, uri_kind
):
    registered = f"ensemble-{uuid.uuid4().hex[:8]}"
    with mlflow.start_run() as run:
        info = triton.log_model(_ensemble(tmp_path), name="ensemble-model", registered_model_name=registered)
    MlflowClient().set_registered_model_alias(registered, "champion", info.registered_model_version)
    stored = _stored_model_directory(info)
    before = _tree_with_directories(stored), {path: path.stat().st_mtime_ns for path in [stored, *stored.rglob("*")]}

    repository = triton.load_model(URI_KINDS[uri_kind](run.info.run_id, "ensemble-model", info, registered))

    assert _tree_with_directories(repository) == {
        "1": None,
        "config.pbtxt": b'name: "ensemble"\nplatform: "ensemble"\n',
    }
    assert (
        _tree_with_directories(stored),
        {path: path.stat().st_mtime_ns for path in [stored, *stored.rglob("*")]},
    ) == before
