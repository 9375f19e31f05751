"""The batched soak's requests and checks without a server (``benchmarks/soak_batched.py``).

A batched repository takes every column as ``[rows, 1]``; the hostile kinds are translated to their
batched equivalents, a 0-row request is Triton's 400 there (no model code runs), and the batched kinds are
added: shapes claiming 0 rows over one row's bytes, rank-one columns, a decimal request parameter. Its own
checks fail when Triton joined nothing, one of those kinds missed a transport, or an excluded kind was sent.
"""

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from tritonclient.grpc import service_pb2

from benchmarks.soak import Checked, SoakReport, SoakSettings
from benchmarks.soak_batched import (
    BatchedOracle,
    batched_section,
    batched_violations,
    check_batched_settings,
    read_exactly_from_json,
    ulps_apart,
    ulps_bin,
)
from benchmarks.soak_requests import (
    BATCHED_ONLY,
    EXCLUDED_WHEN_BATCHED,
    GRPC,
    HOSTILE,
    HTTP_BINARY,
    HTTP_JSON,
    RUNTIME_400,
    TRANSPORTS,
    TRITON_400,
    VALID,
    Layout,
    build_request,
    hostile_kinds,
)

COLUMNS = (("x (cm)", "x_cm"), ("y", "y")), (("colour", "colour"),), ("output_0",)
BATCHED = Layout("soak", *COLUMNS, max_batch_size=64)
UNBATCHED = Layout("soak", *COLUMNS)


def json_shapes(request):
    return [entry["shape"] for entry in json.loads(request.body)["inputs"]]


def built(name, transport, seeds=range(20)):
    """Requests of the batched kind ``name`` over ``transport``, one per seed."""
    [kind] = [kind for kind in hostile_kinds(BATCHED) if kind.name == name]
    return [kind.build(np.random.default_rng([seed, 1]), BATCHED, transport) for seed in seeds]


def binary_parts(fields):
    """(JSON header, tensor bytes) of a binary HTTP body."""
    size = int(fields["headers"]["Inference-Header-Content-Length"])
    return json.loads(fields["body"][:size]), fields["body"][size:]


def sent(fields, transport):
    """``(shapes, parameters, tensor bytes per input)`` as Triton reads the request; bytes None for JSON."""
    if transport == GRPC:
        message = service_pb2.ModelInferRequest.FromString(fields["body"])
        parameters = {name: value.double_param for name, value in message.parameters.items()}
        return [list(entry.shape) for entry in message.inputs], parameters, list(message.raw_input_contents)
    if transport == HTTP_BINARY:
        header, data = binary_parts(fields)
        sizes = [entry["parameters"]["binary_data_size"] for entry in header["inputs"]]
        chunks = [data[sum(sizes[:i]) : sum(sizes[: i + 1])] for i in range(len(sizes))]
        assert sum(sizes) == len(data)
        parameters = {k: v for k, v in header.get("parameters", {}).items() if k != "binary_data_output"}
        return [entry["shape"] for entry in header["inputs"]], parameters, chunks
    document = json.loads(fields["body"])
    return [entry["shape"] for entry in document["inputs"]], document.get("parameters", {}), None


def one_string(chunk):
    """Whether ``chunk`` is exactly one length-prefixed BYTES element."""
    return len(chunk) >= 4 and int.from_bytes(chunk[:4], "little") == len(chunk) - 4


def test_build_request_sends_every_column_as_rows_by_one_when_the_repository_batches():
    requests = [build_request(BATCHED, 3, index, 0.0) for index in range(40)]

    for request in (r for r in requests if r.transport == HTTP_JSON):
        assert json_shapes(request) == [[len(request.frame), 1]] * 3


