"""End-to-end checks of the real-Triton harness in ``mlflow_triton.local``.

These start a real ``tritonserver`` 2.51 (from the ``nvidia-pytriton`` wheel) on 127.0.0.1 with a
hand-written numpy-only Python model. The wheel and the serving environment are cached in
``$MLFLOW_TRITON_CACHE`` (default ``~/.cache/mlflow-triton``); the first run downloads ~55 MB.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as triton_http

from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env, send_shipped_request
from mlflow_triton.local.errors import InferenceError, ServingEnvError, TritonStartError
from mlflow_triton.local.installation import default_cache_dir
from mlflow_triton.local.serving_env import check_requirements, env_python_version
from tests.support.processes import command_lines

pytestmark = [
    pytest.mark.triton,
    pytest.mark.skipif(
        sys.platform != "linux" or platform.machine() != "x86_64",
        reason="the bundled Triton (nvidia-pytriton wheel) is Linux x86_64 only",
    ),
]

MODEL = "doubler"

CONFIG = """\
name: "{name}"
backend: "python"
max_batch_size: 0
input [
  {{ name: "X" data_type: TYPE_FP32 dims: [ -1, 3 ] }},
  {{ name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] }}
]
output [
  {{ name: "Y" data_type: {y_type} dims: [ -1, 3 ] }},
  {{ name: "TEXT_OUT" data_type: TYPE_STRING dims: [ -1 ] }}
]
parameters: {{ key: "mlflow_flavor" value: {{ string_value: "sklearn" }} }}
parameters: {{ key: "signature" value: {{ string_value: "{{\\"inputs\\": [1, 2]}}" }} }}
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
"""

MODEL_PY = """\
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        {init_extra}
        print("MODEL_CONFIG_JSON=" + args["model_config"], flush=True)
        print("ARGS_KEYS=" + json.dumps(sorted(args)), flush=True)
        print("NUMPY_VERSION=" + np.__version__ + " FILE=" + np.__file__, flush=True)
        self.config = json.loads(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            {execute_extra}
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("Y", (x * 2).astype(np.float32)),
                pb_utils.Tensor("TEXT_OUT", text),
            ]))
        return responses
