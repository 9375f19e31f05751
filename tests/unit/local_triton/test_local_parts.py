"""The small parts of `mlflow_triton.local`: server command line, serving-environment cache keys, progress, curl."""

import io
import json
import shlex
import socket
from pathlib import Path

import pytest

from mlflow_triton.command_line import Progress, as_progress
from mlflow_triton.local import TritonInstallation, TritonServer
from mlflow_triton.local._server import check_port_free, connect_host, is_loopback
from mlflow_triton.local.errors import PortInUseError
from mlflow_triton.local.send import RequestFiles, curl_command
from mlflow_triton.local.serving_env import (
    ENV_RECORD,
    _env_key,
    _latest_step,
    _satisfying_env,
    requirement_lines,
)

INSTALLATION = TritonInstallation(
    server_binary=Path("/opt/tritonserver/bin/tritonserver"), backend_directory=Path("/opt/tritonserver/backends")
)


def addresses(command):
    """``{"--http-address": host, ...}`` from a tritonserver command line."""
    options = dict(arg.split("=", 1) for arg in command if "=" in arg)
    return {name: value for name, value in options.items() if name.endswith("-address")}


def test_server_command_binds_http_grpc_and_metrics_to_loopback_when_no_host_is_given(tmp_path):
    server = TritonServer(tmp_path, ["a", "b"], installation=INSTALLATION)

    command = server.command()

    assert addresses(command) == {
        "--http-address": "127.0.0.1",
        "--grpc-address": "127.0.0.1",
        "--metrics-address": "127.0.0.1",
    }
    assert [arg for arg in command if arg.startswith("--load-model=")] == ["--load-model=a", "--load-model=b"]
    assert "--model-control-mode=explicit" in command


def test_server_command_binds_the_given_host_when_one_is_asked_for(tmp_path):
    server = TritonServer(
        tmp_path, "a", installation=INSTALLATION, host="0.0.0.0", http_port=18000, grpc_port=18001, metrics_port=18002
    )

    assert set(addresses(server.command()).values()) == {"0.0.0.0"}
    assert server.model_names == ("a",)


@pytest.mark.parametrize(
    ("host", "loopback", "connect"),
    [
        ("127.0.0.1", True, "127.0.0.1"),
        ("127.0.1.1", True, "127.0.1.1"),
        ("localhost", True, "localhost"),
        ("::1", True, "[::1]"),
        ("0.0.0.0", False, "127.0.0.1"),
        ("::", False, "[::1]"),
        ("10.1.2.3", False, "10.1.2.3"),
    ],
)
def test_host_helpers_classify_and_connect_when_given_an_address(host, loopback, connect):
    assert (is_loopback(host), connect_host(host)) == (loopback, connect)


def test_server_rejects_ports_when_only_some_are_fixed(tmp_path):
    with pytest.raises(ValueError, match="give all three of http_port, grpc_port and metrics_port, or none"):
        TritonServer(tmp_path, "a", installation=INSTALLATION, http_port=18000)


def test_check_port_free_names_the_option_when_the_port_is_taken():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]

        with pytest.raises(PortInUseError, match=rf"port {port} \(--grpc-port\) is already in use on 127.0.0.1"):
            check_port_free("127.0.0.1", port, "--grpc-port")


def test_requirement_lines_drop_comments_and_duplicates_and_sort_when_read():
    text = "# header\nscikit-learn==1.9.1\n\nmlflow==3.17.2  # pinned\nscikit-learn==1.9.1\n  skops==0.16.0\n"

    assert requirement_lines(text) == ["mlflow==3.17.2", "scikit-learn==1.9.1", "skops==0.16.0"]


def test_env_key_is_the_same_when_requirements_differ_only_in_order_and_comments():
    python = "cpython-3.11.7-x86_64"
    first = requirement_lines("# A\nb==1\na==2\n")
    second = requirement_lines("a==2\n# B\nb==1\nb==1\n")

    assert _env_key(first, ["numpy<2"], python) == _env_key(second, ["numpy<2"], python)
    assert _env_key(first, ["numpy<2"], python) != _env_key(first, [], python)
    assert _env_key(first, [], python) != _env_key(first, [], "cpython-3.12.1-x86_64")


def write_env(envs, key, installed, constraints=("numpy<2",), python="cpython-3.11.7-x86_64"):
    (envs / key).mkdir(parents=True)
    (envs / key / ENV_RECORD).write_text(
        json.dumps({"requirements": [], "constraints": list(constraints), "python": python, "installed": installed})
    )
    return envs / key


@pytest.mark.parametrize(
    ("lines", "found"),
    [
        (["mlflow==3.17.2", "torch==2.13.0"], True),  # torch 2.13.0+cpu satisfies ==2.13.0
        (["cloudpickle>=3", "scikit-learn==1.9.1"], True),
        (["scikit-learn==1.5.2"], False),  # another version
        (["transformers==5.24.0"], False),  # not installed
        (["mlflow==3.17.2", "--extra-index-url https://x"], False),  # not a plain requirement: build exactly
        (["torch==2.13.0; python_version > '3'"], False),
    ],
)
def test_satisfying_env_reuses_an_environment_only_when_its_packages_meet_every_line(tmp_path, lines, found):
    env = write_env(
        tmp_path, "aaaa", ["mlflow==3.17.2", "torch==2.13.0+cpu", "cloudpickle==3.1.3", "scikit-learn==1.9.1"]
    )

    assert _satisfying_env(tmp_path, lines, ["numpy<2"], "cpython-3.11.7-x86_64") == (env if found else None)


