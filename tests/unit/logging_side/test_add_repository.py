"""``mlflow_triton.add_repository`` and ``mlflow-triton add-repository``: models logged with plain MLflow.

Against a real sqlite tracking store and registry; the source is logged with ``mlflow.sklearn`` /
``mlflow.pyfunc`` exactly as a user would, without mlflow_triton. The generated model.py is driven
with the fake ``pb_utils`` (the real server: tests/e2e/test_existing_models_triton.py).
"""

import importlib.metadata
import json
import pathlib
import tempfile
import types

import mlflow
import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
from mlflow.models import Model, ModelSignature, infer_signature
from mlflow.types import ColSpec, DataType, Schema
from sklearn.linear_model import LogisticRegression

import mlflow_triton
from mlflow_triton import _existing, cli
from mlflow_triton._existing import SOURCE_TAG
from mlflow_triton.errors import InvalidArgumentError, UnsupportedSchemaError, ValidationError
from tests.support.tree_digest import tree_digest

X = pd.DataFrame({"length": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "width": [0.5, 0.1, 0.9, 0.3, 0.7, 0.2]})
Y = np.array([0, 0, 0, 1, 1, 1])


@pytest.fixture(scope="module")
def classifier():
    return LogisticRegression().fit(X, Y)


def log_plain(classifier, registered_model_name="churn", **options):
    """``mlflow.sklearn.log_model`` in a run, as a team already did; returns (ModelInfo, run id)."""
    options.setdefault("input_example", X.head(3))
    options.setdefault("pip_requirements", ["scikit-learn"])  # MLflow's inference would reload it in a subprocess
    with mlflow.start_run() as run:
        info = mlflow.sklearn.log_model(classifier, name="clf", registered_model_name=registered_model_name, **options)
    return info, run.info.run_id


def download(model_uri, tmp_path, folder):
    return pathlib.Path(mlflow.artifacts.download_artifacts(artifact_uri=model_uri, dst_path=str(tmp_path / folder)))


def test_add_repository_registers_a_new_version_beside_the_source_when_it_came_from_the_registry(
    tracking_store, classifier, tmp_path
):
    source, run_id = log_plain(classifier)
    before = tree_digest(tracking_store.artifacts)

    info = mlflow_triton.add_repository("models:/churn/1")

    client = tracking_store.client()
    assert info.registered_model_version == 2
    new = client.get_logged_model(info.model_id)
    assert (new.experiment_id, new.source_run_id) == (tracking_store.experiment_id, run_id)
    assert new.tags[SOURCE_TAG] == "models:/churn/1"
    local = download("models:/churn/2", tmp_path, "new")
    assert set(Model.load(str(local)).flavors) == {"python_function", "sklearn", "triton"}
    validation = json.loads((local / "model_repository" / "clf" / "validation.json").read_text())
    assert validation["source"] == {
        "model_uri": "models:/churn/1",
        "registered_model_name": "churn",
        "registered_model_version": "1",
        "model_id": source.model_id,
        "run_id": run_id,
        "experiment_id": tracking_store.experiment_id,
        "source_run_id": run_id,
    }
    # the source's files, unchanged, in the new model (MLmodel is the new model's own)
    original = download("models:/churn/1", tmp_path, "old")
    for name in ("model.skops", "requirements.txt", "conda.yaml", "input_example.json"):
        assert (local / name).read_bytes() == (original / name).read_bytes()
    after = tree_digest(tracking_store.artifacts)
    assert {path: digest for path, digest in after.items() if path in before} == before


def test_add_repository_answers_like_the_source_when_the_repository_runs(
    tracking_store, classifier, tmp_path, drive_model_py
):
    log_plain(classifier)

    info = mlflow_triton.add_repository("models:/churn/1")

    local = download(info.model_uri, tmp_path, "new")
    outputs = drive_model_py(
        local / "model_repository" / "clf",
        {"length": X["length"].to_numpy()[:3], "width": X["width"].to_numpy()[:3]},
    )
    np.testing.assert_array_equal(outputs["output_0"], classifier.predict(X.head(3)))


