"""No credential in what the commands print or write when they fail (``mlflow_triton.command_line._urls``).

Credentials come from three places: the environment (``AWS_SECRET_ACCESS_KEY``, ``MLFLOW_TRACKING_PASSWORD``), the
tracking URI (``http://KEY:SECRET@host:port``) and the S3 endpoint URL (``MLFLOW_S3_ENDPOINT_URL`` with user info).
Each failure path of ``locate``, ``kserve``, ``check`` (with and without ``--from-store``) and ``pack`` runs through
the real command line against a port nobody listens on (bound, then closed): no server is needed.
"""

import sys

import mlflow.tracking._tracking_service.utils as tracking_utils
import pytest

from mlflow_triton import cli
from mlflow_triton.command_line import unreachable, without_user_info
from mlflow_triton.deploy import _store as store_module
from tests.support.fake_triton import fake_triton
from tests.support.ports import free_ports

KEY = "AKIAKEYINURL"
TRACKING_SECRET = "tracking-pw-4f1c"
ENDPOINT_SECRET = "endpoint-pw-9a2e"
DESTINATION_SECRET = "destination-pw-6b07"
ENVIRONMENT_SECRET = "environment-secret-7d3b"
SECRETS = (KEY, TRACKING_SECRET, ENDPOINT_SECRET, DESTINATION_SECRET, ENVIRONMENT_SECRET)
UNSET = (
    "MLFLOW_REGISTRY_URI",
    "MLFLOW_S3_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "MLFLOW_TRITON_ARTIFACTS_DESTINATION",
)
REPOSITORY_SOURCE = "s3://team-bucket/mlartifacts/1/models/m-01/artifacts"


# --- the helper ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://KEY:SECRET@host:5000", "http://host:5000"),
        ("https://token@mlflow.example/prefix", "https://mlflow.example/prefix"),
        ("http://user:p@ss@127.0.0.1:9000/bucket?x=1", "http://127.0.0.1:9000/bucket?x=1"),
        (
            "API request to http://KEY:SECRET@127.0.0.1:5000/api/2.0/x failed with exception HTTPConnectionPool",
            "API request to http://127.0.0.1:5000/api/2.0/x failed with exception HTTPConnectionPool",
        ),
        (
            'Could not connect to the endpoint URL: "http://K:S@127.0.0.1:9/b?list-type=2"',
            'Could not connect to the endpoint URL: "http://127.0.0.1:9/b?list-type=2"',
        ),
        ("s3://KEY:SECRET@bucket/prefix and gs://k:s@b/p", "s3://bucket/prefix and gs://b/p"),
        ("wasbs://container@account.blob.core.windows.net/p", "wasbs://container@account.blob.core.windows.net/p"),
        ("wasbs://key:secret@account.blob.core.windows.net/p", "wasbs://account.blob.core.windows.net/p"),
        ("http://host:5000/api/2.0 mail me@example.com", "http://host:5000/api/2.0 mail me@example.com"),
        ("no URL here: models:/m@champion", "no URL here: models:/m@champion"),
    ],
)
def test_without_user_info_keeps_everything_but_the_user_info_when_text_holds_urls(text, expected):
    assert without_user_info(text) == expected


def test_unreachable_is_none_when_the_error_is_not_a_connection_failure():
    assert unreachable(ValueError("http://KEY:SECRET@host: no such model")) is None


# --- the commands ----------------------------------------------------------------------------------------------


@pytest.fixture
def closed_port():
    """A loopback port nobody listens on (bound, then released)."""
    (port,) = free_ports(1)
    return port


