"""Serving straight from MLflow's artifact store (#24): a real ``mlflow server`` over a real S3-compatible server.

One set-up for the module: moto's S3 server on 127.0.0.1 (its own process), ``mlflow server
--artifacts-destination s3://mlflow-bucket/mlartifacts`` with ``MLFLOW_S3_ENDPOINT_URL`` pointing at it, and a
user's script (``tests/support/user_script.py``'s scikit-learn Pipeline) logging and registering through the
server, in a fresh process: ``user-classifier`` in the default experiment, ``rule-breaker`` in an experiment
whose artifact location has a segment Triton's S3 rules refuse, ``plain-sklearn`` with MLflow's own flavor.
Triton (the bundled 2.51) then reads ``s3://127.0.0.1:PORT/mlflow-bucket/…/model_repository`` itself.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mlflow_triton.deploy import kserve_command, locate_command, locate_repository
from mlflow_triton.deploy.errors import NotATritonModelError, StoreAccessError, StorePathError
from tests.support.add_repository_stops import NOTHING_NEW, STAGES, add_repository_stopped_at, assert_outcome
from tests.support.kserve_schema import validate_inference_service
from tests.support.mlflow_server import running_mlflow_server, using_tracking
from tests.support.ports import free_ports
from tests.support.processes import triton_processes_under
from tests.support.s3_server import ACCESS_KEY_ID, SECRET_ACCESS_KEY, running_s3_server

REPO_ROOT = Path(__file__).resolve().parents[2]
SUPPORT_DIR = REPO_ROOT / "tests" / "support"
CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")
BUCKET = "mlflow-bucket"
DESTINATION = f"s3://{BUCKET}/mlartifacts"

pytestmark = [pytest.mark.triton, pytest.mark.mlflow_server]

LOG_THROUGH_THE_SERVER = """
import sys
import tempfile

import mlflow

import user_script
from mlflow_triton import sklearn

mlflow.set_tracking_uri(sys.argv[1])
pipeline, frame = user_script.fitted_pipeline()
mlflow.set_experiment("user")
info = sklearn.log_model(pipeline, input_example=frame.iloc[:4], name="classifier", pyfunc_predict_fn="predict_proba",
                         registered_model_name="user-classifier")
mlflow.sklearn.log_model(pipeline, name="plain", pip_requirements=["scikit-learn"],
                         registered_model_name="plain-sklearn")
# The same files again, under an artifact location with a segment Triton's S3 rules refuse ('~').
rules = mlflow.create_experiment("rules", artifact_location="mlflow-artifacts:/team~models")
mlflow.set_experiment(experiment_id=rules)
with tempfile.TemporaryDirectory() as copy, mlflow.start_run() as run:
    mlflow.log_artifacts(mlflow.artifacts.download_artifacts(info.model_uri, dst_path=copy), "classifier")