@pytest.mark.parametrize("kind", ["alias", "model id", "run", "local directory"])
def test_add_repository_reads_the_source_when_its_uri_is_of_another_kind(tracking_store, classifier, tmp_path, kind):
    source, run_id = log_plain(classifier)
    tracking_store.client().set_registered_model_alias("churn", "champion", "1")
    uri = {
        "alias": "models:/churn@champion",
        "model id": source.model_uri,
        "run": f"runs:/{run_id}/clf",
        "local directory": str(download(source.model_uri, tmp_path, "local")),
    }[kind]

    info = mlflow_triton.add_repository(uri)

    assert "triton" in info.flavors
    assert tracking_store.client().get_logged_model(info.model_id).tags[SOURCE_TAG] == uri
    registered = [int(v.version) for v in tracking_store.model_versions()]
    assert sorted(registered) == ([1, 2] if kind == "alias" else [1])


def test_add_repository_leaves_every_uri_of_the_source_meaning_the_source_when_the_new_model_is_logged(
    tracking_store, classifier
):
    source, run_id = log_plain(classifier)
    client = tracking_store.client()
    client.set_registered_model_alias("churn", "champion", "1")

    info = mlflow_triton.add_repository("models:/churn/1")

    assert client.get_logged_model(info.model_id).name == "clf-triton"
    for uri in (f"runs:/{run_id}/clf", source.model_uri, "models:/churn@champion", "models:/churn/1"):
        loaded = Model.load(uri)
        assert (loaded.model_id, "triton" in loaded.flavors) == (source.model_id, False), uri
    again = mlflow_triton.add_repository(f"runs:/{run_id}/clf")  # the source is still what that URI reads
    assert "triton" in again.flavors
    assert Model.load(f"runs:/{run_id}/clf-triton").model_id in (info.model_id, again.model_id)


def test_add_repository_names_the_model_as_asked_and_triton_keeps_the_source_name_when_name_is_given(
    tracking_store, classifier, tmp_path
):
    log_plain(classifier)

    info = mlflow_triton.add_repository("models:/churn/1", name="churn-served")

    assert tracking_store.client().get_logged_model(info.model_id).name == "churn-served"
    assert (download(info.model_uri, tmp_path, "new") / "model_repository" / "clf" / "config.pbtxt").is_file()


def doubling_onnx_graph():
    """An ONNX graph ``y = 2 * x`` over float32 ``x`` of shape [None, 2]."""
    from onnx import TensorProto, helper

    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y"])],
        "doubling",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 2])],
        [two],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_add_repository_keeps_the_graphs_float32_inputs_when_an_onnx_source_has_no_signature(
    tracking_store, tmp_path, drive_model_py
):
    import mlflow.onnx

    with mlflow.start_run():
        mlflow.onnx.log_model(
            doubling_onnx_graph(),
            name="doubling",
            input_example=np.array([[1.5, 2.25]], dtype=np.float32),  # saved as JSON: read back as float64
            signature=False,
            registered_model_name="doubling",
        )

    info = mlflow_triton.add_repository("models:/doubling/1")

    repository = download(info.model_uri, tmp_path, "new") / "model_repository" / "doubling"
    config = (repository / "config.pbtxt").read_text()
    assert config.split("input {", 1)[1].split("}", 1)[0].split("data_type: ")[1].split()[0] == "TYPE_FP32"
    request = json.loads((repository / "request.json").read_text())
    assert [tensor["datatype"] for tensor in request["inputs"]] == ["FP32"]
    outputs = drive_model_py(repository, {"input_0": np.array([[1.5, 2.25]], dtype=np.float32)})
    np.testing.assert_array_equal(outputs["y"], np.array([[3.0, 4.5]], dtype=np.float32))


def test_add_repository_registers_under_the_chosen_name_when_registered_model_name_is_given(tracking_store, classifier):
    log_plain(classifier)

    info = mlflow_triton.add_repository("models:/churn/1", registered_model_name="churn-triton")

    assert info.registered_model_version == 1
    assert [m.name for m in tracking_store.registered_models()] == ["churn", "churn-triton"]


def assert_only_the_source(store, before):
    """The store still holds the source model alone, its files byte-identical."""
    assert len(store.logged_models()) == 1
    assert [(v.name, int(v.version)) for v in store.model_versions()] == [("churn", 1)]
    assert tree_digest(store.artifacts) == before


def test_add_repository_refuses_and_names_the_flavors_when_the_source_has_no_python_function(tracking_store, tmp_path):
    directory = tmp_path / "custom"
    directory.mkdir()
    mlmodel = Model()
    mlmodel.add_flavor("my_framework", data="weights.bin")
    mlmodel.save(str(directory / "MLmodel"))
    before = tree_digest(directory)

    with pytest.raises(InvalidArgumentError, match=r"no python_function flavor \(flavors: my_framework\).*PythonModel"):
        mlflow_triton.add_repository(str(directory))

    assert tree_digest(directory) == before
    tracking_store.assert_nothing_logged()