def test_hostile_kinds_send_the_0_row_kind_to_triton_and_add_the_batched_ones_when_the_repository_batches():
    kinds = {build_request(BATCHED, 5, index, 1.0).kind for index in range(600)}

    assert "empty-batch" not in EXCLUDED_WHEN_BATCHED and "empty-batch" in kinds
    assert "unequal-lengths" not in kinds
    assert kinds == {kind.name for kind in hostile_kinds(BATCHED)}
    assert {kind.name for kind in BATCHED_ONLY} <= kinds
    assert {"claimed-zero-with-bytes", "rank-1", "decimal-params"} <= {kind.name for kind in BATCHED_ONLY}


def test_empty_batch_must_get_tritons_400_batched_and_the_runtimes_unbatched_over_every_transport():
    [batched] = [kind for kind in hostile_kinds(BATCHED) if kind.name == "empty-batch"]
    [unbatched] = [kind for kind in hostile_kinds(UNBATCHED) if kind.name == "empty-batch"]

    assert (batched.expected, unbatched.expected) == ((TRITON_400,), (RUNTIME_400,))
    assert batched.transports == unbatched.transports == TRANSPORTS
    for transport in TRANSPORTS:
        for fields in built("empty-batch", transport, range(3)):
            shapes, _, contents = sent(fields, transport)
            assert shapes == [[0, 1]] * 3
            assert contents is None or all(chunk == b"" for chunk in contents)


@pytest.mark.parametrize("transport", [HTTP_BINARY, GRPC])
def test_claimed_zero_with_bytes_declares_0_rows_for_every_column_and_carries_one_rows_bytes(transport):
    [kind] = [kind for kind in BATCHED_ONLY if kind.name == "claimed-zero-with-bytes"]
    assert kind.expected == (RUNTIME_400,) and kind.transports == (HTTP_BINARY, GRPC)

    for fields in built("claimed-zero-with-bytes", transport):
        shapes, parameters, contents = sent(fields, transport)
        assert shapes == [[0, 1]] * 3 and parameters == {}
        assert [len(chunk) for chunk in contents[:2]] == [8, 8]
        assert one_string(contents[2])


def test_rank_1_sends_a_column_as_rows_alone_with_the_rows_bytes_over_every_transport():
    [kind] = [kind for kind in BATCHED_ONLY if kind.name == "rank-1"]
    assert kind.expected == (TRITON_400,) and kind.transports == TRANSPORTS
    every = 0
    for transport in TRANSPORTS:
        for fields in built("rank-1", transport):
            shapes, _, contents = sent(fields, transport)
            rows = shapes[0][0]
            assert all(shape in ([rows], [rows, 1]) for shape in shapes) and [rows] in shapes
            every += all(len(shape) == 1 for shape in shapes)
            if contents is not None:
                assert [len(chunk) for chunk in contents[:2]] == [8 * shapes[0][0]] * 2
    assert 0 < every < 3 * 20


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_decimal_params_sends_valid_rows_with_one_request_parameter_that_has_a_fraction(transport):
    [kind] = [kind for kind in BATCHED_ONLY if kind.name == "decimal-params"]
    assert kind.expected == (RUNTIME_400,) and kind.transports == TRANSPORTS

    for fields in built("decimal-params", transport):
        shapes, parameters, _ = sent(fields, transport)
        [(name, value)] = parameters.items()
        assert name in ("scale", "temperature", "threshold")
        assert isinstance(value, float) and not value.is_integer()
        rows = shapes[0][0]
        assert rows >= 1 and shapes == [[rows, 1]] * 3


def test_valid_requests_carry_no_request_parameter_when_the_repository_batches():
    for transport in TRANSPORTS:
        assert sent(VALID.build(np.random.default_rng(4), BATCHED, transport), transport)[1] == {}


def test_hostile_kinds_stay_the_unbatched_ones_when_the_repository_does_not_batch():
    assert hostile_kinds(UNBATCHED) == HOSTILE
    kinds = {build_request(UNBATCHED, 5, index, 1.0).kind for index in range(400)}
    assert not kinds & {kind.name for kind in BATCHED_ONLY}


