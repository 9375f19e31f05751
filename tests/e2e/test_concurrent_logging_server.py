"""Concurrent logging through one real ``mlflow server``: 6 threads and 3 processes at the same moment.

The server (``tests/support/mlflow_server.py``) keeps a sqlite store and serves
the artifacts through its proxy, so every upload crosses HTTP. All nine calls
register versions of the same registered model; the checks are those of the
sqlite test (``tests/unit/logging_side/test_concurrent_logging.py``): every call succeeds,
versions 1..9 each with one LoggedModel and nothing else, every version fetches
as a complete Triton repository, and TMPDIR (shared with the child processes)
holds no staging directory afterwards. The wall time is printed, not asserted.
"""

import tempfile
import time
import uuid

import mlflow
import pytest

from tests.support.concurrent_logging import assert_complete_and_contiguous, log_at_once
from tests.support.mlflow_server import mlflow_server, using_tracking  # noqa: F401

pytestmark = pytest.mark.mlflow_server

THREADS, PROCESSES = 6, 3


@pytest.fixture
def empty_tmpdir(tmp_path, monkeypatch):
    directory = tmp_path / "tmpdir"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def test_log_model_registers_distinct_contiguous_complete_versions_when_workers_log_through_one_server(
    mlflow_server,
    empty_tmpdir,
    tmp_path,  # noqa: F811
):
    registered = f"shared-{uuid.uuid4().hex[:8]}"
    with using_tracking(mlflow_server.url):
        experiment_id = mlflow.create_experiment(f"concurrent-{uuid.uuid4().hex}")
        mlflow.set_experiment(experiment_id=experiment_id)
        started = time.monotonic()

        results = log_at_once(mlflow_server.url, experiment_id, registered, threads=THREADS, processes=PROCESSES)

        print(
            f"\n{THREADS} threads + {PROCESSES} processes logged through the server in "
            f"{time.monotonic() - started:.1f} s (slowest call {max(r.seconds for r in results):.1f} s)"
        )
        assert len(results) == THREADS + PROCESSES
        assert_complete_and_contiguous(results, mlflow.MlflowClient(), registered, experiment_id, tmp_path / "fetched")
    assert list(empty_tmpdir.iterdir()) == []
