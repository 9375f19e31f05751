"""`TritonServer` on a model repository Triton reads itself (`s3://`, `gs://`, `as://`), and on several of them."""

from pathlib import Path

import pytest

from mlflow_triton.local import TritonInstallation, TritonServer
from mlflow_triton.local._server import is_cloud_repository

INSTALLATION = TritonInstallation(
    server_binary=Path("/opt/tritonserver/bin/tritonserver"), backend_directory=Path("/opt/tritonserver/backends")
)
S3 = "s3://127.0.0.1:9000/mlflow-bucket/mlartifacts/1/models/m-01/artifacts/model_repository"


def repositories(command):
    return [arg.split("=", 1)[1] for arg in command if arg.startswith("--model-repository=")]


@pytest.mark.parametrize("address", [S3, "gs://bucket/models/model_repository", "as://account/container/repo"])
def test_server_command_passes_the_address_unchanged_when_the_repository_is_in_object_storage(address):
    server = TritonServer(address, "classifier", installation=INSTALLATION)

    assert repositories(server.command()) == [address]
    assert is_cloud_repository(address)


def test_server_command_has_one_model_repository_option_each_when_several_repositories_are_given(tmp_path):
    server = TritonServer([S3, tmp_path], ["classifier", "other"], installation=INSTALLATION)

    assert repositories(server.command()) == [S3, str(tmp_path.resolve())]


def test_server_command_resolves_a_local_directory_when_the_repository_is_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    assert repositories(TritonServer("repo", "m", installation=INSTALLATION).command()) == [str(tmp_path / "repo")]
    assert not is_cloud_repository(tmp_path)


def test_server_environment_adds_the_given_variables_when_environment_is_given(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-the-shell")

    env = TritonServer(
        S3, "m", installation=INSTALLATION, environment={"TRITON_AWS_MOUNT_DIRECTORY": "/tmp/mount"}
    ).environment()

    assert (env["TRITON_AWS_MOUNT_DIRECTORY"], env["AWS_ACCESS_KEY_ID"]) == ("/tmp/mount", "from-the-shell")


def test_server_is_refused_when_no_repository_is_given():
    with pytest.raises(ValueError, match="at least one model repository"):
        TritonServer([], "m", installation=INSTALLATION)
