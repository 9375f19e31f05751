"""Shared fixtures: a real local MLflow tracking store per test, an isolated TMPDIR, a tiny Pipeline.

Creating an MLflow sqlite database runs every schema migration (seconds), so one
empty database is migrated per session and each test gets a copy of it, with an
experiment whose artifacts live under the test's own ``tmp_path``.
"""

import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import tempfile

import mlflow
import mlflow.tracking.fluent
import pandas as pd
import pytest
from google.protobuf import json_format, text_format
from mlflow.tracking._tracking_service.utils import _use_tracking_uri
from tritonclient.grpc import model_config_pb2

from tests.support import fake_pb_utils
from tests.support.shipped_request import (  # noqa: F401  (re-exported for the unit tests)
    arrays_from_binary_request,
    arrays_from_json_request,
    read_headers_file,
)

EXAMPLE_ROWS = 3


@dataclasses.dataclass(frozen=True)
class TrackingStore:
    """A sqlite tracking store and registry whose experiment keeps its artifacts in ``artifacts``."""

    uri: str
    artifacts: pathlib.Path
    experiment_id: str

    @classmethod
    def create(cls, root, template):
        root.mkdir(parents=True, exist_ok=True)
        database = root / "mlflow.db"
        shutil.copyfile(template, database)
        uri = f"sqlite:///{database}"
        artifacts = root / "artifacts"
        client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
        experiment_id = client.create_experiment("tests", artifact_location=artifacts.as_uri())
        return cls(uri=uri, artifacts=artifacts, experiment_id=experiment_id)

    @contextlib.contextmanager
    def active(self):
        """Make this store MLflow's tracking URI, registry and active experiment; restore afterwards."""
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MLFLOW_TRACKING_URI", self.uri)
            patch.delenv("MLFLOW_REGISTRY_URI", raising=False)
            patch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
            patch.setenv("MLFLOW_EXPERIMENT_ID", self.experiment_id)
            patch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
            with _use_tracking_uri(self.uri):
                mlflow.set_experiment(experiment_id=self.experiment_id)
                yield self
                while mlflow.active_run() is not None:
                    mlflow.end_run()

    def client(self):
        return mlflow.MlflowClient(tracking_uri=self.uri, registry_uri=self.uri)

    def logged_models(self):
        """Every LoggedModel a search shows, across all experiments (deleted ones never show)."""
        experiment_ids = [e.experiment_id for e in self.client().search_experiments()]
        return mlflow.search_logged_models(experiment_ids=experiment_ids, output_format="list")

    def registered_models(self):
        return self.client().search_registered_models()

    def model_versions(self):
        return self.client().search_model_versions()

    def artifact_files(self):
        return sorted(p for p in self.artifacts.rglob("*") if p.is_file()) if self.artifacts.exists() else []

    def assert_nothing_logged(self):
        assert self.logged_models() == []
        assert self.registered_models() == []
        assert self.model_versions() == []
        assert self.artifact_files() == []


@pytest.fixture(scope="session")
def tracking_template(tmp_path_factory):
    """An empty, fully migrated MLflow sqlite database (created once per session)."""
    root = tmp_path_factory.mktemp("tracking-template")
    database = root / "template.db"
    uri = f"sqlite:///{database}"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)  # the default experiment records ./mlruns; keep it out of the checkout
        mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri).search_registered_models()
    return database


@pytest.fixture
def tracking_store(tmp_path, tracking_template):
    """A fresh local tracking store + registry for this test, active while it runs."""
    store = TrackingStore.create(tmp_path / "tracking", tracking_template)
    with store.active():
        yield store


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty TMPDIR (environment and ``tempfile.tempdir``); returns its path."""
    directory = tmp_path / "tmpdir"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


@pytest.fixture(scope="session")
def training_frame():
    """Numeric (double, long) and string columns, including non-ASCII text."""
    return pd.DataFrame(
        {
            "age": [22.0, 35.5, 47.0, 58.25, 31.0, 64.5, 29.0, 41.0],
            "city": ["Oslo", "Zürich", "Oslo", "Pune", "Zürich", "Pune", "Oslo", "Pune"],
            "visits": [1, 4, 2, 7, 3, 5, 6, 2],
        }
    )


@pytest.fixture(scope="session")
def fitted_pipeline(training_frame):
    """A tiny fitted Pipeline: ColumnTransformer (scaled numbers, one-hot text) + LogisticRegression."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    preprocess = ColumnTransformer(
        [
            ("numeric", StandardScaler(), ["age", "visits"]),
            ("text", OneHotEncoder(handle_unknown="ignore"), ["city"]),
        ]
    )
    pipeline = Pipeline([("preprocess", preprocess), ("classify", LogisticRegression())])
    return pipeline.fit(training_frame, [0, 1, 0, 1, 1, 0, 1, 0])


@pytest.fixture
def example_frame(training_frame):
    """The model's prediction input: the first rows, as a fresh copy per test."""
    return training_frame.iloc[:EXAMPLE_ROWS].copy()


# -- reading a generated repository like a client and like Triton --------------------------------


@pytest.fixture
def read_request():
    """``read(repository)`` -> (JSON body or prefix, input arrays), whichever request files were shipped."""

    def read(repository):
        if (repository / "request.json").exists():
            body = json.loads((repository / "request.json").read_text(encoding="utf-8"))
            return body, arrays_from_json_request(body)
        headers = read_headers_file(repository / "request.headers")
        return arrays_from_binary_request((repository / "request.bin").read_bytes(), headers)

    return read


@pytest.fixture
def drive_model_py():
    """``drive(repository, arrays)``: run the generated ``1/model.py`` in-process through the fake pb_utils.

    ``initialize`` gets the config the way Triton passes it (JSON, proto field
    names); returns the output arrays of one request.
    """

    def drive(repository, arrays, parameters=None):
        config = text_format.Parse(
            (repository / "config.pbtxt").read_text(encoding="utf-8"), model_config_pb2.ModelConfig()
        )
        module = fake_pb_utils.load_model_py(repository / "1" / "model.py")
        model = module.TritonPythonModel()
        model.initialize(
            {
                "model_config": json.dumps(json_format.MessageToDict(config, preserving_proto_field_name=True)),
                "model_name": config.name,
                "model_repository": str(repository),
                "model_version": "1",
                "model_instance_kind": "CPU",
                "model_instance_device_id": "0",
            }
        )
        try:
            request = fake_pb_utils.request_from_arrays(arrays, json.dumps(parameters or {}))
            [response] = model.execute([request])
        finally:
            model.finalize()
        return fake_pb_utils.outputs_of(response)

    return drive


@pytest.fixture(scope="session", autouse=True)
def default_tracking_store_outside_the_checkout(tmp_path_factory):
    """A test that uses MLflow's default tracking URI (``sqlite:///mlflow.db`` in the current directory) writes it
    into a session directory, never into the checkout, where a later leg with another MLflow would meet its schema."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        yield
        return
    database = tmp_path_factory.mktemp("default-tracking") / "mlflow.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{database}")
        yield