mlflow.register_model(f"runs:/{run.info.run_id}/classifier", "rule-breaker")
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """(S3 server, MLflow server) with the user's models logged and registered through the server."""
    root = tmp_path_factory.mktemp("s3-store")
    with running_s3_server(root) as s3:
        s3.client().create_bucket(Bucket=BUCKET)
        with running_mlflow_server(
            root / "mlflow", artifacts_destination=DESTINATION, environment=s3.credentials()
        ) as server:
            completed = subprocess.run(
                [sys.executable, "-c", LOG_THROUGH_THE_SERVER, server.url],
                cwd=root,
                env=_user_environment(PYTHONPATH=str(SUPPORT_DIR)),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert completed.returncode == 0, completed.stderr[-4000:]
            yield s3, server


@pytest.fixture
def user_env(store, monkeypatch):
    """This process as the user's shell: the tracking server, the S3 endpoint and the (dummy) credentials."""
    s3, server = store
    for name, value in s3.credentials().items():
        monkeypatch.setenv(name, value)
    with using_tracking(server.url):
        yield s3


def _user_environment(**overrides):
    environment = {
        k: v for k, v in os.environ.items() if (not k.startswith(("MLFLOW_", "AWS_")) or k == "MLFLOW_TRITON_CACHE")
    }
    environment.update(HF_HUB_OFFLINE="1", **overrides)
    return environment


def _secret_free(*texts):
    return not any(SECRET_ACCESS_KEY in text or ACCESS_KEY_ID in text for text in texts)


def test_locate_prints_the_address_triton_reads_when_the_server_proxies_an_s3_destination(user_env):
    location = locate_repository("models:/user-classifier/1", artifacts_destination=DESTINATION)

    assert re.fullmatch(
        rf"s3://127\.0\.0\.1:{user_env.port}/{BUCKET}/mlartifacts/\d+/models/m-[0-9a-f]+/artifacts"
        r"/model_repository",
        location.address,
    ), location.address
    assert location.storage_uri == location.address.replace(f"127.0.0.1:{user_env.port}/", "")
    assert location.model_name == "classifier"
    assert f"{location.storage_uri[len(f's3://{BUCKET}/') :]}/classifier/config.pbtxt" in user_env.objects(BUCKET)


def test_locate_command_prints_only_the_address_on_stdout_and_the_model_name_on_stderr_when_located(user_env, capsys):
    status = locate_command("models:/user-classifier/1", artifacts_destination=DESTINATION)

    out, err = capsys.readouterr()
    assert status == 0
    assert re.fullmatch(rf"s3://127\.0\.0\.1:{user_env.port}/{BUCKET}/\S+/model_repository\n", out), out
    assert "Triton model 'classifier'" in err and "--load-model=classifier" in err
    assert _secret_free(out, err)


def test_check_from_store_answers_like_pyfunc_and_adds_no_object_to_the_store_when_triton_reads_s3(store, tmp_path):
    s3, server = store
    before = s3.objects(BUCKET)
    report = tmp_path / "report.json"

    completed = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "check",
            "models:/user-classifier/1",
            "--from-store",
            "--artifacts-destination",
            DESTINATION,
            "--tracking-uri",
            server.url,
            "--work-dir",
            str(tmp_path / "work"),
            "--report",
            str(report),
        ],
        env=_user_environment(**s3.credentials()),
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr[-6000:]
    assert re.search(r"^PASS models:/user-classifier/1: .* like pyfunc\.predict", completed.stdout, re.M)
    (entry,) = json.loads(report.read_text())
    assert entry["repository"].startswith(f"s3://127.0.0.1:{s3.port}/{BUCKET}/mlartifacts/"), entry["repository"]
    triton_log = Path(entry["logs"]["tritonserver"]).read_text(errors="replace")
    assert f"--model-repository={entry['repository']}" in triton_log
    assert s3.objects(BUCKET) == before
    assert triton_processes_under(tmp_path) == []
    logs = [p.read_text(errors="replace") for p in (tmp_path / "work").rglob("*.log")]
    assert _secret_free(completed.stdout, completed.stderr, report.read_text(), *logs)


def test_serve_from_store_answers_the_shipped_request_like_pyfunc_when_triton_reads_s3(user_env, tmp_path):
    from mlflow_triton import triton
    from mlflow_triton.deploy import serve_from_store_command
    from mlflow_triton.local import send_shipped_request
    from mlflow_triton.local._compare import compare
    from tests.support.oracle import expected_example_tensors

    before = user_env.objects(BUCKET)
    answers, listing = {}, []
    location = locate_repository("models:/user-classifier/1", artifacts_destination=DESTINATION)

    def ask_then_stop(server):
        model_dir = tmp_path / "work" / "download" / "1" / "classifier"
        answers["outputs"], _ = send_shipped_request(server.url, model_dir)
        raise KeyboardInterrupt

    http, grpc, metrics = free_ports(3)
    status = serve_from_store_command(
        ["models:/user-classifier/1"],
        artifacts_destination=DESTINATION,
        http_port=http,
        grpc_port=grpc,
        metrics_port=metrics,
        work_dir=tmp_path / "work",
        out=listing.append,
        progress=None,
        wait=ask_then_stop,
    )

    assert status == 0
    reference = triton.load_model("models:/user-classifier/1", dst_path=str(tmp_path / "reference"))
    expected = expected_example_tensors("models:/user-classifier/1", reference)
    assert all(result["equal"] for result in compare(expected, answers["outputs"]).values())
    assert "classifier" in listing[0] and "curl" in listing[0]
    assert not (tmp_path / "work" / "download" / "1" / "classifier" / "1").exists()  # only the small files came
    assert user_env.objects(BUCKET) == before
    assert _secret_free(*listing, (tmp_path / "work" / "tritonserver.log").read_text(errors="replace"))
    assert location.address in (tmp_path / "work" / "tritonserver.log").read_text(errors="replace")


def test_locate_refuses_naming_the_segment_when_the_artifact_location_breaks_tritons_path_rules(user_env):
    with pytest.raises(StorePathError, match=r"path segment 'team~models'.*artifact_location="):
        locate_repository("models:/rule-breaker/1", artifacts_destination=DESTINATION)


