"""The example runner end to end: every example logged, served by a real Triton 2.51, compared.

These tests build (or reuse) serving environments in ``$MLFLOW_TRITON_CACHE`` and start real
``tritonserver`` processes on 127.0.0.1. They are never skipped in CI.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_triton import triton
from mlflow_triton.local import TritonInstallation, ensure_serving_env, validate_repository
from tests.support.oracle import expected_example_tensors
from tests.support.processes import triton_processes_under

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.triton


def run_runner(*args, work_dir):
    """The runner as a user starts it: a fresh process, no MLflow settings left by other tests."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") or k == "MLFLOW_TRITON_CACHE"}
    return subprocess.run(
        [sys.executable, "-m", "examples.runner", *args, "--work-dir", str(work_dir)],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.parametrize("example", ["sklearn", "pytorch", "transformers"])
def test_runner_passes_when_example_is_logged_and_served_by_real_triton(example, tmp_path):
    completed = run_runner(example, work_dir=tmp_path)

    output = completed.stdout + completed.stderr
    assert (completed.returncode, re.findall(r"^(PASS|FAIL) (\w+)", completed.stdout, re.M)) == (
        0,
        [("PASS", example)],
    ), output[-4000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report[0]["real_triton_validation"] and report[0]["passed"]
    assert report[0]["triton_version"] == "2.51.0"
    assert report[0]["request_form"] in ("json", "binary")
    assert all(result["equal"] for result in report[0]["comparison"].values())
    assert triton_processes_under(tmp_path) == []
    if example == "sklearn":  # what `make demo` ends with
        assert completed.stdout.splitlines()[-1] == (
            "PASS sklearn: Triton 2.51.0 answered the shipped json request like pyfunc.predict (output_0)"
        )


@pytest.fixture(scope="module")
def logged_sklearn_repository(tmp_path_factory):
    """The sklearn example logged to a sqlite store; (model URI, repository dir)."""
    from examples.runner.cli import use_local_store
    from examples.sklearn_example import log_example

    store = tmp_path_factory.mktemp("store")
    info = log_example(use_local_store(store), registered_model_name="broken-on-purpose")
    return info.model_uri, triton.load_model(info.model_uri, dst_path=str(store / "download"))


def test_validate_repository_reuses_serving_env_when_run_again(logged_sklearn_repository, tmp_path):
    model_uri, repository = logged_sklearn_repository
    installation = TritonInstallation.bundled(progress=None)
    ensure_serving_env(repository / "requirements.txt", installation.serving_constraints, progress=None)
    messages = []

    report = validate_repository(
        repository,
        expected_example_tensors(model_uri, repository),
        tmp_path / "work",
        installation,
        progress=messages.append,
    )

    assert report.passed, report.reason
    assert any(message.startswith("reusing cached serving environment") for message in messages), messages


def test_validate_repository_passes_with_binary_request_when_example_holds_nan(tmp_path):
    """NaN cannot travel in JSON: the shipped request.bin + request.headers reach real Triton intact."""
    import numpy as np
    import pandas as pd
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema, TensorSpec
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from mlflow_triton import sklearn as triton_sklearn

    frame = pd.DataFrame({"a": [1.0, 2.0, np.nan, 4.0], "b": [0.5, 1.5, 2.5, 3.5]})
    pipeline = make_pipeline(SimpleImputer(), LogisticRegression()).fit(frame, [0, 1, 0, 1])
    signature = ModelSignature(
        Schema([ColSpec("double", "a"), ColSpec("double", "b")]), Schema([TensorSpec(np.dtype("float64"), (-1, 2))])
    )
    triton_sklearn.save_model(
        pipeline,
        tmp_path / "package",
        input_example=frame.iloc[1:3],
        signature=signature,
        pyfunc_predict_fn="predict_proba",
        skops_trusted_types=["numpy.dtype"],
        triton_model_name="with_nan",
    )
    repository = tmp_path / "package" / "model_repository" / "with_nan"

    report = validate_repository(
        repository,
        {"output_0": pipeline.predict_proba(frame.iloc[1:3])},
        tmp_path / "work",
        TritonInstallation.bundled(progress=None),
        progress=lambda _message: None,
    )

    assert (report.passed, report.request_form) == (True, "binary"), report.reason
