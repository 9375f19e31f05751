"""``mlflow_triton.sklearn.log_model`` against a real local MLflow tracking store (sqlite).

One Pipeline (ColumnTransformer over numeric and string columns) is logged once
per module with ``pyfunc_predict_fn="predict_proba"``, registration, a run,
params, tags and metadata; the tests read that one LoggedModel. Tests that need
their own logging call get a fresh store.
"""

import dataclasses
import json
import pathlib

import mlflow
import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
from google.protobuf import text_format
from mlflow.models import Model, ModelSignature
from mlflow.types import ColSpec, Schema, TensorSpec
from tritonclient.grpc import model_config_pb2

from mlflow_triton import sklearn, triton
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import parse_config
from mlflow_triton.runtime import RUNTIME_VERSION
from mlflow_triton.shared_contract import MAPPING_VERSION
from tests.support.answer_pins import expected_answer_pins
from tests.unit.conftest import TrackingStore

RUN_PARAMS = {"trained_on": "unit-tests"}
PARAMS = {"alpha": 0.5, "features": "age,city,visits"}
TAGS = {"team": "ml-platform", "stage": "poc"}
METADATA = {"purpose": "demo", "owner": "data-science"}
NATIVE_FILES = ("MLmodel", "model.skops", "requirements.txt", "python_env.yaml", "conda.yaml", "input_example.json")


@dataclasses.dataclass(frozen=True)
class Logged:
    store: TrackingStore
    info: object
    oracle: object  # the same call through mlflow.sklearn.log_model
    run_id: str
    example: object


@pytest.fixture(scope="module")
def _logged(tmp_path_factory, tracking_template, fitted_pipeline, training_frame):
    store = TrackingStore.create(tmp_path_factory.mktemp("classifier"), tracking_template)
    example = training_frame.iloc[:3].copy()
    with store.active():
        with mlflow.start_run() as run:
            mlflow.log_params(RUN_PARAMS)
        shared = dict(
            input_example=example,
            pyfunc_predict_fn="predict_proba",
            run_id=run.info.run_id,
            params=PARAMS,
            tags=TAGS,
            metadata=METADATA,
        )
        info = sklearn.log_model(fitted_pipeline, name="classifier", registered_model_name="classifier", **shared)
        oracle = mlflow.sklearn.log_model(fitted_pipeline, name="oracle", pip_requirements=["scikit-learn"], **shared)
    return Logged(store=store, info=info, oracle=oracle, run_id=run.info.run_id, example=example)


@pytest.fixture
def logged(_logged):
    """The module's logged classifier, with its tracking store active."""
    with _logged.store.active():
        yield _logged


@pytest.fixture
def repository(logged):
    return triton.load_model(logged.info.model_uri)


# -- the MLflow side: ModelInfo, LoggedModel, run, Registry --------------------------------------


def test_log_model_returns_model_info_with_registry_version_1_when_registered_model_name_is_given(logged):
    versions = logged.store.model_versions()

    assert logged.info.registered_model_version == 1
    assert logged.info.model_uri == f"models:/{logged.info.model_id}"
    assert [(v.name, v.version, v.source) for v in versions] == [("classifier", 1, logged.info.model_uri)]


def test_log_model_records_run_params_tags_and_metadata_like_mlflow_sklearn_when_passed_through(logged):
    client = logged.store.client()
    ours = client.get_logged_model(logged.info.model_id)
    native = client.get_logged_model(logged.oracle.model_id)
    run = client.get_run(logged.run_id)

    assert ours.source_run_id == native.source_run_id == logged.run_id
    assert ours.params == native.params == {**{k: str(v) for k, v in PARAMS.items()}, **RUN_PARAMS}
    assert {k: v for k, v in ours.tags.items() if k != "mlflow.modelVersions"} == native.tags
    assert TAGS.items() <= ours.tags.items()
    assert logged.info.metadata == logged.oracle.metadata == METADATA
    assert Model.load(logged.info.model_uri).metadata == METADATA
    assert logged.info.run_id == logged.oracle.run_id == logged.run_id
    assert {o.model_id for o in run.outputs.model_outputs} == {logged.info.model_id, logged.oracle.model_id}
    assert run.data.params == RUN_PARAMS


