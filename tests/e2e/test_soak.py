"""The soak (``benchmarks/soak.py``, ``make soak``) in its CI size, on the real Triton 2.51.

1,000 requests from 4 concurrent clients over HTTP (JSON and binary) and gRPC, 40 % of them hostile,
two of 50 MiB, against the example Pipeline's generated repository; the same zero-tolerance checks as
``make soak``: no wrong answer, no runtime-detected client error answered 5xx, every request answered
with the class its kind must get, the server ready and the same stub process afterwards, and the stub's
RSS growth over the run within ``CI_MAX_RSS_GROWTH_MB`` (looser than ``make soak``'s 20 MiB over 10,000
requests: one before/after pair on 2 shared cores is noisier). Answers are judged against the tests'
independent encoder of ``pyfunc.predict`` (``benchmarks.soak.Oracle`` -> ``tests/support/oracle.py``).
"""

import pytest

from benchmarks.soak import CI_MAX_RSS_GROWTH_MB, SoakSettings, render, run_soak
from benchmarks.soak_requests import ANSWERED, HOSTILE, MODEL_500, RUNTIME_400, TRANSPORTS, TRITON_400, TRITON_PARSE_500

pytestmark = pytest.mark.triton

REQUESTS = 1000


@pytest.fixture(scope="module")
def soak(tmp_path_factory):
    settings = SoakSettings(
        requests=REQUESTS,
        clients=4,
        hostile_fraction=0.4,
        seed=20261130,
        max_rss_growth_mb=CI_MAX_RSS_GROWTH_MB,
        work_dir=tmp_path_factory.mktemp("soak"),
    )
    report = run_soak(settings, progress=print)
    print(render(report))
    return report


def test_soak_sends_every_request_from_four_clients_over_http_and_grpc_when_run_at_ci_size(soak):
    assert soak.settings["clients"] == 4
    assert soak.run.requests == REQUESTS
    assert soak.run.hostile >= 0.3 * REQUESTS
    assert sorted(soak.run.by_transport) == sorted(TRANSPORTS)
    assert sorted(soak.warmup.by_kind) == sorted(["valid", "huge-request", *(kind.name for kind in HOSTILE)])
    assert soak.run.by_kind["huge-request"]["classes"] == {ANSWERED: 2}


def test_soak_answers_every_request_it_answers_like_pyfunc_when_40_percent_are_hostile(soak):
    assert soak.run.wrong_answers == [] and soak.warmup.wrong_answers == [] and soak.settle.wrong_answers == []
    assert soak.run.answers_compared >= 0.5 * REQUESTS


def test_soak_never_answers_a_runtime_detected_client_error_with_5xx_when_requests_are_hostile(soak):
    assert soak.run.runtime_client_errors_5xx == [] and soak.warmup.runtime_client_errors_5xx == []
    assert sum(kind["classes"].get(RUNTIME_400, 0) for kind in soak.run.by_kind.values()) > 0


def test_soak_gets_each_request_the_class_of_answer_its_kind_must_get_when_requests_are_hostile(soak):
    assert soak.run.unexpected == [] and soak.warmup.unexpected == [] and soak.settle.unexpected == []
    seen = {answer_class for kind in soak.run.by_kind.values() for answer_class in kind["classes"]}
    assert seen == {ANSWERED, TRITON_400, TRITON_PARSE_500, RUNTIME_400, MODEL_500}


def test_soak_classes_agree_with_tritons_statistics_when_counting_requests_that_reached_the_model(soak):
    """Triton counts an inference for each request that reached model.py; the triton-* classes never do."""
    assert soak.reached_model() == soak.triton_statistics["inference_count"]


def test_soak_leaves_the_server_ready_with_the_same_stub_answering_correctly_when_the_run_ends(soak):
    assert soak.ready_after == {"/v2/health/ready": 200, "/v2/models/soak/ready": 200}
    assert soak.stub["pid_after"] == soak.stub["pid_before"]
    assert soak.settle.answers_compared == soak.settle.requests


def test_soak_keeps_the_stub_rss_growth_within_the_ci_limit_when_1000_requests_are_served(soak):
    assert soak.settings["max_rss_growth_mb"] == CI_MAX_RSS_GROWTH_MB
    assert soak.stub["rss_growth_mb"] is not None
    assert soak.stub["rss_growth_mb"] <= CI_MAX_RSS_GROWTH_MB


def test_soak_report_lists_no_failed_check_when_the_run_passes(soak):
    """The report's own verdict agrees, its memory gate included."""
    assert soak.violations() == []
