"""The soak's bookkeeping without a server: who answered what, and which answers break a rule.

``benchmarks/soak_client.classify`` names the class of an answer from its status and Triton's message;
``benchmarks/soak.check_outcomes`` turns outcomes into wrong answers, 5xx client errors and
unexpected classes. These tests show that each rule can fail.
"""

import numpy as np
import pytest

from benchmarks.soak import check_outcomes
from benchmarks.soak_client import (
    OUTPUT_500,
    RUNTIME_CLIENT_ERROR_AS_5XX,
    RUNTIME_DEFECT_500,
    UNCLASSIFIED,
    Outcome,
    classify,
)
from benchmarks.soak_requests import (
    ANSWERED,
    HOSTILE,
    MODEL_500,
    RUNTIME_400,
    TRITON_400,
    TRITON_PARSE_500,
    Layout,
    build_request,
)

LAYOUT = Layout("soak", (("x (cm)", "x_cm"), ("y", "y")), (("colour", "colour"),), ("output_0",))
UNEQUAL = "Column tensors must have equal lengths; got x_cm: 2, y: 2, colour: 1"
NOT_UTF8 = "Tensor `colour`: element 1 is not valid UTF-8 text (invalid start byte at byte 0)"
NO_PARAMS = (
    "Request parameter(s) `scale`: this model takes no parameters (its MLflow signature has no params schema), so "
    "they cannot be applied"
)
PREDICTION_FAILED = (
    "Prediction failed: ValueError; its message may quote the request, so it is only in Triton's log "
    "(reference 1a2b3c4d)"
)


@pytest.mark.parametrize(
    ("status", "message", "answer_class"),
    [
        ("200", "", ANSWERED),
        ("OK", "", ANSWERED),
        ("400", UNEQUAL, RUNTIME_400),
        ("INVALID_ARGUMENT", NOT_UTF8, RUNTIME_400),
        ("500", UNEQUAL, RUNTIME_CLIENT_ERROR_AS_5XX),
        ("INTERNAL", NOT_UTF8, RUNTIME_CLIENT_ERROR_AS_5XX),
        (
            "500",
            "The request does not match the model's input schema: Incompatible input types for column n.",
            RUNTIME_CLIENT_ERROR_AS_5XX,
        ),
        ("400", NO_PARAMS, RUNTIME_400),
        ("INVALID_ARGUMENT", "The request's parameters are not a JSON object", RUNTIME_400),
        ("INTERNAL", NO_PARAMS, RUNTIME_CLIENT_ERROR_AS_5XX),
        ("500", PREDICTION_FAILED, MODEL_500),
        ("INTERNAL", PREDICTION_FAILED, MODEL_500),
        ("400", PREDICTION_FAILED, UNCLASSIFIED),
        ("500", "The prediction does not fit the configured outputs: Tensor `output_0`: ...", OUTPUT_500),
        ("500", "The mlflow-triton runtime failed: KeyError; its message may quote the request", RUNTIME_DEFECT_500),
        ("500", "failed to parse the request JSON buffer: Invalid value. at 0", TRITON_PARSE_500),
        ("INTERNAL", "Unable to parse request", TRITON_PARSE_500),
        ("400", "failed to parse the request JSON buffer: Invalid value. at 0", UNCLASSIFIED),
        (
            "400",
            "[request id: <id_unknown>] inference input 'x_cm' data-type is 'FP32', but model 'soak' expects 'FP64'",
            TRITON_400,
        ),
        ("INVALID_ARGUMENT", "unable to find data for input tensor 'colour' for model 'soak' in request.", TRITON_400),
        ("500", "[request id: <id_unknown>] inference input 'x_cm' data-type is 'FP32'", UNCLASSIFIED),
        ("500", "something nobody has seen", UNCLASSIFIED),
    ],
)
def test_classify_names_who_answered_when_given_a_status_and_tritons_message(status, message, answer_class):
    assert classify(status, message) == answer_class


class FakeOracle:
    """Says every answer differs from pyfunc.predict by ``difference`` (0: equal)."""

    def __init__(self, difference):
        self.difference = difference

    def differences(self, frame, outputs):
        return self.difference == 0, self.difference