def test_log_model_stores_artifacts_in_the_experiment_location_when_tracking_is_local(logged):
    model = logged.store.client().get_logged_model(logged.info.model_id)

    assert model.experiment_id == logged.store.experiment_id
    assert model.artifact_location.startswith(logged.store.artifacts.as_uri() + "/")
    assert model.name == "classifier"


# -- the MLmodel: native flavors kept, triton flavor added ----------------------------------------


def test_log_model_adds_triton_flavor_pointing_at_the_repository_when_logged(logged):
    flavors = Model.load(logged.info.model_uri).flavors

    assert set(flavors) == {"python_function", "sklearn", "triton"}
    assert flavors["triton"] == {
        "data": "model_repository/classifier",
        "model_name": "classifier",
        "mapping_version": MAPPING_VERSION,
        "runtime_version": RUNTIME_VERSION,
    }
    assert flavors["python_function"]["predict_fn"] == "predict_proba"


def test_log_model_keeps_native_loaders_working_when_logged(logged, fitted_pipeline):
    expected = fitted_pipeline.predict_proba(logged.example)

    np.testing.assert_allclose(mlflow.pyfunc.load_model(logged.info.model_uri).predict(logged.example), expected)
    np.testing.assert_allclose(mlflow.sklearn.load_model(logged.info.model_uri).predict_proba(logged.example), expected)


def test_log_model_infers_signature_from_example_and_predict_proba_when_no_signature_is_given(logged):
    signature = Model.load(logged.info.model_uri).signature

    assert signature.inputs == Schema([ColSpec("double", "age"), ColSpec("string", "city"), ColSpec("long", "visits")])
    assert signature.outputs == Schema([TensorSpec(np.dtype("float64"), (-1, 2))])


def test_triton_load_model_returns_the_repository_path_when_model_has_triton_flavor(logged, repository):
    root = pathlib.Path(mlflow.artifacts.download_artifacts(logged.info.model_uri)).resolve()

    assert isinstance(repository, pathlib.Path)
    assert repository == root / "model_repository" / "classifier"
    assert sorted(p.name for p in repository.iterdir()) == [
        "1",
        "config.pbtxt",
        "request.json",
        "requirements.txt",
        "validation.json",
    ]
    assert sorted(p.name for p in (repository / "1").iterdir()) == ["artifact", "model.py"]
    assert sorted(p.name for p in (root / "model_repository").iterdir()) == ["classifier"]


def test_log_model_copies_the_complete_native_package_into_1_artifact_when_logged(repository):
    root = repository.parent.parent
    artifact = repository / "1" / "artifact"
    copied = {p.relative_to(artifact).as_posix() for p in artifact.rglob("*")}

    assert set(NATIVE_FILES) <= copied
    assert not any(name.startswith("model_repository") for name in copied)
    for name in NATIVE_FILES[1:]:
        assert (artifact / name).read_bytes() == (root / name).read_bytes(), name
    assert set(Model.load(str(artifact)).flavors) == {"python_function", "sklearn"}
    assert Model.load(str(artifact)).signature == Model.load(str(root)).signature


def test_native_package_copy_loads_on_its_own_when_read_from_1_artifact(repository, logged, fitted_pipeline):
    predictor = mlflow.pyfunc.load_model(str(repository / "1" / "artifact"))

    np.testing.assert_allclose(predictor.predict(logged.example), fitted_pipeline.predict_proba(logged.example))