def test_wrong_rank_never_sends_the_batched_shape_when_the_repository_batches():
    wrong = [
        request
        for request in (build_request(BATCHED, 9, index, 1.0) for index in range(400))
        if request.kind == "wrong-rank" and request.transport == HTTP_JSON
    ]

    assert wrong
    for request in wrong:
        assert any(len(shape) == 3 for shape in json_shapes(request))  # rank one is the kind `rank-1`


def test_too_many_rows_sends_more_rows_than_max_batch_size_when_the_repository_batches():
    too_many = [
        request
        for request in (build_request(BATCHED, 2, index, 1.0) for index in range(400))
        if request.kind == "too-many-rows" and request.transport == HTTP_JSON
    ]

    assert too_many
    assert all(json_shapes(request)[0][0] > 64 for request in too_many)


@pytest.mark.parametrize(
    ("value", "exact"), [(4.25, True), (0.1, True), (1.234567890123456, False), (-7.0000000000000036, False)]
)
def test_read_exactly_from_json_is_false_when_a_number_has_more_than_15_significant_digits(value, exact):
    assert read_exactly_from_json(pd.DataFrame({"x": [1.5, value], "colour": ["red", "blue"]})) is exact


def test_ulps_apart_counts_units_in_the_last_place_when_two_float_arrays_differ():
    one = np.array([[0.25, 0.75], [np.nan, 1.0]])
    other = one.copy()
    other[0, 1] = np.nextafter(np.nextafter(0.75, 1.0), 1.0)

    assert ulps_apart(one, one) == 0.0
    assert ulps_apart(one, other) == 2.0


def test_ulps_apart_measures_at_the_rows_largest_magnitude_when_a_value_is_derived_from_another():
    # the batched soak's CI run of 2026-12-01: p off by one ulp of itself, 1 - p then eight ulps of 1 - p
    p = 0.88579964
    alone, joined = np.array([[1.0 - p, p]]), np.array([[1.0 - np.nextafter(p, 1.0), np.nextafter(p, 1.0)]])

    assert abs(alone[0, 0] - joined[0, 0]) / np.spacing(alone[0, 0]) == 8.0
    assert ulps_apart(alone, joined) == 1.0


def test_ulps_apart_keeps_rows_apart_when_one_rows_scale_is_larger():
    small, large = np.array([[1e-3], [1e3]]), np.array([[1e-3 + 8 * np.spacing(1e-3)], [1e3]])

    assert ulps_apart(small, large) == 8.0


@pytest.mark.parametrize(
    ("ulps", "label"), [(0.0, "0"), (0.5, "1"), (1.0, "1"), (2.0, "2"), (3.0, "3-4"), (4.0, "3-4"), (4.5, "over 4")]
)
def test_ulps_bin_labels_an_answer_by_its_largest_float_difference(ulps, label):
    assert ulps_bin(ulps) == label


class _Expected:
    """Stands in for the independent encoder: the same expected tensors for every input."""

    def __init__(self, outputs):
        self.outputs = outputs

    def for_input(self, frame):
        return self.outputs


def test_batched_oracle_holds_binary_answers_to_the_ulps_and_inexact_json_to_checks_tolerance():
    oracle = BatchedOracle.__new__(BatchedOracle)
    oracle.model_dir, oracle.compared, oracle.max_ulps, oracle.answers_off_by_ulps = None, 0, 0.0, 0
    oracle.json_inexact, oracle.ulps_seen = {"answers": 0, "max_ulps": 0.0}, Counter()
    expected = np.array([[0.25, 0.75]])
    oracle.expected_answers = _Expected({"output_0": expected})
    off = {"output_0": expected + np.array([[0.0, 8 * np.spacing(0.75)]])}
    frame = pd.DataFrame({"x": [1.234567890123456]})

    frame.attrs["transport"] = "grpc"
    assert oracle.differences(frame, off)[0] is False
    frame.attrs["transport"] = HTTP_JSON
    assert oracle.differences(frame, off)[0] is True
    assert oracle.json_inexact["answers"] == 1 and oracle.max_ulps == 8.0
    assert oracle.ulps_seen == {"over 4": 1}


