"""``mlflow-triton export-onnx`` end to end, through the installed console script, served on the real Triton.

The example Pipeline is logged to a sqlite store with ``registered_model_name``; the console script exports
it from its Registry URI with ``--backend python``, in a user's shell (no MLflow settings but
``--tracking-uri``). The directory the command wrote is served as it is by the bundled Triton 2.51 (serving
environment from its own requirements.txt: onnxruntime + numpy<2) and its shipped request is answered like
``pyfunc.predict`` of the saved example. Errors come back as one line on stderr, exit 1, no traceback, and
nothing written. Never skipped in CI.
"""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import mlflow
import mlflow.pyfunc
import numpy as np
import pytest

from mlflow_triton.export._parity import FLOAT_TOLERANCES as PARITY_TOLERANCES
from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local.send import decode_response
from mlflow_triton.repository.guard import files_directory, served_directories
from tests.support import tiny_models
from tests.support.ports import free_ports
from tests.support.processes import LineReader, stop_politely, triton_processes_under

CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")
REGISTERED = "cli-export"

pytestmark = pytest.mark.triton


def user_environment():
    """A user's shell: no MLflow settings left by other tests, the shared serving-environment cache."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") or k == "MLFLOW_TRITON_CACHE"}
    environment["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"
    return environment


def export_onnx_command(*args, tracking_uri, cwd):
    return subprocess.run(
        [str(CONSOLE_SCRIPT), "export-onnx", *args, "--tracking-uri", tracking_uri],
        cwd=cwd,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The example Pipeline logged and registered as ``cli-export`` version 1 to a new sqlite store.

    Returns (tracking URI, store directory, ``pyfunc.predict`` of the saved input example).
    """
    from mlflow.artifacts import download_artifacts
    from mlflow.models import Model

    from examples import sklearn_example

    directory = tmp_path_factory.mktemp("cli-export")
    with tiny_models.sqlite_tracking(directory):
        tracking_uri = mlflow.get_tracking_uri()
        info = sklearn_example.log_example(tracking_uri, registered_model_name=REGISTERED)
        local = download_artifacts(info.model_uri, dst_path=str(tmp_path_factory.mktemp("download")))
        example = Model.load(local).load_input_example(local)
        expected = np.asarray(mlflow.pyfunc.load_model(info.model_uri).predict(example))
    return tracking_uri, directory, expected


@pytest.fixture(scope="module")
def exported(store):
    """(completed console-script process, the directory it wrote) for ``--backend python --max-batch-size 16``."""
    tracking_uri, directory, _ = store
    completed = export_onnx_command(
        f"models:/{REGISTERED}/1",
        "--out",
        "exports",
        "--backend",
        "python",
        "--max-batch-size",
        "16",
        tracking_uri=tracking_uri,
        cwd=directory,
    )
    return completed, directory / "exports" / "classifier_onnx"


def test_console_script_exports_the_registered_model_when_given_its_uri(exported):
    completed, directory = exported

    assert completed.returncode == 0, completed.stderr[-3000:]
    assert served_directories(directory) == (directory,)  # one model directory: no zero-row guard's front
    assert completed.stdout.splitlines()[0] == f"exported: {directory}"
    assert sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()) == [
        "1/model.onnx",
        "1/model.py",
        "config.pbtxt",
        "handoff.json",
        "request.json",
        "requirements.txt",
    ]
    assert "Traceback" not in completed.stderr


def test_console_script_export_answers_its_shipped_request_like_pyfunc_when_served_by_real_triton(exported, store):
    completed, directory = exported
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, _, expected = store
    installation = TritonInstallation.bundled()
    files = files_directory(directory)
    env = ensure_serving_env(files / "requirements.txt", installation.serving_constraints)
    models = [served.name for served in served_directories(directory)]

    with TritonServer(directory.parent, models, installation=installation, serving_env=env) as server:
        config = server.model_config(files.name)
        outputs, form = send_shipped_request(server.url, directory)

    [answer] = outputs.values()
    assert (config["backend"], config["max_batch_size"], "dynamic_batching" in config) == ("python", 16, True)
    assert form == "json"
    rtol, atol = PARITY_TOLERANCES["TYPE_FP32"]  # the export's parity tolerance for what the graph computes in FP32
    np.testing.assert_allclose(answer, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize(
    ("uri", "out", "message"),
    [
        (f"models:/{REGISTERED}/1", "exports", "already exists; choose another output directory or remove it first"),
        (
            "models:/missing/1",
            "elsewhere",
            "models:/missing/1: Registered Model with name=missing not found; nothing was written",
        ),
    ],
)
def test_console_script_exits_1_with_one_error_line_when_the_export_cannot_be_made(exported, store, uri, out, message):
    tracking_uri, directory, _ = store
    before = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*"))

    completed = export_onnx_command(uri, "--out", out, tracking_uri=tracking_uri, cwd=directory)

    assert completed.returncode == 1
    assert completed.stdout == ""
    assert completed.stderr.splitlines()[-1].startswith("mlflow-triton export-onnx: error: ")
    assert message in completed.stderr
    assert "Traceback" not in completed.stderr
    assert sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")) == before


def test_serve_answers_the_export_directory_like_pyfunc_when_given_a_python_backend_export(exported, store, tmp_path):
    # The ML Engineer's one command: `mlflow-triton serve <the export directory>` on the bundled Triton.
    completed, directory = exported
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, _, expected = store
    http, grpc, metrics = free_ports()
    work = tmp_path / "work"
    server = subprocess.Popen(
        [
            str(CONSOLE_SCRIPT),
            "serve",
            str(directory),
            "--http-port",
            str(http),
            "--grpc-port",
            str(grpc),
            "--metrics-port",
            str(metrics),
            "--work-dir",
            str(work),
        ],
        cwd=directory.parent,
        env=user_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = LineReader(server.stdout), LineReader(server.stderr)
    try:
        stdout.wait_for("Press Ctrl-C", timeout=900)
        listing = "\n".join(stdout.lines)
        [curl] = re.findall(r"^  classifier_onnx  \(.*\)\n {4}(curl .*)$", listing, re.M)
        assert "request.json" in curl
        answer = subprocess.run(["bash", "-c", curl], capture_output=True, timeout=120)
        [values] = decode_response(answer.stdout, {}).values()
        rtol, atol = PARITY_TOLERANCES["TYPE_FP64"]
        np.testing.assert_allclose(np.asarray(values), expected, rtol=rtol, atol=atol)

        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0, stderr.text()
    finally:
        stop_politely(server)
    assert "tritonserver stopped" in stderr.text()
    assert triton_processes_under(work) == []


def test_serve_refuses_an_onnxruntime_export_saying_to_export_with_the_python_backend(store, tmp_path):
    tracking_uri, directory, _ = store
    completed = export_onnx_command(
        f"models:/{REGISTERED}/1", "--out", str(tmp_path / "ort"), tracking_uri=tracking_uri, cwd=directory
    )
    assert completed.returncode == 0, completed.stderr[-3000:]

    served = subprocess.run(
        [str(CONSOLE_SCRIPT), "serve", str(tmp_path / "ort" / "classifier_onnx"), "--work-dir", str(tmp_path / "work")],
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert served.returncode == 1
    assert served.stderr.splitlines()[-1].startswith("mlflow-triton serve: error: ")
    assert "the Triton bundled with mlflow-triton has only the Python backend" in served.stderr
    assert "--backend python" in served.stderr
    assert "Traceback" not in served.stderr