def test_log_model_records_lean_serving_requirements_when_logged(repository):
    native = (repository / "1" / "artifact" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    serving = (repository / "requirements.txt").read_text(encoding="utf-8").splitlines()

    assert f"mlflow=={mlflow.__version__}" in native  # the MLflow package keeps MLflow's own list
    assert [line for line in serving if not line.startswith("#")] == [
        f"mlflow-skinny=={mlflow.__version__}",
        *(line for line in native if not line.startswith("mlflow")),
        *expected_answer_pins(),
    ]
    assert any(line.startswith("scikit-learn==") for line in serving)
    assert any(line.startswith("skops==") for line in serving)


# -- the Triton repository ---------------------------------------------------------------------


def test_log_model_writes_json_request_with_the_example_values_when_example_is_finite_text(repository, logged):
    body = json.loads((repository / "request.json").read_text(encoding="utf-8"))
    example = logged.example

    assert [(i["name"], i["datatype"], i["shape"]) for i in body["inputs"]] == [
        ("age", "FP64", [3]),
        ("city", "BYTES", [3]),
        ("visits", "INT64", [3]),
    ]
    assert {i["name"]: i["data"] for i in body["inputs"]} == {c: example[c].tolist() for c in example.columns}
    assert body["outputs"] == [{"name": "output_0"}]


def test_log_model_writes_config_that_triton_schema_parses_when_logged(repository, logged):
    text = (repository / "config.pbtxt").read_text(encoding="utf-8")
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    expected = layout_from_signature(Model.load(logged.info.model_uri).signature, "sklearn").contract

    assert (config.name, config.backend, config.max_batch_size) == ("classifier", "python", 0)
    assert [(t.name, model_config_pb2.DataType.Name(t.data_type), list(t.dims)) for t in config.input] == [
        ("age", "TYPE_FP64", [-1]),
        ("city", "TYPE_STRING", [-1]),
        ("visits", "TYPE_INT64", [-1]),
    ]
    assert [(t.name, model_config_pb2.DataType.Name(t.data_type), list(t.dims)) for t in config.output] == [
        ("output_0", "TYPE_FP64", [-1, 2]),
    ]
    assert [g.kind for g in config.instance_group] == [model_config_pb2.ModelInstanceGroup.KIND_CPU]
    assert parse_config(text) == (config, expected)


def test_generated_model_py_answers_the_shipped_request_with_the_in_memory_prediction_when_driven(
    repository, logged, fitted_pipeline, drive_model_py, read_request
):
    _, arrays = read_request(repository)

    outputs = drive_model_py(repository, arrays)

    in_memory = mlflow.pyfunc.load_model(logged.info.model_uri).predict(logged.example)
    assert list(outputs) == ["output_0"]
    np.testing.assert_allclose(outputs["output_0"], in_memory)
    np.testing.assert_allclose(outputs["output_0"], fitted_pipeline.predict_proba(logged.example))


def test_log_model_reports_in_memory_validation_when_validate_saved_model_is_default(repository):
    report = json.loads((repository / "validation.json").read_text(encoding="utf-8"))

    assert report["mode"] == "in-memory"
    assert report["saved_artifact_checked"] is False
    assert report["validation_device"] == "cpu"
    assert report["target_device"] == "cpu"
    assert report["tensor_mapping"]["validated"] is True
    assert report["tensor_mapping"]["outputs"] == {"output_0": [3, 2]}
    assert report["triton"]["validated"] is False
    assert report["request_files"] == ["request.json"]
    assert (report["runtime_version"], report["mapping_version"]) == (RUNTIME_VERSION, MAPPING_VERSION)


# -- calls with their own store ------------------------------------------------------------------


def test_log_model_creates_registry_versions_1_and_2_with_triton_version_1_each_when_registered_twice(
    tracking_store, fitted_pipeline, example_frame
):
    first = sklearn.log_model(fitted_pipeline, input_example=example_frame, registered_model_name="twice")
    second = sklearn.log_model(fitted_pipeline, input_example=example_frame, registered_model_name="twice")

    assert (first.registered_model_version, second.registered_model_version) == (1, 2)
    assert sorted(v.version for v in tracking_store.model_versions()) == [1, 2]
    for version in (1, 2):
        repository = triton.load_model(f"models:/twice/{version}")
        assert repository.name == "model"
        assert sorted(p.name for p in repository.iterdir() if p.is_dir()) == ["1"]


def test_log_model_leaves_tmpdir_empty_when_logging_succeeds(tracking_store, workspace, fitted_pipeline, example_frame):
    info = sklearn.log_model(fitted_pipeline, input_example=example_frame, registered_model_name="tidy")

    assert info.registered_model_version == 1
    assert list(workspace.iterdir()) == []


def test_log_model_keeps_the_explicit_signature_when_signature_is_given(tracking_store, fitted_pipeline, example_frame):
    # Column order and the double `visits` differ from what MLflow would infer from the example.
    signature = ModelSignature(
        inputs=Schema([ColSpec("string", "city"), ColSpec("double", "visits"), ColSpec("double", "age")]),
        outputs=Schema([TensorSpec(np.dtype("float64"), (-1, 2))]),
    )

    info = sklearn.log_model(
        fitted_pipeline, input_example=example_frame, signature=signature, pyfunc_predict_fn="predict_proba"
    )

    repository = triton.load_model(info.model_uri)
    config, _ = parse_config((repository / "config.pbtxt").read_text(encoding="utf-8"))
    assert info.signature == signature
    assert Model.load(info.model_uri).signature == signature
    assert Model.load(str(repository / "1" / "artifact")).signature == signature
    assert [(t.name, model_config_pb2.DataType.Name(t.data_type)) for t in config.input] == [
        ("city", "TYPE_STRING"),
        ("visits", "TYPE_FP64"),
        ("age", "TYPE_FP64"),
    ]


def test_log_model_reports_saved_artifact_validation_when_validate_saved_model_is_true(
    tracking_store, fitted_pipeline, example_frame
):
    info = sklearn.log_model(
        fitted_pipeline, input_example=example_frame, validate_saved_model=True, pyfunc_predict_fn="predict_proba"
    )

    report = json.loads((triton.load_model(info.model_uri) / "validation.json").read_text(encoding="utf-8"))
    assert report["mode"] == "saved-artifact"
    assert report["saved_artifact_checked"] is True
    assert report["validation_device"] == "cpu"
    assert report["tensor_mapping"]["outputs"] == {"output_0": [3, 2]}
    assert report["triton"]["validated"] is False


@pytest.mark.parametrize(
    ("name", "triton_model_name", "directory"),
    [("Churn Model v2", None, "Churn_Model_v2"), ("classifier", "churn-model.v2", "churn-model.v2")],
)
def test_log_model_names_the_repository_directory_when_triton_model_name_is_derived_or_given(
    tracking_store, fitted_pipeline, example_frame, name, triton_model_name, directory
):
    info = sklearn.log_model(
        fitted_pipeline, input_example=example_frame, name=name, triton_model_name=triton_model_name
    )

    repository = triton.load_model(info.model_uri)
    config, _ = parse_config((repository / "config.pbtxt").read_text(encoding="utf-8"))
    assert repository.name == config.name == directory
    assert Model.load(info.model_uri).flavors["triton"]["data"] == f"model_repository/{directory}"


def _insert_doubled_age(frame):
    """Mutates its input, as the custom transformer of MLflow's ``training_mutations`` test does."""
    frame.insert(len(frame.columns), "doubled_age", frame["age"] * 2)  # raises if the column exists already
    return frame


@pytest.mark.filterwarnings("ignore::mlflow_triton.errors.CustomCodeWarning")  # the function lives in tests/
def test_log_model_leaves_the_callers_example_unchanged_when_the_pipeline_mutates_its_input(
    tracking_store, training_frame, example_frame
):
    """#22.3: predicting the caller's frame itself added the column, so logging failed with the model's error."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    pipeline = make_pipeline(FunctionTransformer(_insert_doubled_age), LogisticRegression())
    pipeline.fit(training_frame[["age", "visits"]].copy(), [0, 1, 0, 1, 1, 0, 1, 0])
    example = example_frame[["age", "visits"]].copy()
    before = example.copy()

    info = sklearn.log_model(pipeline, input_example=example, serialization_format="cloudpickle")

    pd.testing.assert_frame_equal(example, before)
    assert [spec.name for spec in info.signature.inputs.inputs] == ["age", "visits"]
