"""The batched soak (``python -m benchmarks.soak --batched``, ``make soak-batched``) in a CI size, on Triton 2.51.

The example Pipeline logged with ``max_batch_size=64`` (one model directory, columns ``dims: [1]``, none reshaped to
``[]``); 300 requests from 4 concurrent clients over HTTP (JSON and binary) and gRPC, 40 % hostile, in the batched
shapes (every column ``[rows, 1]``). Mixed in, over each of their transports: 0-row requests, which Triton refuses
itself (400, no model code runs); shapes claiming 0 rows over one row's bytes and decimal request parameters, the
runtime's 400; rank-one columns, Triton's 400. The server keeps answering. The same zero-tolerance checks as the
unbatched soak, answers within ``ROW_INDEPENDENCE_ULPS`` (ulps of each row's largest magnitude, the rule the proof at
logging states) of ``pyfunc.predict`` of each request alone, the answers counted by how many ulps they were off, and
Triton's statistics showing requests joined.
"""

import pytest

from benchmarks.soak import SoakSettings, render, run_soak
from benchmarks.soak_batched import BY_TRANSPORT, ULPS_SEEN_BINS
from benchmarks.soak_requests import (
    ANSWERED,
    BATCHED_ONLY,
    EXCLUDED_WHEN_BATCHED,
    KINDS,
    RUNTIME_400,
    TRANSPORTS,
    TRITON_400,
)

pytestmark = pytest.mark.triton

REQUESTS = 300


@pytest.fixture(scope="module")
def soak(tmp_path_factory):
    settings = SoakSettings(
        requests=REQUESTS,
        clients=4,
        hostile_fraction=0.4,
        seed=20261201,
        huge_mb=16.0,
        warmup_rounds=1,
        max_batch_size=64,
        work_dir=tmp_path_factory.mktemp("soak-batched"),
    )
    report = run_soak(settings, progress=print)
    print(render(report))
    return report


# What each kind of docs/batching.md's "Requests without rows" gets from a batched repository, over every transport.
MUST_GET = {
    "empty-batch": TRITON_400,
    "claimed-zero-with-bytes": RUNTIME_400,
    "rank-1": TRITON_400,
    "decimal-params": RUNTIME_400,  # as the unbatched model answers it: the soak model declares no params
}


def test_batched_soak_sends_the_batched_kinds_and_0_row_requests_which_get_400s_when_the_repository_batches(soak):
    assert soak.run.requests == REQUESTS and sorted(soak.run.by_transport) == sorted(TRANSPORTS)
    sent = set(soak.warmup.by_kind) | set(soak.run.by_kind) | set(soak.settle.by_kind)
    assert {kind.name for kind in BATCHED_ONLY} <= sent
    assert not sent & set(EXCLUDED_WHEN_BATCHED)
    assert sorted(soak.batching["by_transport"]) == sorted(BY_TRANSPORT) == sorted(MUST_GET)
    for name, transports in soak.batching["by_transport"].items():
        assert sorted(transports) == sorted(KINDS[name].transports), name
        assert {answer_class for classes in transports.values() for answer_class in classes} == {MUST_GET[name]}
    assert soak.run.by_kind["huge-request"]["classes"] == {ANSWERED: 2}


def test_batched_soak_answers_like_pyfunc_of_each_request_alone_when_requests_are_joined(soak):
    assert soak.run.wrong_answers == [] and soak.warmup.wrong_answers == [] and soak.settle.wrong_answers == []
    assert soak.batching["answers_compared"] == (
        soak.run.answers_compared + soak.warmup.answers_compared + soak.settle.answers_compared
    )
    held_to_ulps = soak.batching["answers_compared"] - soak.batching["json_inexact"]["answers"]
    assert sum(soak.batching["ulps_seen"].values()) == held_to_ulps
    assert set(soak.batching["ulps_seen"]) <= set(ULPS_SEEN_BINS[:-1])


def test_batched_soak_never_answers_a_runtime_detected_client_error_with_5xx_when_requests_are_hostile(soak):
    assert soak.run.runtime_client_errors_5xx == [] and soak.warmup.runtime_client_errors_5xx == []
    assert soak.run.unexpected == [] and soak.warmup.unexpected == [] and soak.settle.unexpected == []


def test_batched_soak_joins_requests_when_tritons_statistics_count_fewer_executions_than_requests(soak):
    statistics = soak.triton_statistics
    assert soak.reached_model() == statistics["request_count"]
    assert statistics["execution_count"] < statistics["request_count"]


def test_batched_soak_leaves_the_server_ready_with_the_same_stub_when_the_run_ends(soak):
    assert soak.ready_after == {"/v2/health/ready": 200, "/v2/models/soak/ready": 200}
    assert soak.stub["pid_after"] == soak.stub["pid_before"]
    assert soak.settle.answers_compared == soak.settle.requests


def test_batched_soak_report_lists_no_failed_check_but_memory_and_counts_the_0_row_requests_by_transport(soak):
    assert [line for line in soak.violations() if not line.startswith("stub RSS grew")] == []
    counts = soak.batching["by_transport"]["empty-batch"]
    row = " | ".join(f"{counts[t][TRITON_400]:,} triton-400" for t in TRANSPORTS)
    assert f"| `empty-batch` | triton-400 | {row} |" in render(soak)