def test_check_batched_settings_refuses_a_max_batch_size_below_the_largest_valid_request():
    with pytest.raises(ValueError, match="--max-batch-size must be 0 .* or at least 64"):
        check_batched_settings(SoakSettings(max_batch_size=32))


ALL_SENT = {
    "empty-batch": {transport: {TRITON_400: 2} for transport in TRANSPORTS},
    "claimed-zero-with-bytes": {HTTP_BINARY: {RUNTIME_400: 2}, GRPC: {RUNTIME_400: 1}},
    "rank-1": {transport: {TRITON_400: 1} for transport in TRANSPORTS},
    "decimal-params": {transport: {RUNTIME_400: 3} for transport in TRANSPORTS},
}


def batched_report(statistics, sent_kinds=("valid",), by_transport=None):
    report = SoakReport(
        settings={"max_batch_size": 64, "max_queue_delay_microseconds": 5000}, triton_statistics=statistics
    )
    report.run = Checked(by_kind={name: {"classes": {"answered": 5}} for name in sent_kinds})
    report.batching = {
        "max_batch_size": 64,
        "tolerance_ulps": 4,
        "answers_compared": 5,
        "max_ulps": 1.0,
        "answers_off_by_ulps": 2,
        "ulps_seen": {"0": 3, "1": 2},
        "json_inexact": {"answers": 0, "max_ulps": 0.0},
        "excluded_kinds": dict(EXCLUDED_WHEN_BATCHED),
        "by_transport": ALL_SENT if by_transport is None else by_transport,
    }
    return report


def test_batched_violations_find_nothing_when_requests_were_joined_and_counted():
    assert batched_violations(batched_report({"request_count": 5, "execution_count": 2})) == []


def test_batched_violations_find_a_transport_missed_when_a_0_row_kind_was_not_sent_over_it():
    missed = {**ALL_SENT, "empty-batch": {HTTP_JSON: {TRITON_400: 1}}, "claimed-zero-with-bytes": {}}

    failed = batched_violations(batched_report({"request_count": 5, "execution_count": 2}, by_transport=missed))

    assert failed == [
        "no `empty-batch` request was sent over http-binary, grpc",
        "no `claimed-zero-with-bytes` request was sent over http-binary, grpc",
    ]


def test_batched_violations_find_no_joining_when_triton_ran_one_execution_per_request():
    [failed] = batched_violations(batched_report({"request_count": 5, "execution_count": 5}))

    assert failed == "no requests were joined: Triton counted 5 executions for 5 requests"


def test_batched_violations_find_an_excluded_kind_when_one_was_sent():
    failed = batched_violations(
        batched_report({"request_count": 10, "execution_count": 2}, ("valid", "unequal-lengths"))
    )

    assert any(line.startswith("the kind `unequal-lengths` must not be sent") for line in failed)


def test_batched_section_counts_the_0_row_rank_1_and_parameter_kinds_by_transport_when_the_soak_is_batched():
    text = "\n".join(batched_section(batched_report({"request_count": 5, "execution_count": 2})))

    assert "2.50 requests per execution" in text
    assert "answers by their largest float difference: 3 × 0 ulps, 2 × 1 ulps." in text
    assert "| `empty-batch` | triton-400 | 2 triton-400 | 2 triton-400 | 2 triton-400 |" in text
    assert "| `claimed-zero-with-bytes` | runtime-400 | — | 2 runtime-400 | 1 runtime-400 |" in text
    assert "| `decimal-params` | runtime-400 | 3 runtime-400 | 3 runtime-400 | 3 runtime-400 |" in text
    assert "- `empty-batch`" not in text and "guard" not in text