@pytest.fixture
def secret_environment(monkeypatch, workspace):
    """Credentials in the environment, MLflow's and boto's retries off, the tracking URI restored afterwards."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "ENVIRONMENTKEYID",
        "AWS_SECRET_ACCESS_KEY": ENVIRONMENT_SECRET,
        "AWS_SESSION_TOKEN": ENVIRONMENT_SECRET,
        "MLFLOW_TRACKING_USERNAME": "someone",
        "MLFLOW_TRACKING_PASSWORD": ENVIRONMENT_SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_MAX_ATTEMPTS": "1",
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
        "MLFLOW_TRACKING_URI": "sqlite:///never-used.db",  # recorded, so the value a command sets is undone
    }.items():
        monkeypatch.setenv(name, value)
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    return workspace


def command_lines(tmp_path):
    """Each failure path, as the command line runs it (the fake Triton is never started: fetching fails first)."""
    binary, backends = fake_triton(tmp_path)
    triton = ["--tritonserver", str(binary), "--backend-directory", str(backends)]
    return {
        "locate": ["locate", "models:/m/1"],
        "kserve": ["kserve", "models:/m/1", "--out", str(tmp_path / "manifests" / "isvc.yaml")],
        "check": ["check", "models:/m/1", "--work-dir", str(tmp_path / "work"), *triton],
        "check-from-store": ["check", "models:/m/1", "--from-store", "--work-dir", str(tmp_path / "work"), *triton],
        "pack": ["pack", "models:/m/1", "--out", str(tmp_path / "packed")],
    }


COMMANDS = ("locate", "kserve", "check", "check-from-store", "pack")
#: ... and those that read a model, not its repository, from the store.
EVERY_COMMAND = (*COMMANDS, "add-repository", "export-onnx")


def run_failing(argv, capfd):
    status = cli.main(argv)
    out, err = capfd.readouterr()
    assert status == 1, err
    return out + err


def secrets_written_under(root):
    """Files and folders under ``root`` whose name or content holds a secret."""
    found = []
    for path in root.rglob("*"):
        content = path.read_bytes() if path.is_file() else b""
        if any(secret in path.name or secret.encode() in content for secret in SECRETS):
            found.append(str(path))
    return found


@pytest.mark.parametrize("given_as", ["--tracking-uri", "MLFLOW_TRACKING_URI"])
@pytest.mark.parametrize("command", EVERY_COMMAND)
def test_command_names_the_tracking_server_without_its_password_when_it_is_unreachable(
    command, given_as, secret_environment, closed_port, tmp_path, monkeypatch, capfd
):
    tracking_uri = f"http://{KEY}:{TRACKING_SECRET}@127.0.0.1:{closed_port}"
    argv = every_command_line(tmp_path)[command]
    if given_as == "--tracking-uri":
        argv = [*argv, "--tracking-uri", tracking_uri]
    else:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)

    printed = run_failing(argv, capfd)

    assert f"cannot reach the tracking server http://127.0.0.1:{closed_port} (Connection refused)" in printed
    assert "model not found" not in printed and "Max retries exceeded" not in printed
    assert [secret for secret in SECRETS if secret in printed] == []
    assert secrets_written_under(tmp_path) == []


@pytest.fixture
def s3_store(secret_environment, tracking_template, tmp_path):
    """A sqlite store whose registered model ``m`` version 1 lies in S3 (never uploaded: nothing is reachable)."""
    from tests.unit.conftest import TrackingStore

    store = TrackingStore.create(tmp_path / "store", tracking_template)
    client = store.client()
    client.create_registered_model("m")
    client.create_model_version("m", source=REPOSITORY_SOURCE)
    with store.active():
        yield store


@pytest.mark.parametrize("command", EVERY_COMMAND)
def test_command_names_the_s3_endpoint_without_its_password_when_it_is_unreachable(
    command, s3_store, closed_port, tmp_path, monkeypatch, capfd
):
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", f"http://{KEY}:{ENDPOINT_SECRET}@127.0.0.1:{closed_port}")

    printed = run_failing(every_command_line(tmp_path)[command], capfd)

    assert f"cannot reach the S3 endpoint http://127.0.0.1:{closed_port}" in printed
    assert "MLFLOW_S3_ENDPOINT_URL" in printed
    assert "Could not connect to the endpoint URL" not in printed  # botocore's own words
    assert [secret for secret in SECRETS if secret in printed] == []
    assert secrets_written_under(tmp_path) == []


@pytest.mark.parametrize("command", ["locate", "kserve", "check-from-store"])
def test_command_refuses_an_artifacts_destination_without_echoing_its_password_when_it_has_user_info(
    command, secret_environment, tmp_path, monkeypatch, capfd
):
    """A tracking server that proxies artifacts: the model is at mlflow-artifacts:/…, mapped onto the destination."""
    monkeypatch.setattr(store_module, "_model_artifact_uri", lambda uri: "mlflow-artifacts:/1/models/m-01/artifacts")
    monkeypatch.setattr(
        store_module, "_triton_flavor", lambda uri, artifact_uri: {"data": "model_repository/clf", "model_name": "clf"}
    )
    destination = f"s3://{KEY}:{DESTINATION_SECRET}@team-bucket/mlartifacts"

    printed = run_failing([*command_lines(tmp_path)[command], "--artifacts-destination", destination], capfd)

    assert "s3://team-bucket/mlartifacts/1/models/m-01/artifacts/model_repository with user info" in printed
    assert [secret for secret in SECRETS if secret in printed] == []
    assert secrets_written_under(tmp_path) == []


def test_check_report_holds_no_password_when_a_model_uri_error_quoted_one(secret_environment, tmp_path, capfd):
    """Whatever an error quotes, the FAIL line and report.json carry no user info."""
    from mlflow_triton.local.check import ValidationReport

    report = ValidationReport(model="m", reason=f"OSError: GET http://{KEY}:{TRACKING_SECRET}@host/x failed")

    assert TRACKING_SECRET not in report.line() and TRACKING_SECRET not in str(report.to_dict())
    assert "http://host/x" in report.line()


# --- the tracking store's database ---------------------------------------------------------------------------


def every_command_line(tmp_path):
    """Each command that reads a model from the tracking store, as the command line runs it."""
    return {
        **command_lines(tmp_path),
        "add-repository": ["add-repository", "models:/m/1"],
        "export-onnx": ["export-onnx", "models:/m/1", "--out", str(tmp_path / "exports")],
    }


@pytest.mark.parametrize("command", EVERY_COMMAND)
def test_command_names_the_database_driver_to_install_in_one_line_when_it_is_missing(
    command, secret_environment, tmp_path, monkeypatch, capfd
):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` raises ModuleNotFoundError
    tracking_uri = f"postgresql+psycopg://{KEY}:{TRACKING_SECRET}@127.0.0.1:5/mlflow"

    printed = run_failing([*every_command_line(tmp_path)[command], "--tracking-uri", tracking_uri], capfd)

    assert "the tracking store's database driver psycopg is not installed here" in printed
    assert "pip install 'psycopg[binary]'" in printed
    assert "Traceback" not in printed and "model not found" not in printed
    assert [secret for secret in SECRETS if secret in printed] == []
    assert not (tmp_path / "exports").exists() and not (tmp_path / "packed").exists()


def test_unreachable_says_the_database_cannot_be_opened_when_sqlalchemy_cannot_connect(tmp_path):
    import sqlalchemy

    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'no-such-folder' / 'mlflow.db'}")
    with pytest.raises(sqlalchemy.exc.OperationalError) as raised:
        engine.connect()

    assert unreachable(RuntimeError("MLflow's own wrapper")) is None
    assert unreachable(raised.value) == (
        "cannot open the tracking store's database (unable to open database file): check --tracking-uri (or "
        "MLFLOW_TRACKING_URI) and that the database server is running"
    )
