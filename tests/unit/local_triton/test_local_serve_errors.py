"""`mlflow-triton serve` refuses, before building or starting anything, what cannot be served together."""

import re
import socket

import pytest

from mlflow_triton import sklearn as triton_sklearn
from mlflow_triton.command_line import StopRequested
from mlflow_triton.local import _serve as serve_module
from mlflow_triton.local import serve_command, serve_models
from mlflow_triton.local.errors import PortInUseError, RepositoryAssemblyError
from mlflow_triton.local.installation import TritonInstallation
from tests.support import ports
from tests.support.processes import triton_processes_under


@pytest.fixture
def fake_installation(tmp_path, monkeypatch):
    """A Triton installation that exists on disk; these tests must fail before it would start.

    The cache points into ``tmp_path``: a test that built an environment by mistake would show it there.
    """
    monkeypatch.setenv("MLFLOW_TRITON_CACHE", str(tmp_path / "cache"))
    binary = tmp_path / "fake-triton" / "bin" / "tritonserver"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\nexit 99\n")
    binary.chmod(0o755)
    (tmp_path / "fake-triton" / "backends" / "python").mkdir(parents=True)
    return TritonInstallation.custom(binary, tmp_path / "fake-triton" / "backends", serving_constraints=("numpy<2",))


@pytest.fixture
def saved_model(fitted_pipeline, example_frame, tmp_path):
    """``saved_model(directory, triton_model_name)`` -> a local MLflow model directory with a repository."""

    def save(directory, name="clf"):
        path = tmp_path / directory
        triton_sklearn.save_model(fitted_pipeline, path, input_example=example_frame, triton_model_name=name)
        return path

    return save


@pytest.fixture
def free_ports():
    return dict(zip(("http_port", "grpc_port", "metrics_port"), ports.free_ports(3)))


def test_serve_names_both_uris_and_how_to_rename_when_two_models_share_a_triton_name(
    saved_model, fake_installation, free_ports, tmp_path
):
    first, second = saved_model("first"), saved_model("second")

    with pytest.raises(
        RepositoryAssemblyError,
        match=re.escape(
            f"{first} and {second} both have the Triton model name 'clf'; one repository can hold only one model of "
            "a name. Re-log one of them with another name, e.g. mlflow_triton.<flavor>.log_model(..., "
            'triton_model_name="clf_2")'
        ),
    ):
        serve_models([str(first), str(second)], tmp_path / "work", fake_installation, progress=None, **free_ports)
    assert not (tmp_path / "work" / "repository").exists() and not (tmp_path / "cache").exists()
    assert triton_processes_under(tmp_path) == []


def test_serve_quotes_both_requirement_lines_when_models_pin_different_versions(
    saved_model, fake_installation, free_ports, tmp_path
):
    current, old = saved_model("current", "current"), saved_model("old", "old")
    requirements = old / "model_repository" / "old" / "requirements.txt"
    requirements.write_text(re.sub(r"scikit-learn==\S+", "scikit-learn==1.5.2", requirements.read_text()))
    current_requirements = current / "model_repository" / "current" / "requirements.txt"
    pinned = re.search(r"scikit-learn==\S+", current_requirements.read_text())

    with pytest.raises(RepositoryAssemblyError) as raised:
        serve_models([str(current), str(old)], tmp_path / "work", fake_installation, progress=None, **free_ports)

    message = str(raised.value)
    assert message.startswith(
        "the models' requirements cannot share one serving environment: they pin different versions of the same package"
    )
    assert f"  {current} (current) requirements.txt: {pinned.group(0)}" in message
    assert f"  {old} (old) requirements.txt: scikit-learn==1.5.2" in message
    assert not (tmp_path / "cache").exists() and triton_processes_under(tmp_path) == []


def test_serve_command_says_which_port_is_taken_when_http_port_is_in_use(
    saved_model, fake_installation, free_ports, tmp_path, capsys
):
    model = saved_model("model")
    backends = fake_installation.backend_directory
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", free_ports["http_port"]))
        holder.listen()

        status = serve_command(
            [str(model)],
            tritonserver=fake_installation.server_binary,
            backend_directory=backends,
            work_dir=tmp_path / "work",
            out=print,
            progress=None,
            **free_ports,
        )

    assert status == 1
    assert re.search(
        rf"mlflow-triton serve: error: port {free_ports['http_port']} \(--http-port\) is already in use "
        r"on 127\.0\.0\.1: .+; choose another with --http-port PORT",
        capsys.readouterr().err,
    )
    assert not (tmp_path / "cache").exists() and triton_processes_under(tmp_path) == []