def test_add_repository_refuses_and_says_how_to_give_an_input_when_the_source_has_no_example(
    tracking_store, classifier
):
    log_plain(classifier, input_example=None)
    before = tree_digest(tracking_store.artifacts)

    with pytest.raises(
        InvalidArgumentError, match=r"has no signature and no example to predict: give an input: input_example="
    ):
        mlflow_triton.add_repository("models:/churn/1")

    assert_only_the_source(tracking_store, before)


def test_add_repository_predicts_and_saves_the_given_input_when_the_source_has_no_example(
    tracking_store, classifier, tmp_path
):
    log_plain(classifier, input_example=None, signature=infer_signature(X, classifier.predict(X)))
    rows = pd.DataFrame({"length": [2.0, 5.5], "width": [0.4, 0.6]})

    info = mlflow_triton.add_repository("models:/churn/1", input_example=rows)

    local = download(info.model_uri, tmp_path, "new")
    assert Model.load(str(local)).load_input_example(str(local)).to_dict("list") == {
        "length": [2.0, 5.5],
        "width": [0.4, 0.6],
    }
    assert not (download("models:/churn/1", tmp_path, "old") / "input_example.json").exists()


class Broken(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        raise RuntimeError("broken on purpose")


def test_add_repository_leaves_nothing_logged_when_the_prediction_fails(tracking_store):
    with mlflow.start_run():
        mlflow.pyfunc.log_model(
            name="broken", python_model=Broken(), input_example=X.head(2), registered_model_name="churn"
        )
    before = tree_digest(tracking_store.artifacts)

    with pytest.raises(ValidationError, match="Prediction of the example failed: RuntimeError: broken on purpose"):
        mlflow_triton.add_repository("models:/churn/1")

    assert_only_the_source(tracking_store, before)


def test_add_repository_gives_the_input_remedy_when_the_saved_example_fails_to_predict_but_not_for_a_given_input(
    tracking_store,
):
    with mlflow.start_run():
        mlflow.pyfunc.log_model(
            name="broken", python_model=Broken(), input_example=X.head(2), registered_model_name="churn"
        )

    with pytest.raises(ValidationError) as saved:
        mlflow_triton.add_repository("models:/churn/1")
    with pytest.raises(ValidationError) as given:
        mlflow_triton.add_repository("models:/churn/1", input_example=X.head(1))

    mlflow_too = " (MLflow's serving protocol cannot serve it either: The example's MLflow serving body is refused by "
    assert str(saved.value).startswith(
        "Model 'models:/churn/1': its saved input example: Prediction of the example failed: RuntimeError: broken on "
        f"purpose{mlflow_too}"
    )
    assert str(saved.value).endswith(
        "; give an input: input_example= (mlflow-triton add-repository --input FILE) with a small input in "
        "MLflow's serving format (a JSON object with dataframe_split, dataframe_records, inputs or instances; or a "
        "CSV table), or re-log the model with input_example="
    )
    assert str(given.value).startswith(f"Prediction of the example failed: RuntimeError: broken on purpose{mlflow_too}")


def test_add_repository_leaves_nothing_logged_when_the_signature_does_not_map(tracking_store, classifier):
    datetime_output = ModelSignature(inputs=infer_signature(X).inputs, outputs=Schema([ColSpec(DataType.datetime)]))
    log_plain(classifier, signature=datetime_output)
    before = tree_digest(tracking_store.artifacts)

    with pytest.raises(
        UnsupportedSchemaError, match=r"datetime output columns are not mapped.*re-log it with a signature from"
    ):
        mlflow_triton.add_repository("models:/churn/1", protocol="tensors")

    assert_only_the_source(tracking_store, before)


def test_add_repository_refuses_when_the_source_already_has_a_triton_flavor(tracking_store, classifier):
    log_plain(classifier)
    mlflow_triton.add_repository("models:/churn/1")

    with pytest.raises(InvalidArgumentError, match="already has a triton flavor: prove it with `mlflow-triton check"):
        mlflow_triton.add_repository("models:/churn/2")


class _StoppedWhileCleaningUp(tempfile.TemporaryDirectory):
    """The source's temporary copy, whose removal (after the new model is logged and registered) meets Ctrl-C."""

    def __exit__(self, *exc_info):
        super().__exit__(*exc_info)
        raise KeyboardInterrupt


def test_add_repository_command_names_what_stays_when_ctrl_c_lands_after_the_version_is_registered(
    tracking_store, classifier, capsys, monkeypatch
):
    log_plain(classifier)
    monkeypatch.setattr(_existing, "tempfile", types.SimpleNamespace(TemporaryDirectory=_StoppedWhileCleaningUp))

    status = cli.main(["add-repository", "models:/churn/1", "--tracking-uri", tracking_store.uri])

    (new,) = [model for model in tracking_store.logged_models() if model.name == "clf-triton"]
    assert status == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        "mlflow-triton add-repository: interrupted (Ctrl-C); models:/churn/2 is complete and stays: "
        f"models:/{new.model_id} was logged and registered as models:/churn/2 before the stop"
    )
    assert sorted((v.name, int(v.version)) for v in tracking_store.model_versions()) == [("churn", 1), ("churn", 2)]