def outcome(index, kind, expected, status, message="", outputs=None):
    return Outcome(index, kind, "http-json", expected, status, message, classify(status, message), 0.01, outputs)


def rebuild(index):
    return build_request(LAYOUT, 0, index, 0.0)


def test_check_outcomes_counts_nothing_against_the_soak_when_every_answer_is_right():
    outcomes = [
        outcome(0, "valid", (ANSWERED,), "200", outputs={"output_0": np.zeros((1, 2))}),
        outcome(1, "unequal-lengths", (RUNTIME_400,), "400", UNEQUAL),
    ]

    checked = check_outcomes(outcomes, rebuild, FakeOracle(0.0))

    assert (checked.wrong_answers, checked.runtime_client_errors_5xx, checked.unexpected) == ([], [], [])
    assert checked.answers_compared == 1 and checked.hostile == 1
    assert checked.violations("run") == []


def test_check_outcomes_finds_a_wrong_answer_when_an_answer_differs_from_pyfunc():
    checked = check_outcomes([outcome(0, "valid", (ANSWERED,), "200", outputs={})], rebuild, FakeOracle(0.25))

    [wrong] = checked.wrong_answers
    assert wrong["why"] == "differs from pyfunc.predict by 0.25"
    assert checked.violations("run")[0].startswith("run: 1 wrong answer(s)")


def test_check_outcomes_finds_a_wrong_answer_when_a_request_that_must_be_refused_is_answered():
    checked = check_outcomes([outcome(3, "wrong-dtype", (TRITON_400,), "200", outputs={})], rebuild, FakeOracle(0.0))

    assert [wrong["why"] for wrong in checked.wrong_answers] == ["answered, but the request must be refused"]
    assert checked.answers_compared == 0
    assert len(checked.unexpected) == 1


def test_check_outcomes_finds_a_runtime_client_error_answered_with_500():
    checked = check_outcomes([outcome(4, "unequal-lengths", (RUNTIME_400,), "500", UNEQUAL)], rebuild, FakeOracle(0.0))

    assert [item["answer_class"] for item in checked.runtime_client_errors_5xx] == [RUNTIME_CLIENT_ERROR_AS_5XX]
    assert any("answered 5xx" in line for line in checked.violations("run"))


def test_check_outcomes_records_the_class_its_requests_must_get_when_a_batched_repository_changes_it():
    """The unbatched runtime refuses a 0-row request (runtime-400); Triton refuses it for a batched repository."""
    zero_rows = "[request id: <id_unknown>] expected 1 string elements for inference input 'colour' for model 'soak'"
    checked = check_outcomes([outcome(6, "empty-batch", (TRITON_400,), "400", zero_rows)], rebuild, FakeOracle(0.0))

    assert checked.by_kind["empty-batch"]["expected"] == (TRITON_400,)
    assert checked.by_kind["empty-batch"]["classes"] == {TRITON_400: 1}
    assert checked.unexpected == []


def test_check_outcomes_finds_an_unexpected_class_when_a_transport_fails():
    failed = Outcome(5, "valid", "grpc", (ANSWERED,), "-", "ConnectionResetError: [Errno 104]", "transport-error", 0.01)

    checked = check_outcomes([failed], rebuild, FakeOracle(0.0))

    assert [item["answer_class"] for item in checked.unexpected] == ["transport-error"]


def test_build_request_gives_the_same_request_when_asked_twice_for_one_index():
    first, second = build_request(LAYOUT, 7, 123, 0.4), build_request(LAYOUT, 7, 123, 0.4)

    assert (first.kind, first.transport, first.body, first.headers) == (
        second.kind,
        second.transport,
        second.body,
        second.headers,
    )


def test_build_request_makes_about_the_asked_fraction_hostile_with_every_kind_when_many_are_built():
    kinds = [build_request(LAYOUT, 1, index, 0.4).kind for index in range(1500)]

    hostile = sum(kind != "valid" for kind in kinds) / len(kinds)
    assert 0.35 < hostile < 0.45
    assert {kind.name for kind in HOSTILE} <= set(kinds)