def test_serve_refuses_a_triton_directory_when_it_ships_no_requirements(
    saved_model, fake_installation, free_ports, tmp_path
):
    model = saved_model("model")
    (model / "model_repository" / "clf" / "requirements.txt").unlink()

    with pytest.raises(RepositoryAssemblyError, match="'clf' ships no requirements.txt"):
        serve_models([str(model)], tmp_path / "work", fake_installation, progress=None, **free_ports)


def test_serve_rejects_the_ports_before_fetching_anything_when_two_are_equal(fake_installation, tmp_path):
    with pytest.raises(PortInUseError, match=r"three different ports, got \[18000, 18000, 18002\]"):
        serve_models(
            ["models:/never-fetched/1"],
            tmp_path / "work",
            fake_installation,
            progress=None,
            http_port=18000,
            grpc_port=18000,
            metrics_port=18002,
        )
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize(
    "host, reason",
    [("nosuch.invalid", "cannot be resolved to an IPv4 address"), ("192.0.2.1", "not an address of this machine")],
)
def test_serve_command_says_the_host_is_unusable_not_that_a_port_is_taken_when_host_is_wrong(
    host, reason, fake_installation, free_ports, tmp_path, capsys
):
    status = serve_command(
        ["models:/never-fetched/1"],
        host=host,
        tritonserver=fake_installation.server_binary,
        backend_directory=fake_installation.backend_directory,
        work_dir=tmp_path / "work",
        progress=lambda text: None,
        **free_ports,
    )

    error = capsys.readouterr().err
    assert status == 1
    assert f"mlflow-triton serve: error: --host {host}: {reason}" in error
    assert "in use" not in error


def test_serve_command_prints_one_error_line_when_the_work_dir_cannot_be_created(
    fake_installation, free_ports, tmp_path, capsys
):
    occupied = tmp_path / "a-file"
    occupied.write_text("")

    status = serve_command(
        ["models:/never-fetched/1"],
        tritonserver=fake_installation.server_binary,
        backend_directory=fake_installation.backend_directory,
        work_dir=occupied,
        progress=lambda text: None,
        **free_ports,
    )

    assert (status, capsys.readouterr().err) == (1, f"mlflow-triton serve: error: File exists: {occupied}\n")


class _ServerThatRuns:
    """A TritonServer already up: serve lists its models and waits; nothing is started."""

    http_url, grpc_address, metrics_url = "http://127.0.0.1:1", "127.0.0.1:2", "http://127.0.0.1:3/metrics"

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


@pytest.mark.parametrize(
    ("stop", "said"),
    [
        (KeyboardInterrupt(), "Ctrl-C received: stopping tritonserver ..."),
        (StopRequested("SIGTERM"), "SIGTERM received"),
    ],
    ids=["Ctrl-C", "SIGTERM"],
)
def test_serve_names_the_stop_it_received_when_ctrl_c_or_sigterm_ends_it(
    saved_model, fake_installation, free_ports, tmp_path, monkeypatch, stop, said
):
    """Python's KeyboardInterrupt for Ctrl-C has an empty str(): the line said ' received: stopping …'."""
    monkeypatch.setattr(serve_module, "ensure_env_for_requirements", lambda *args, **kwargs: tmp_path / "env")
    monkeypatch.setattr(serve_module, "TritonServer", _ServerThatRuns)
    monkeypatch.setattr(serve_module, "_listing", lambda server, served, log_path: "listing")
    lines = []

    def stopped(server):
        raise stop

    status = serve_models(
        [str(saved_model("model"))],
        tmp_path / "work",
        fake_installation,
        progress=lines.append,
        wait=stopped,
        out=lambda line: None,
        **free_ports,
    )

    assert status == 0
    assert lines[-2].startswith(said) and lines[-1] == "tritonserver stopped"
