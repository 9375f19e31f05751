"""`mlflow-triton check` and the example runner prove a logged model without writing into the local store (#18.9).

Triton writes ``1/__pycache__/`` next to ``model.py`` and Python writes ``__pycache__/`` into a model's
``code/`` when it imports the code it travels with: serving or loading the directory inside a local artifact
store would change the logged model. Both commands must work on copies. Every folder and every file's
SHA-256 under the store's artifact root is taken before and after; nothing may be added, removed or changed.

The models are a user's (``tests/support/user_script.py``): its scikit-learn Pipeline and its PyTorch
module whose architecture travels with ``code_paths``, logged in a fresh process to a sqlite store. Their
requirements are the flavors' defaults, so the serving environments the example-runner tests build are
reused from ``$MLFLOW_TRITON_CACHE``.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.processes import triton_processes_under
from tests.support.tree_digest import changes, tree_digest

REPO_ROOT = Path(__file__).resolve().parents[2]
SUPPORT_DIR = REPO_ROOT / "tests" / "support"
CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")

pytestmark = pytest.mark.triton

LOG_TWO_MODELS = """
import sys

import mlflow
import numpy as np

import user_script
from mlflow_triton import pytorch, sklearn

tracking_uri, artifact_location = sys.argv[1:3]
mlflow.set_tracking_uri(tracking_uri)
mlflow.create_experiment("user", artifact_location=artifact_location)
mlflow.set_experiment("user")
pipeline, frame = user_script.fitted_pipeline()
sklearn.log_model(pipeline, input_example=frame.iloc[:4], name="classifier", pyfunc_predict_fn="predict_proba",
                  registered_model_name="user-classifier")
pytorch.log_model(user_script.network(), input_example=np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4),
                  name="network", code_paths=[str(user_script.ARCHITECTURE)], registered_model_name="user-network")
"""

# The runner as `python -m examples.runner pytorch` runs it, with its own validate_model wrapped to take the
# artifact root's digest right before and right after it proves the model it has just logged.
RUN_RUNNER_RECORDING_DIGESTS = """
import json
import sys
from pathlib import Path

from examples.runner import cli
from tests.support.tree_digest import tree_digest

work_dir, digests = Path(sys.argv[1]), Path(sys.argv[2])
prove = cli.validate_model


def validate_model_between_digests(*args, **kwargs):
    before = tree_digest(work_dir / "artifacts")
    report = prove(*args, **kwargs)
    digests.write_text(json.dumps({"before": before, "after": tree_digest(work_dir / "artifacts")}))
    return report


cli.validate_model = validate_model_between_digests
sys.exit(cli.main(["pytorch", "--work-dir", str(work_dir)]))
"""


def user_environment(**overrides):
    """A user's shell: no MLflow settings left by other tests, the shared serving-environment cache, no model hub,
    and Python writing bytecode as it does by default (this machine sets PYTHONDONTWRITEBYTECODE, which would hide
    a ``__pycache__`` written into the store)."""
    environment = {
        k: v
        for k, v in os.environ.items()
        if (not k.startswith("MLFLOW_") or k == "MLFLOW_TRITON_CACHE") and k != "PYTHONDONTWRITEBYTECODE"
    }
    environment.update(HF_HUB_OFFLINE="1", **overrides)
    return environment


@pytest.fixture(scope="module")
def user_store(tmp_path_factory):
    """A sqlite store holding the user's Pipeline and PyTorch module: (tracking URI, store directory)."""
    directory = tmp_path_factory.mktemp("user-store")
    tracking_uri = f"sqlite:///{directory / 'mlflow.db'}"
    completed = subprocess.run(
        [sys.executable, "-c", LOG_TWO_MODELS, tracking_uri, (directory / "artifacts").as_uri()],
        cwd=directory,
        env=user_environment(PYTHONPATH=str(SUPPORT_DIR)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return tracking_uri, directory


def logged_models(digest):
    """The relative paths of the logged models' directories (those holding an MLmodel file)."""
    return sorted(
        str(Path(path).parent) for path in digest if Path(path).name == "MLmodel" and "model_repository" not in path
    )


def test_check_leaves_every_file_of_the_logged_models_unchanged_when_it_proves_them_from_a_local_store(
    user_store, tmp_path
):
    tracking_uri, directory = user_store
    artifacts = directory / "artifacts"
    before = tree_digest(artifacts)
    assert len(logged_models(before)) == 2, sorted(before)
    assert any(Path(path).name == "custom_net" for path in before)  # the architecture travelled with code_paths

    completed = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "check",
            "models:/user-classifier/1",
            "models:/user-network/1",
            "--work-dir",
            str(tmp_path / "work"),
            "--tracking-uri",
            tracking_uri,
        ],
        cwd=directory,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr[-6000:]
    assert [verdict for verdict, _ in re.findall(r"^(PASS|FAIL) (\S+):", completed.stdout, re.M)] == ["PASS", "PASS"]
    after = tree_digest(artifacts)
    assert changes(before, after) == []
    assert not [path for path in after if "__pycache__" in path]
    assert triton_processes_under(tmp_path) == []


def test_example_runner_leaves_every_file_of_the_logged_model_unchanged_when_it_proves_it(tmp_path):
    work_dir, digests = tmp_path / "runner", tmp_path / "digests.json"

    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RUN_RUNNER_RECORDING_DIGESTS), str(work_dir), str(digests)],
        cwd=REPO_ROOT,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-4000:]
    assert re.findall(r"^(PASS|FAIL) (\w+)", completed.stdout, re.M) == [("PASS", "pytorch")]
    recorded = json.loads(digests.read_text())
    assert len(logged_models(recorded["before"])) == 1, sorted(recorded["before"])
    assert any(path.endswith(".py") and "/code/" in path for path in recorded["before"])  # code_paths in the store
    assert changes(recorded["before"], recorded["after"]) == []
    assert not [path for path in recorded["after"] if "__pycache__" in path]
    assert triton_processes_under(tmp_path) == []