def test_locate_names_the_aws_variables_when_no_credentials_are_set(user_env, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    with pytest.raises(StoreAccessError, match=r"no AWS credentials .*set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        locate_repository("models:/user-classifier/1", artifacts_destination=DESTINATION)


def test_locate_names_the_endpoint_variable_when_the_s3_endpoint_is_unreachable(user_env, monkeypatch):
    (closed_port,) = free_ports(1)
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", f"http://127.0.0.1:{closed_port}")

    with pytest.raises(
        StoreAccessError,
        match=rf"cannot reach the S3 endpoint http://127.0.0.1:{closed_port} .*"
        "MLFLOW_S3_ENDPOINT_URL",
    ):
        locate_repository("models:/user-classifier/1", artifacts_destination=DESTINATION)


def test_locate_refuses_with_how_to_relog_when_the_model_has_no_triton_flavor(user_env):
    with pytest.raises(NotATritonModelError, match=r"models:/plain-sklearn/1 has no triton flavor .*log_model"):
        locate_repository("models:/plain-sklearn/1", artifacts_destination=DESTINATION)


def test_locate_command_prints_one_line_error_and_no_secret_when_credentials_are_missing(
    user_env, monkeypatch, capsys, tmp_path
):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    status = locate_command("models:/user-classifier/1", artifacts_destination=DESTINATION)

    err = capsys.readouterr().err
    assert status == 1
    assert len(err.strip().splitlines()) == 1 and "AWS_ACCESS_KEY_ID" in err


def test_kserve_writes_an_inference_service_valid_for_kserve_with_the_store_address_and_no_secret(user_env, tmp_path):
    path = tmp_path / "isvc.yaml"

    status = kserve_command(
        "models:/user-classifier/1", artifacts_destination=DESTINATION, gpus=1, out_file=path, out=lambda line: None
    )

    assert status == 0
    text = path.read_text()
    manifest = yaml.safe_load(text)
    validate_inference_service(manifest)
    triton = manifest["spec"]["predictor"]["triton"]
    assert re.fullmatch(
        rf"s3://{BUCKET}/mlartifacts/\d+/models/m-[0-9a-f]+/artifacts/model_repository", triton["storageUri"]
    )
    assert triton["args"] == ["--model-control-mode=explicit", "--load-model=classifier"]
    assert triton["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert _secret_free(text)


def test_check_leaves_nothing_in_tmpdir_when_it_proves_a_model_through_the_tracking_server(store, tmp_path):
    """Reading a model's MLmodel through the server (MLflow's ``Model.load`` of a remote URI) left
    ``$TMPDIR/tmpXXXX/MLmodel`` behind on every run."""
    s3, server = store
    temporary = tmp_path / "tmpdir"
    temporary.mkdir()

    completed = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "check",
            "models:/user-classifier/1",
            "--tracking-uri",
            server.url,
            "--work-dir",
            str(tmp_path / "work"),
        ],
        env=_user_environment(TMPDIR=str(temporary), **s3.credentials()),
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr[-6000:]
    assert re.search(r"^PASS models:/user-classifier/1: ", completed.stdout, re.M)
    assert sorted(temporary.rglob("*")) == []


def _store_listing(s3, server):
    """Every object in the bucket, the versions of plain-sklearn with their status, the LoggedModels a search shows."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=server.url, registry_uri=server.url)
    versions = sorted((int(v.version), v.status) for v in client.search_model_versions("name = 'plain-sklearn'"))
    experiments = [e.experiment_id for e in client.search_experiments()]
    models = sorted((m.model_id, str(m.status)) for m in client.search_logged_models(experiment_ids=experiments))
    return versions, models, s3.objects(BUCKET)  # {key: ETag}


@pytest.mark.parametrize("stage", STAGES)
def test_add_repository_leaves_the_s3_store_with_nothing_new_or_one_complete_version_when_ctrl_c_lands_at_each_stage(
    store, tmp_path, stage
):
    s3, server = store
    rows = tmp_path / "rows.json"  # plain-sklearn was logged without an example
    rows.write_text(json.dumps({"dataframe_split": {"columns": ["length", "width", "count"], "data": [[9.5, 4.2, 3]]}}))
    versions, models, objects = _store_listing(s3, server)

    completed = add_repository_stopped_at(
        stage,
        ["models:/plain-sklearn/1", "--input", str(rows), "--tracking-uri", server.url],
        env=_user_environment(**s3.credentials()),
        cwd=tmp_path,
    )

    after_versions, after_models, after_objects = _store_listing(s3, server)
    added_versions = sorted(set(after_versions) - set(versions))
    assert_outcome(stage, completed, "plain-sklearn", added_versions[0][0] if added_versions else None)
    assert _secret_free(completed.stdout, completed.stderr)
    if stage in NOTHING_NEW:
        assert (after_versions, after_models, after_objects) == (versions, models, objects)
    else:
        assert len(added_versions) == 1 and added_versions[0][1] == "READY"
        [(new_id, status)] = sorted(set(after_models) - set(models))
        assert status.endswith("READY")
        added = sorted(set(after_objects) - set(objects))
        assert all(f"/models/{new_id}/artifacts/" in key for key in added)  # the new model's objects only
        assert any(key.endswith(f"{new_id}/artifacts/MLmodel") for key in added)
        assert any(key.endswith("/1/artifact/MLmodel") for key in added)
