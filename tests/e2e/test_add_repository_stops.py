"""``mlflow-triton add-repository`` stopped by Ctrl-C at each stage, on a local store (sqlite + artifact folder).

The source is a plain ``mlflow.sklearn.log_model`` (registered ``churn``), logged once for the module in a fresh
process. Each stage (``tests/support/add_repository_stops.py``) runs the console program with a real SIGINT, then
the registry, the LoggedModels and the artifact folder are listed file by file: either nothing new, or one complete
READY version, as the last line and the exit status say. The S3 store behind a real ``mlflow server``:
``tests/e2e/test_artifact_store_s3.py``.
"""

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from tests.support.add_repository_stops import NOTHING_NEW, STAGES, add_repository_stopped_at, assert_outcome

LOG_SOURCE = """
import sys

import mlflow
import pandas as pd
from sklearn.linear_model import LogisticRegression

mlflow.set_tracking_uri(sys.argv[1])
mlflow.set_experiment(experiment_id=mlflow.create_experiment("team", artifact_location=sys.argv[2]))
rows = pd.DataFrame({"length": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "width": [0.5, 0.1, 0.9, 0.3, 0.7, 0.2]})
with mlflow.start_run():
    mlflow.sklearn.log_model(LogisticRegression().fit(rows, [0, 0, 0, 1, 1, 1]), name="clf", input_example=rows.head(3),
                             pip_requirements=["scikit-learn"], registered_model_name="churn")
"""


def user_environment():
    """A user's shell: no MLflow settings left by other tests."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") or k == "MLFLOW_TRITON_CACHE"}


@pytest.fixture(scope="module")
def local_store(tmp_path_factory):
    """(tracking URI, artifact folder) holding ``churn`` version 1, logged with plain MLflow."""
    root = tmp_path_factory.mktemp("stops-store")
    uri, artifacts = f"sqlite:///{root / 'mlflow.db'}", root / "artifacts"
    completed = subprocess.run(
        [sys.executable, "-c", LOG_SOURCE, uri, artifacts.as_uri()],
        cwd=root,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return uri, artifacts


def listed(uri, artifacts):
    """What the store holds: versions of ``churn`` with their status, LoggedModels a search shows, every file."""
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    versions = sorted((int(v.version), v.status) for v in client.search_model_versions("name = 'churn'"))
    experiments = [e.experiment_id for e in client.search_experiments()]
    models = sorted((m.model_id, str(m.status)) for m in client.search_logged_models(experiment_ids=experiments))
    files = sorted(str(path.relative_to(artifacts)) for path in artifacts.rglob("*"))
    return versions, models, files


@pytest.mark.parametrize("stage", STAGES)
def test_add_repository_leaves_nothing_new_or_one_complete_version_when_ctrl_c_lands_at_each_stage(
    local_store, tmp_path, stage
):
    uri, artifacts = local_store
    versions, models, files = listed(uri, artifacts)

    completed = add_repository_stopped_at(
        stage, ["models:/churn/1", "--tracking-uri", uri], env=user_environment(), cwd=tmp_path
    )

    after_versions, after_models, after_files = listed(uri, artifacts)
    added_versions = sorted(set(after_versions) - set(versions))  # a rolled-back version's number is not reused
    assert_outcome(stage, completed, "churn", added_versions[0][0] if added_versions else None)
    if stage in NOTHING_NEW:
        assert (after_versions, after_models, after_files) == (versions, models, files)
    else:
        assert len(added_versions) == 1 and added_versions[0][1] == "READY"
        assert set(versions) <= set(after_versions)
        [(new_id, status)] = sorted(set(after_models) - set(models))
        assert status.endswith("READY")
        added = sorted(set(after_files) - set(files))
        assert all(Path(path).parts[:2] == ("models", new_id) for path in added)  # the new model's folder only
        assert any(path.endswith(f"{new_id}/artifacts/MLmodel") for path in added)
        assert any(path.endswith("/1/artifact/MLmodel") for path in added)  # the repository's copy of the model
    assert list(tmp_path.iterdir()) == []