@pytest.mark.parametrize(
    ("owner", "step"),
    [
        (mlflow.MlflowClient, "log_model_artifacts"),  # the model and its 1/artifact copy uploaded
        (mlflow.MlflowClient, "_create_model_version"),  # just after "Created version '2' of model 'churn'."
    ],
    ids=["after-the-upload", "after-created-version"],
)
def test_add_repository_command_leaves_the_store_as_it_was_when_ctrl_c_lands_before_the_model_is_complete(
    tracking_store, classifier, capsys, monkeypatch, owner, step
):
    log_plain(classifier)
    before = tree_digest(tracking_store.artifacts)
    original = getattr(owner, step)

    def then_ctrl_c(*args, **kwargs):
        original(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(owner, step, then_ctrl_c)

    status = cli.main(["add-repository", "models:/churn/1", "--tracking-uri", tracking_store.uri])

    assert status == 130
    assert (
        capsys.readouterr().err.splitlines()[-1]
        == "mlflow-triton add-repository: interrupted (Ctrl-C); nothing was logged"
    )
    assert_only_the_source(tracking_store, before)  # the artifact store listed file by file: no m-<id>/ left


def test_add_repository_command_prints_the_new_version_when_it_is_logged(tracking_store, classifier, capsys):
    log_plain(classifier)

    status = cli.main(["add-repository", "models:/churn/1", "--tracking-uri", tracking_store.uri])

    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert out[1:] == [
        "registered models:/churn/2",
        f"serving requirements: added 'skops=={importlib.metadata.version('skops')}': the MLmodel's sklearn flavor is "
        "saved so (serialization_format: skops), and loads with it; the model's requirements do not bring skops",
        "repository: typed tensors (one tensor per field of the signature: requests as in request.json); chosen "
        "because the typed mapping carries the model exactly (one typed tensor per field of the signature)",
        "prove it: mlflow-triton check models:/churn/2",
    ]


@pytest.mark.parametrize(
    ("serialization_format", "added"),
    [("skops", ["skops"]), ("cloudpickle", []), ("pickle", [])],
    ids=["skops: added", "cloudpickle: mlflow-skinny brings it", "pickle: the standard library"],
)
def test_add_repository_adds_what_the_saved_format_loads_with_when_the_source_requirements_lack_it(
    tracking_store, classifier, tmp_path, serialization_format, added
):
    # mlflow.sklearn.log_model(..., pip_requirements=[...]) saves model.skops and records no skops
    log_plain(
        classifier, pip_requirements=["scikit-learn", "numpy", "pandas"], serialization_format=serialization_format
    )

    mlflow_triton.add_repository("models:/churn/1")

    repository = next((download("models:/churn/2", tmp_path, "new") / "model_repository").iterdir())
    lines = (repository / "requirements.txt").read_text(encoding="utf-8").splitlines()
    pinned = [f"{name}=={importlib.metadata.version(name)}" for name in added]
    assert [line for line in lines if line.startswith(("skops", "cloudpickle"))] == pinned
    record = json.loads((repository / "validation.json").read_text(encoding="utf-8"))
    assert list(record.get("requirements_added", {})) == pinned


RESPONSES_AGENT = """\
import mlflow
from mlflow.pyfunc import ResponsesAgent
from mlflow.types.responses import ResponsesAgentRequest, ResponsesAgentResponse


class Echo(ResponsesAgent):
    def predict(self, request: ResponsesAgentRequest) -> ResponsesAgentResponse:
        text = " ".join(str(item.content) for item in request.input).upper()
        return ResponsesAgentResponse(output=[self.create_text_output_item(text=text, id="answer")])


mlflow.models.set_model(Echo())
"""


def test_add_repository_command_traces_nothing_and_names_mlflows_protocol_when_the_source_is_a_responses_agent(
    tracking_store, tmp_path, monkeypatch, capsys
):
    code = tmp_path / "agent.py"
    code.write_text(RESPONSES_AGENT)
    example = {"input": [{"role": "user", "content": "hi"}]}
    with mlflow.start_run():
        mlflow.pyfunc.log_model(
            name="agent", python_model=str(code), input_example=example, registered_model_name="agent"
        )
    client = tracking_store.client()
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    traces_before = len(client.search_traces(locations=experiments))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)

    status = cli.main(["add-repository", "models:/agent/1", "--tracking-uri", tracking_store.uri])

    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert out[-2:] == [
        "repository: MLflow's protocol (the body `mlflow models serve` takes, in the BYTES tensor 'request'); chosen "
        "because the model is MLflow's ResponsesAgent, whose requests and answers are MLflow's chat or agent bodies",
        "prove it: mlflow-triton check models:/agent/2",
    ]
    assert len(client.search_traces(locations=experiments, flush=True)) == traces_before
    assert [experiment.experiment_id for experiment in client.search_experiments()] == experiments
    assert list(cwd.iterdir()) == []