"""

X = np.array([[1.0, 2.0, 3.0], [-1.5, 0.0, 4.25]], dtype=np.float32)
TEXT = np.array([b"hello", "gr\u00fc\u00dfe".encode()], dtype=object)


def write_model(
    repo: Path, name: str = MODEL, *, y_type: str = "TYPE_FP32", init_extra: str = "pass", execute_extra: str = "pass"
) -> Path:
    model_dir = repo / name
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "config.pbtxt").write_text(CONFIG.format(name=name, y_type=y_type))
    (model_dir / "1" / "model.py").write_text(MODEL_PY.format(init_extra=init_extra, execute_extra=execute_extra))
    (model_dir / "requirements.txt").write_text("numpy\n")
    return model_dir


def write_json_request(model_dir: Path) -> None:
    body = {
        "inputs": [
            {"name": "X", "datatype": "FP32", "shape": list(X.shape), "data": X.ravel().tolist()},
            {"name": "TEXT", "datatype": "BYTES", "shape": list(TEXT.shape), "data": [t.decode() for t in TEXT]},
        ],
        "outputs": [{"name": "Y"}, {"name": "TEXT_OUT"}],
    }
    (model_dir / "request.json").write_text(json.dumps(body))


def write_binary_request(model_dir: Path) -> int:
    x = triton_http.InferInput("X", list(X.shape), "FP32")
    x.set_data_from_numpy(X, binary_data=True)
    text = triton_http.InferInput("TEXT", list(TEXT.shape), "BYTES")
    text.set_data_from_numpy(TEXT, binary_data=True)
    outputs = [
        triton_http.InferRequestedOutput("Y", binary_data=True),
        triton_http.InferRequestedOutput("TEXT_OUT", binary_data=True),
    ]
    body, json_size = triton_http.InferenceServerClient.generate_request_body([x, text], outputs=outputs)
    (model_dir / "request.bin").write_bytes(body)
    (model_dir / "request.headers").write_text(
        f"Content-Type: application/octet-stream\nInference-Header-Content-Length: {json_size}\n"
    )
    return json_size


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def cache_dir() -> Path:
    return default_cache_dir()


@pytest.fixture(scope="session")
def installation(cache_dir) -> TritonInstallation:
    return TritonInstallation.bundled(cache_dir)


@pytest.fixture(scope="session")
def serving_env(installation, cache_dir, tmp_path_factory) -> Path:
    req = tmp_path_factory.mktemp("req") / "requirements.txt"
    req.write_text("numpy\n")
    started = time.monotonic()
    env = ensure_serving_env(req, installation.serving_constraints, cache_dir)
    print(f"[timing] ensure_serving_env: {time.monotonic() - started:.1f}s")
    return env


# --------------------------------------------------------------------------- tests
def test_installation_and_env(installation, serving_env, cache_dir, tmp_path, capsys):
    assert installation.server_binary.is_file()
    assert (installation.backend_directory / "python" / "triton_python_backend_stub").is_file()
    assert installation.serving_constraints == ("numpy<2",)
    assert env_python_version(serving_env) == f"{sys.version_info.major}.{sys.version_info.minor}"
    record = json.loads((serving_env / "mlflow-triton-env.json").read_text())
    numpy_pin = [p for p in record["installed"] if p.lower().startswith("numpy==")]
    assert numpy_pin and numpy_pin[0].split("==")[1].startswith("1."), numpy_pin
    # pip's console script was relocated along with the venv
    assert str(serving_env) in (serving_env / "bin" / "pip").read_text().splitlines()[0]

    # same requirements text -> same environment, reused
    req = tmp_path / "requirements.txt"
    req.write_text("numpy\n")
    assert ensure_serving_env(req, installation.serving_constraints, cache_dir) == serving_env
    assert "reusing cached serving environment" in capsys.readouterr().out
    # reusing the installation too
    assert TritonInstallation.bundled(cache_dir, progress=None) == installation


def test_json_and_binary_requests(installation, serving_env, tmp_path):
    model_dir = write_model(tmp_path / "repo")
    write_json_request(model_dir)

    started = time.monotonic()
    with TritonServer(
        tmp_path / "repo", MODEL, installation=installation, serving_env=serving_env, log_path=tmp_path / "triton.log"
    ) as server:
        print(f"[timing] server start to model ready: {time.monotonic() - started:.1f}s")
        assert server.url.startswith("http://127.0.0.1:")
        assert server.version() == installation.version == "2.51.0"

        for transport in ("curl", "http.client"):
            outputs, form = send_shipped_request(server.url, model_dir, transport=transport)
            assert form == "json"
            np.testing.assert_array_equal(outputs["Y"], X * 2)
            assert outputs["Y"].dtype == np.float32 and outputs["Y"].shape == (2, 3)
            assert outputs["TEXT_OUT"].dtype == object
            assert outputs["TEXT_OUT"].tolist() == TEXT.tolist()

        (model_dir / "request.json").unlink()
        write_binary_request(model_dir)
        for transport in ("curl", "http.client"):
            outputs, form = send_shipped_request(server.url, model_dir, transport=transport)
            assert form == "binary"
            np.testing.assert_array_equal(outputs["Y"], X * 2)
            assert outputs["Y"].dtype == np.float32
            assert outputs["TEXT_OUT"].tolist() == TEXT.tolist()

        # what Triton hands model.py in args["model_config"], and which numpy the stub uses
        log = server.log_text()
        line = next(line for line in log.splitlines() if line.startswith("MODEL_CONFIG_JSON="))
        model_config = json.loads(line.split("=", 1)[1])
        print(json.dumps(model_config, indent=1))
        print(next(line for line in log.splitlines() if line.startswith("ARGS_KEYS=")))
        print(next(line for line in log.splitlines() if line.startswith("NUMPY_VERSION=")))
        assert str(serving_env) in log  # numpy came from the serving env
        assert model_config["input"][0]["dims"] == [-1, 3]  # JSON numbers, not protobuf-JSON strings
        assert model_config["input"][1]["data_type"] == "TYPE_STRING"
        assert model_config["parameters"]["mlflow_flavor"] == {"string_value": "sklearn"}
        pid = server.pid

    # stopped, and the port is closed
    assert server.pid is None
    with pytest.raises(OSError):
        import urllib.request

        urllib.request.urlopen(f"{server.url}/v2/health/live", timeout=2)
    assert pid is not None


def test_model_raising_in_initialize_fails_startup(installation, serving_env, tmp_path):
    write_model(tmp_path / "repo", init_extra='raise RuntimeError("artifact is missing: boom-42")')
    with pytest.raises(TritonStartError) as info:
        with TritonServer(
            tmp_path / "repo", MODEL, installation=installation, serving_env=serving_env, startup_timeout=60
        ):
            pytest.fail("server should not become ready")
    err = info.value
    print(err)
    assert "boom-42" in (err.reason or "")
    assert "boom-42" in str(err)
    assert "failed to load" in str(err)


def test_request_datatype_mismatch_fails_inference(installation, serving_env, tmp_path):
    # the shipped request says INT32 for X, the config declares TYPE_FP32: Triton rejects it
    model_dir = write_model(tmp_path / "repo")
    write_json_request(model_dir)
    body = json.loads((model_dir / "request.json").read_text())
    body["inputs"][0]["datatype"] = "INT32"
    body["inputs"][0]["data"] = [1, 2, 3, 4, 5, 6]
    (model_dir / "request.json").write_text(json.dumps(body))
    with TritonServer(tmp_path / "repo", MODEL, installation=installation, serving_env=serving_env) as server:
        for transport in ("curl", "http.client"):
            with pytest.raises(InferenceError) as info:
                send_shipped_request(server.url, model_dir, transport=transport)
            err = info.value
            print(err)
            assert err.status == 400
            assert "INT32" in err.triton_error and "FP32" in err.triton_error
            assert err.triton_error in str(err)


def test_model_raising_in_execute_fails_inference(installation, serving_env, tmp_path):
    model_dir = write_model(tmp_path / "repo", execute_extra='raise ValueError("cannot score this: boom-77")')
    write_json_request(model_dir)
    with TritonServer(tmp_path / "repo", MODEL, installation=installation, serving_env=serving_env) as server:
        with pytest.raises(InferenceError) as info:
            send_shipped_request(server.url, model_dir)
    print(info.value)
    assert "boom-77" in info.value.triton_error


def test_output_datatype_mismatch_is_not_checked_by_triton(installation, serving_env, tmp_path):
    """Characterisation of Triton 2.51's Python backend: an output whose dtype differs from the
    config (model returns FP32, config says TYPE_INT32) is sent as-is, labelled FP32. The
    generated model.py must cast to the configured dtype itself; Triton will not catch it."""
    model_dir = write_model(tmp_path / "repo", y_type="TYPE_INT32")
    write_json_request(model_dir)
    with TritonServer(tmp_path / "repo", MODEL, installation=installation, serving_env=serving_env) as server:
        outputs, _ = send_shipped_request(server.url, model_dir)
    assert outputs["Y"].dtype == np.float32


def test_unknown_model_fails_startup(installation, serving_env, tmp_path):
    write_model(tmp_path / "repo")
    with pytest.raises(TritonStartError) as info:
        with TritonServer(
            tmp_path / "repo", "no_such_model", installation=installation, serving_env=serving_env, startup_timeout=60
        ):
            pass
    print(info.value)
    assert "no_such_model" in str(info.value)


def test_conflict_dry_run(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("numpy==2.1.0\n")
    with pytest.raises(ServingEnvError) as info:
        check_requirements(req, ["numpy<2"])
    err = info.value
    print(err)
    assert err.conflict
    assert "numpy<2" in str(err)
    assert any("numpy==2.1.0" in line for line in err.pip_lines)
    assert any("(constraint) numpy<2" in line for line in err.pip_lines)


def test_conflict_in_ensure_serving_env_leaves_nothing(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("numpy==2.1.0\n")
    cache = tmp_path / "cache"
    with pytest.raises(ServingEnvError) as info:
        ensure_serving_env(req, ["numpy<2"], cache, progress=None)
    err = info.value
    assert err.conflict
    assert any("The user requested (constraint) numpy<2" in line for line in err.pip_lines), err.pip_lines
    assert list((cache / "envs").iterdir()) == []


CHILD = """\
import time
from mlflow_triton.local import TritonInstallation, TritonServer
inst = TritonInstallation.bundled({cache!r}, progress=None)
with TritonServer({repo!r}, "doubler", installation=inst, serving_env={env!r}) as server:
    print(server.pid, flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_signals_stop_the_server(installation, serving_env, cache_dir, tmp_path, sig):
    """SIGTERM and SIGINT: the parent stops the server; SIGKILL: the kernel's parent-death signal does."""
    import os
    import signal
    import subprocess

    write_model(tmp_path / "repo")
    script = CHILD.format(cache=str(cache_dir), repo=str(tmp_path / "repo"), env=str(serving_env))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    server_pid = None
    try:
        server_pid = int(child.stdout.readline())
        os.kill(server_pid, 0)  # running
        child.send_signal(getattr(signal, sig))
        child.wait(30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if server_pid not in command_lines():  # gone, or a zombie nobody has reaped yet
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"tritonserver {server_pid} still running after {sig} to its parent")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if server_pid in command_lines():  # the test failed: do not leave the server (a group leader) behind
            os.killpg(server_pid, signal.SIGKILL)