def test_satisfying_env_ignores_environments_when_interpreter_or_constraints_differ(tmp_path):
    write_env(tmp_path, "other-python", ["mlflow==3.17.2"], python="cpython-3.12.1-x86_64")
    write_env(tmp_path, "other-constraints", ["mlflow==3.17.2"], constraints=())

    assert _satisfying_env(tmp_path, ["mlflow==3.17.2"], ["numpy<2"], "cpython-3.11.7-x86_64") is None


@pytest.mark.parametrize(
    ("output", "step"),
    [
        (
            "Collecting torch==2.13.0\n  Downloading torch-2.13.0.whl (190 MB)\n",
            "Downloading torch-2.13.0.whl (190 MB)",
        ),
        (
            "Installing collected packages: a, b\n  Attempting uninstall: setuptools\n    Found existing installation\n"
            "    Successfully uninstalled setuptools-65.5.0\n",
            "Installing collected packages: a, b",
        ),
        ("some unrelated line\n", "earlier step"),
    ],
)
def test_latest_step_reports_the_pip_stage_when_new_output_arrives(output, step):
    assert _latest_step(output, "earlier step") == step


def test_progress_prints_changed_steps_and_a_heartbeat_but_not_every_tick_when_not_on_a_terminal(monkeypatch):
    lines, clock = [], iter([0.0, 1.0, 6.0, 7.0, 40.0])
    monkeypatch.setattr("mlflow_triton.command_line._progress.time.monotonic", lambda: next(clock))
    progress = Progress(lines.append, interval=5.0, heartbeat=30.0)

    for message, elapsed in [
        ("Collecting a", 1),
        ("Collecting a", 2),
        ("Collecting b", 6),
        ("Collecting b", 7),
        ("Collecting b", 40),
    ]:
        progress.step(message, elapsed=elapsed)

    assert lines == ["      1s  Collecting a", "      6s  Collecting b", "     40s  Collecting b"]


def test_progress_rewrites_one_line_and_clears_it_when_on_a_terminal():
    stream = io.StringIO()
    progress = Progress(stream=stream, live=True, prefix="[m] ")

    progress.step("Collecting a", elapsed=3)
    progress.say("done")

    assert stream.getvalue() == "\r\x1b[K[m]       3s  Collecting a\r\x1b[K[m] done\n"


def test_as_progress_accepts_a_callable_none_or_progress_when_given_any():
    seen = []
    as_progress(seen.append).say("a")
    as_progress(None).say("b")
    progress = Progress(seen.append)

    assert as_progress(progress) is progress and seen == ["a"]


def test_curl_command_is_a_pasteable_shell_command_when_paths_hold_spaces():
    request = RequestFiles(
        "binary",
        Path("/tmp/my models/request.bin"),
        [("Content-Type", "application/octet-stream"), ("Inference-Header-Content-Length", "120")],
    )

    words = shlex.split(curl_command("http://127.0.0.1:8000", "my_model", request))

    assert words == [
        "curl",
        "-s",
        "-X",
        "POST",
        "http://127.0.0.1:8000/v2/models/my_model/infer",
        "-H",
        "Content-Type: application/octet-stream",
        "-H",
        "Inference-Header-Content-Length: 120",
        "--data-binary",
        "@/tmp/my models/request.bin",
        "-D",
        "headers.txt",
        "-o",
        "response.bin",
    ]


def test_remove_stale_builds_removes_only_builds_whose_pip_log_is_idle_for_hours(tmp_path):
    import os
    import time

    from mlflow_triton.local.serving_env import PIP_LOG, _remove_stale_builds

    stale, running, finished = tmp_path / ".aaaa-old", tmp_path / ".bbbb-new", tmp_path / "cccc"
    for build in (stale, running, finished):
        build.mkdir()
        (build / PIP_LOG).write_text("Collecting x\n")
    hours_ago = time.time() - 7 * 3600
    for path in (stale, stale / PIP_LOG, finished, finished / PIP_LOG):
        os.utime(path, (hours_ago, hours_ago))

    _remove_stale_builds(tmp_path)

    assert sorted(p.name for p in tmp_path.iterdir()) == [".bbbb-new", "cccc"]


def test_progress_leaves_out_the_user_info_of_every_url_it_prints():
    # a model URI typed with credentials ([s3://KEY:SECRET@bucket/...] fetching ...) must not reach the log
    lines = []
    progress = Progress(lines.append, prefix="[s3://KEY:SECRET@bucket/model] ")

    progress.say("fetching the model's Triton repository ...")
    progress.step("reading http://user:pass@127.0.0.1:9000/bucket", elapsed=1.0)

    assert lines == [
        "[s3://bucket/model] fetching the model's Triton repository ...",
        "[s3://bucket/model]       1s  reading http://127.0.0.1:9000/bucket",
    ]