def test_add_repository_command_exits_1_and_names_the_remedy_when_the_source_has_no_example(
    tracking_store, classifier, capsys
):
    log_plain(classifier, input_example=None)

    status = cli.main(["add-repository", "models:/churn/1", "--tracking-uri", tracking_store.uri])

    err = capsys.readouterr().err
    assert status == 1
    assert "mlflow-triton add-repository: error: Model 'models:/churn/1' has no signature" in err
    assert "--input FILE" in err and err.rstrip().endswith("nothing was logged")


def test_add_repository_command_reads_the_input_file_against_the_sources_schema_when_the_source_has_no_example(
    tracking_store, classifier, tmp_path
):
    log_plain(classifier, input_example=None, signature=infer_signature(X, classifier.predict(X)))
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps({"dataframe_split": {"columns": ["length", "width"], "data": [[2.0, 0.4], [5.5, 0.6]]}}))

    status = cli.main(["add-repository", "models:/churn/1", "--input", str(rows), "--tracking-uri", tracking_store.uri])

    assert status == 0
    local = download("models:/churn/2", tmp_path, "new")
    assert Model.load(str(local)).load_input_example(str(local)).to_dict("list") == {
        "length": [2.0, 5.5],
        "width": [0.4, 0.6],
    }


def test_add_repository_refuses_a_source_whose_requirements_lack_the_distribution_its_model_comes_from(
    tracking_store, classifier
):
    # MLflow's lightgbm test_model_log logs a conda_env naming xgboost: it loads here, not in Triton's environment
    log_plain(classifier, pip_requirements=["pandas"])
    before = tree_digest(tracking_store.artifacts)

    with pytest.raises(ValidationError) as refused:
        mlflow_triton.add_repository("models:/churn/1")

    message = str(refused.value)
    assert message.startswith(
        "Model 'models:/churn/1': its requirements.txt does not name scikit-learn, which its model"
    )
    assert "loading fails there with ModuleNotFoundError" in message
    assert "pip_requirements (or extra_pip_requirements) naming 'scikit-learn==" in message
    assert_only_the_source(tracking_store, before)


class Scaled(mlflow.pyfunc.PythonModel):
    """Cannot predict without its ``scale`` param."""

    def predict(self, context, model_input, params=None):
        return model_input[["length"]] * params["scale"]


def test_add_repository_command_takes_an_inputs_and_params_body_when_the_model_needs_its_params(
    tracking_store, tmp_path
):
    signature = infer_signature(X, X[["length"]], params={"scale": 1.0})
    mlflow.pyfunc.log_model(name="scaled", python_model=Scaled(), signature=signature, registered_model_name="scaled")
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"inputs": X.head(2).to_dict("records"), "params": {"scale": 3.0}}))

    status = cli.main(
        ["add-repository", "models:/scaled/1", "--input", str(body), "--tracking-uri", tracking_store.uri]
    )

    assert status == 0
    local = download("models:/scaled/2", tmp_path, "new")
    assert Model.load(str(local)).load_input_example_params(str(local)) == {"scale": 3.0}
    repository = next((local / "model_repository").iterdir())
    assert json.loads((repository / "request.json").read_text())["parameters"] == {"scale": 3.0}
