"""Validate a generated repository on a real Triton server against MLflow's own prediction.

``validate_model`` fetches the repository of a logged model with
``mlflow_triton.triton.load_model``, computes the expected outputs with
``mlflow.pyfunc.load_model(...).predict`` on the model's saved input example
(encoded with the runtime's output codec), and hands both to
``validate_repository``, which serves the directory and sends its shipped request.
"""

import dataclasses
import json
import shutil
import time
from pathlib import Path

import mlflow.pyfunc
import numpy as np
from mlflow.models import Model

from mlflow_triton.local.send import InferenceError, send_shipped_request
from mlflow_triton.local.server import TritonServer, TritonStartError
from mlflow_triton.local.serving_env import ServingEnvError, ensure_serving_env
from mlflow_triton import triton
from mlflow_triton._config import DEVICE_KINDS, declarations, read_config
from mlflow_triton.runtime.codecs import StructureCodec

# Floats are compared with these tolerances (relative, absolute); everything else exactly.
FLOAT_TOLERANCES = {"float16": (1e-2, 1e-3), "float32": (1e-4, 1e-6), "float64": (1e-6, 1e-9)}


@dataclasses.dataclass
class ValidationReport:
    """One model's real-Triton validation, as written to the JSON report."""

    model: str
    passed: bool = False
    reason: str = ""
    model_uri: str | None = None
    repository: str | None = None
    triton_version: str | None = None
    device: str = "cpu"
    request_form: str | None = None
    comparison: dict = dataclasses.field(default_factory=dict)
    seconds: dict = dataclasses.field(default_factory=dict)
    triton_log_tail: str | None = None

    def line(self):
        verdict = "PASS" if self.passed else "FAIL"
        return f"{verdict} {self.model}: {self.reason}"

    def to_dict(self):
        return {"real_triton_validation": True, **dataclasses.asdict(self)}


def expected_outputs(model_uri, model_dir):
    """``pyfunc.predict`` on the saved input example, encoded into the configured output tensors."""
    config, contract = read_config(Path(model_dir) / "config.pbtxt")
    _, outputs = declarations(config)
    codec = StructureCodec(contract.outputs, {d.name: (d.data_type, d.dims) for d in outputs})
    artifact = Path(model_dir) / "1" / "artifact"
    example = Model.load(str(artifact / "MLmodel")).load_input_example(str(artifact))
    prediction = mlflow.pyfunc.load_model(model_uri).predict(example)
    return codec.to_tensors(prediction)


def compare(expected, actual):
    """Per output: ``{"equal": bool, "how": ..., "max_abs_diff": ...}``; missing outputs are unequal."""
    results = {}
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            results[name] = {"equal": False, "how": "missing from the response"}
            continue
        if got.shape != want.shape:
            results[name] = {"equal": False, "how": f"shape {list(got.shape)} != expected {list(want.shape)}"}
            continue
        if want.dtype.kind == "f":
            rtol, atol = FLOAT_TOLERANCES.get(want.dtype.name, (1e-6, 1e-9))
            got = got.astype(want.dtype)
            equal = bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
            diff = float(np.nanmax(np.abs(got - want))) if want.size else 0.0
            results[name] = {"equal": equal, "how": f"allclose rtol={rtol} atol={atol}", "max_abs_diff": diff}
        else:
            if want.dtype == object:
                want = np.array([_as_bytes(v) for v in want.ravel()], dtype=object).reshape(want.shape)
            results[name] = {"equal": bool(np.array_equal(got, want)), "how": "exact"}
    return results


def _as_bytes(value):
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def validate_model(model_uri, work_dir, installation, *, device="cpu", progress=print, name=None):
    """Fetch the logged model's repository and validate it; returns a ``ValidationReport``."""
    model_dir = triton.load_model(model_uri)
    progress(f"[{name or model_dir.name}] computing the expected outputs with mlflow.pyfunc ...")
    expected = expected_outputs(model_uri, model_dir)
    report = validate_repository(model_dir, expected, work_dir, installation, device=device, progress=progress,
                                 name=name)
    report.model_uri = model_uri
    return report


def validate_repository(model_dir, expected, work_dir, installation, *, device="cpu", progress=print, name=None):
    """Serve ``model_dir`` from a fresh repository under ``work_dir``, send its shipped request, compare."""
    model_dir = Path(model_dir)
    report = ValidationReport(model=name or model_dir.name, device=device)
    repository = Path(work_dir) / "repository"
    shutil.rmtree(repository, ignore_errors=True)
    served = repository / model_dir.name
    shutil.copytree(model_dir, served)
    report.repository = str(served)
    try:
        _check_device(served, device)
        started = time.monotonic()
        progress(f"[{report.model}] serving environment from requirements.txt + {list(installation.serving_constraints)}")
        env = ensure_serving_env(served / "requirements.txt", installation.serving_constraints, progress=progress)
        report.seconds["serving_env"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        progress(f"[{report.model}] starting tritonserver and loading the model ...")
        with TritonServer(repository, served.name, installation=installation, serving_env=env,
                          log_path=Path(work_dir) / f"tritonserver-{served.name}.log") as server:
            report.seconds["server_ready"] = round(time.monotonic() - started, 1)
            report.triton_version = server.version()
            started = time.monotonic()
            try:
                response = send_shipped_request(server.url, served)
            except InferenceError:
                report.triton_log_tail = server.log_tail(40)
                raise
            report.seconds["inference"] = round(time.monotonic() - started, 2)
        report.request_form = response.form
        report.comparison = compare(expected, response.outputs)
        unequal = [n for n, result in report.comparison.items() if not result["equal"]]
        report.passed = not unequal
        report.reason = (
            f"Triton {report.triton_version} answered the shipped {response.form} request with the "
            f"in-memory prediction ({', '.join(sorted(report.comparison))})"
            if report.passed else
            "outputs differ from pyfunc.predict: "
            + "; ".join(f"{n}: {report.comparison[n]['how']}" for n in unequal)
        )
    except TritonStartError as error:
        report.reason = f"Triton did not load the model: {error.reason or 'see log'}"
        report.triton_log_tail = error.log_tail
    except InferenceError as error:
        report.reason = f"Triton rejected the shipped request (HTTP {error.status}): {error.triton_error}"
    except (ServingEnvError, ValueError, OSError) as error:
        report.reason = f"{type(error).__name__}: {error}"
    return report


def _check_device(model_dir, device):
    config, _ = read_config(model_dir / "config.pbtxt")
    kinds = {group.kind for group in config.instance_group}
    if kinds != {DEVICE_KINDS[device]}:
        raise ValueError(
            f"--device {device} asks for a KIND_{device.upper()} repository, but config.pbtxt has "
            f"instance kinds {sorted(kinds)}; log the model with device={device!r}"
        )


def write_report(reports, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([r.to_dict() for r in reports], indent=1) + "\n", encoding="utf-8")
    return path
