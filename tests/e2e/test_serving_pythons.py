"""The sklearn example served by the real Triton 2.51 from Python 3.12 and 3.10 serving environments.

Triton containers embed one Python (the 24.x releases 3.10, the 25.x releases 3.12); ``--python X.Y`` builds
the serving environment with that interpreter and runs the bundled server with the stub of that X.Y, from a
private copy of the backend directory. 3.12: the example is logged here (Python 3.11) and checked with
``mlflow-triton check --python 3.12``. 3.10: scikit-learn >= 1.8 needs Python >= 3.11, so a repository for a 3.10
Triton is logged under 3.10: the example runner runs in ``.venv-py310`` (``make venv-py310``; another place with
``$MLFLOW_TRITON_PY310_VENV``). The interpreters come from PATH or pyenv, as ``--python`` finds them; a missing one
fails the test with how to get it. Never skipped in CI.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from packaging.version import Version

from mlflow_triton import triton
from mlflow_triton.local.installation import TritonInstallation, locate_bundled_server, stub_python_version
from tests.support.processes import triton_processes_under

REPO_ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")
STUB = "triton_python_backend_stub"

pytestmark = pytest.mark.triton


def clean_environment():
    """A user's shell: no MLflow settings left by other tests, the shared serving-environment cache."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") or k == "MLFLOW_TRITON_CACHE"}


def backend_directory_served(log_path):
    """The ``--backend-directory`` of the tritonserver command line the log starts with."""
    return Path(re.search(r"--backend-directory=(\S+)", Path(log_path).read_text()).group(1))


def served_requirements(report_entry):
    text = (Path(report_entry["repository"]) / "requirements.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.fixture(scope="module")
def sklearn_example_store(tmp_path_factory):
    """The sklearn example logged (under this Python) to a sqlite store; (tracking URI, store directory)."""
    from examples.runner.cli import use_local_store
    from examples.sklearn_example import log_example

    store = tmp_path_factory.mktemp("store")
    tracking_uri = use_local_store(store)
    log_example(tracking_uri, registered_model_name="served-from-another-python")
    return tracking_uri, store


def test_check_passes_when_the_sklearn_repository_is_served_from_a_python_3_12_environment(
    sklearn_example_store, tmp_path
):
    tracking_uri, store = sklearn_example_store
    wheel_backend = locate_bundled_server()[0] / "backends" / "python"
    wheel_files = sorted(path.name for path in wheel_backend.iterdir())

    completed = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "check",
            "models:/served-from-another-python/1",
            "--python",
            "3.12",
            "--work-dir",
            str(tmp_path),
            "--tracking-uri",
            tracking_uri,
        ],
        cwd=store,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=1800,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr[-6000:]
    assert completed.stdout.splitlines()[0] == (
        "PASS models:/served-from-another-python/1: Triton 2.51.0 answered the shipped json request like "
        "pyfunc.predict (output_0)"
    )
    assert re.search(
        r"using Triton 2\.51\.0: .* \(Python 3\.12 stub; serving environments from \S+python3\.12\)", completed.stderr
    ), completed.stderr
    assert re.search(
        r"serving environment (ready|\S+) \(\d+ MiB|reusing cached serving environment \S+ \(\d+ MiB", completed.stderr
    ), completed.stderr
    [entry] = json.loads((tmp_path / "report.json").read_text())
    assert entry["serving_env"]["python"].startswith("cpython-3.12."), entry["serving_env"]
    assert entry["serving_env"]["size_mib"] > 0
    assert served_requirements(entry)[0] == f"mlflow-skinny=={mlflow.__version__}"
    backends = backend_directory_served(entry["logs"]["tritonserver"])
    assert backends.name == "backends-py3.12"
    assert stub_python_version(backends / "python" / STUB) == "3.12"
    # the shared installation is never changed: the stub lives in the private copy only
    assert sorted(path.name for path in wheel_backend.iterdir()) == wheel_files
    assert STUB not in wheel_files
    assert triton_processes_under(tmp_path) == []


def test_check_names_the_python_to_log_under_when_a_pinned_version_has_no_release_for_the_serving_python(
    sklearn_example_store, tmp_path
):
    tracking_uri, store = sklearn_example_store
    repository = triton.load_model("models:/served-from-another-python/1", dst_path=str(tmp_path / "download"))
    pins = dict(
        line.split("==", 1) for line in (repository / "requirements.txt").read_text().splitlines() if "==" in line
    )
    # no release for Python 3.10: pip names whichever of them it resolves first
    assert Version(pins["scikit-learn"]) >= Version("1.8") and Version(pins["pandas"]) >= Version("3"), pins

    completed = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "check",
            "models:/served-from-another-python/1",
            "--python",
            "3.10",
            "--work-dir",
            str(tmp_path / "work"),
            "--tracking-uri",
            tracking_uri,
        ],
        cwd=store,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert completed.returncode == 1, completed.stdout + completed.stderr[-6000:]
    verdict = completed.stdout.splitlines()[0]
    assert verdict.startswith(
        "FAIL models:/served-from-another-python/1: ServingEnvError: building the serving environment for "
    ), verdict
    assert "a required version has no release for this Python (cpython-3.10." in verdict
    assert "log the model under the Python of the target Triton's stub" in verdict
    assert any(f"{pins[name]} Requires-Python >=3.11" in verdict for name in ("scikit-learn", "pandas")), verdict


def py310_venv():
    venv = Path(os.environ.get("MLFLOW_TRITON_PY310_VENV") or REPO_ROOT / ".venv-py310")
    python = venv / "bin" / "python"
    assert python.is_file(), (
        f"{python} is missing: `make venv-py310` creates the Python 3.10 environment that logs the example "
        "(`make PYTHON310=/path/to/python3.10 venv-py310` where no python3.10 is on PATH or under pyenv)"
    )
    return python


def test_runner_passes_when_the_sklearn_example_is_logged_and_served_under_python_3_10(tmp_path):
    python = py310_venv()

    completed = subprocess.run(
        [str(python), "-m", "examples.runner", "sklearn", "--python", "3.10", "--work-dir", str(tmp_path)],
        cwd=REPO_ROOT,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=1800,
    )

    output = completed.stdout + completed.stderr
    assert (completed.returncode, re.findall(r"^(PASS|FAIL) (\w+)", completed.stdout, re.M)) == (
        0,
        [("PASS", "sklearn")],
    ), output[-6000:]
    [entry] = json.loads((tmp_path / "report.json").read_text())
    assert entry["serving_env"]["python"].startswith("cpython-3.10."), entry["serving_env"]
    assert served_requirements(entry)[0].startswith("mlflow-skinny==")
    backends = backend_directory_served(entry["logs"]["tritonserver"])
    assert backends.name == "backends-py3.10"
    assert stub_python_version(backends / "python" / STUB) == "3.10"
    assert triton_processes_under(tmp_path) == []


def test_bundled_installation_keeps_one_backend_directory_per_python_when_several_are_used(tmp_path):
    """The running Python's stub and another's side by side in one cache: neither overwrites the other."""
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    other_version = "3.12" if running != "3.12" else "3.10"
    default = TritonInstallation.bundled(tmp_path / "cache", progress=None)
    other = TritonInstallation.bundled(tmp_path / "cache", python=other_version, progress=None)

    assert default.backend_directory != other.backend_directory
    assert stub_python_version(default.backend_directory / "python" / STUB) == running
    assert stub_python_version(other.backend_directory / "python" / STUB) == other_version
