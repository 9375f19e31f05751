"""Concurrent logging into one sqlite store: 6 threads and 3 processes at the same moment.

All nine calls register versions of the same registered model. Every call must
succeed, the Registry versions must be 1..9 (distinct, contiguous) with one
LoggedModel each and nothing else, every version must fetch as a complete
Triton repository, and no staging directory may stay in TMPDIR (shared with the
child processes). The wall time is printed (``-s``), not asserted.
"""

import time

from tests.support.concurrent_logging import assert_complete_and_contiguous, log_at_once

THREADS, PROCESSES = 6, 3


def test_log_model_registers_distinct_contiguous_complete_versions_when_threads_and_processes_log_at_once(
    tracking_store, workspace, tmp_path
):
    started = time.monotonic()

    results = log_at_once(
        tracking_store.uri, tracking_store.experiment_id, "shared-by-workers", threads=THREADS, processes=PROCESSES
    )

    print(
        f"\n{THREADS} threads + {PROCESSES} processes logged in {time.monotonic() - started:.1f} s "
        f"(slowest call {max(r.seconds for r in results):.1f} s)"
    )
    assert len(results) == THREADS + PROCESSES
    assert_complete_and_contiguous(
        results, tracking_store.client(), "shared-by-workers", tracking_store.experiment_id, tmp_path / "fetched"
    )
    assert list(workspace.iterdir()) == []
