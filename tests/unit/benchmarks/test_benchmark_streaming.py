"""benchmarks.streaming: the figures drawn from chunk arrival times, the ratios and the report they go into, the
in-process reference, the answer check, and the server-sent-events client against a chunked HTTP stream."""

import http.server
import json
import threading

import pytest

from benchmarks import streaming
from benchmarks.streaming import TARGETS, in_process, ratios, report, summarize
from benchmarks.streaming_client import SseStream


def _client(requests, window=(10.0, 11.0), sample=()):
    return {
        "window": list(window),
        "requests": [{"arrivals": arrivals, "done": arrivals[-1]} for arrivals in requests],
        "sample": list(sample),
        "errors": [],
    }


def _summary(ttft, last, rate, aggregate):
    return {
        "requests": 2,
        "chunks_per_request": [4],
        "ttft_p50_ms": ttft,
        "ttft_p90_ms": ttft,
        "last_p50_ms": last,
        "last_p90_ms": last,
        "end_p50_ms": last,
        "chunks_per_s": rate,
        "aggregate_chunks_per_s": aggregate,
        "gap_p50_ms": 1.0,
        "gap_p99_ms": 2.0,
        "bunched": 0.25,
        "burst_requests": 0.5,
        "errors": [],
    }


CELLS = [
    {
        "clients": clients,
        "targets": {
            "a": _summary(10.0, 80.0, 800.0, 700.0),
            "b": _summary(5.0, 60.0, 1000.0, 900.0),
            "c": _summary(2.0, 40.0, 1600.0, 1400.0),
            "d": _summary(40.0, 40.0, float("nan"), float("nan")),
        },
        "rss_mb": {"stream stub": 470.0, "one-shot stub": 469.0, "tritonserver": 38.0, "this process (c)": 600.0},
    }
    for clients in (1, 4)
]
MEASURED = {
    "cells": CELLS,
    "triton_version": "2.51.0",
    "requests": 15,
    "rounds": 3,
    "warmup": 2,
    "new_tokens": 64,
    "torch_threads": 1,
    "chunks": 63,
    "predict_p50_ms": 31.0,
    "stream_in_process_p50_ms": 42.0,
}
INFO = {
    "nproc": 2,
    "cpu": "cpu",
    "memory": "1 GiB",
    "os": "Linux",
    "python": "3.11",
    "load_average_start": "1.00",
    "date": "2026-12-07 06:00 UTC",
    "packages": {"mlflow": "3.17.2", "torch": "2.13.0"},
}


def test_summarize_takes_first_and_last_arrivals_and_pools_clients_over_the_longest_window():
    first = _client([[0.010, 0.011, 0.012, 0.020], [0.030, 0.030001, 0.031, 0.040]], window=(0.0, 1.0))
    second = _client([[0.020, 0.021, 0.022, 0.040]], window=(0.0, 2.0))

    summary = summarize([[first, second]])

    assert summary["requests"] == 3
    assert summary["chunks_per_request"] == [4]
    assert summary["ttft_p50_ms"] == pytest.approx(20.0)
    assert summary["last_p50_ms"] == pytest.approx(40.0)
    assert summary["chunks_per_s"] == pytest.approx(100.0)  # 4 chunks / 40 ms, the median request
    assert summary["aggregate_chunks_per_s"] == pytest.approx(6.0)  # 12 chunks over the 2 s window
    assert summary["bunched"] == pytest.approx(1 / 9)  # one gap of 1 µs among 9
    assert summary["burst_requests"] == 0.0


def test_summarize_counts_a_stream_held_and_delivered_at_once_as_a_burst():
    held = _client([[0.040, 0.04001, 0.04002, 0.04003], [0.010, 0.020, 0.030, 0.040]])

    assert summarize([[held]])["burst_requests"] == pytest.approx(0.5)


def test_ratios_set_stream_times_against_the_full_answer_and_rates_against_in_process():
    found = ratios(CELLS[0])

    assert found["a TTFT / d full"] == pytest.approx(0.25)
    assert found["b last / d full"] == pytest.approx(1.5)
    assert found["a TTFT / c TTFT"] == pytest.approx(5.0)
    assert found["a chunks/s / c"] == pytest.approx(0.5)
    assert found["b aggregate / c"] == pytest.approx(900 / 1400)


def test_report_holds_every_target_row_the_ratios_the_reference_and_the_machine():
    text = report(MEASURED, INFO, "2.00", "python -m benchmarks.streaming --quick")

    assert "Run: `python -m benchmarks.streaming --quick` — 2026-12-07 06:00 UTC. Triton 2.51.0." in text
    assert all(f"- **{key}**: {what}" in text for key, what in TARGETS.items())
    assert "| 4       | d      | 2        | 4      | 40.0 / 40.0" in text
    assert "| 1       | 0.25            | 0.12            | 2.00" in text
    assert "p50 31.0 ms, `pyfunc.predict_stream` consumed to its end p50 42.0 ms" in text
    assert "load average at start 1.00, at end 2.00" in text


class _Streamer:
    def predict_stream(self, data):
        yield from ({"delta": word} for word in data["prompt"].iloc[0].split())


def test_in_process_answers_as_the_client_processes_do():
    found = in_process(_Streamer(), clients=2, requests=3, warmup=1)

    assert [len(client["requests"]) for client in found] == [3, 3]
    assert all(len(request["arrivals"]) == 6 for client in found for request in client["requests"])
    assert found[0]["sample"] == [json.dumps({"delta": word}) for word in streaming.PROMPT.split()]


def test_check_refuses_a_target_whose_chunks_differ():
    with pytest.raises(AssertionError, match=r"target b \(Triton, tiny_gpt2_stream over HTTP generate_stream"):
        streaming._check("b", [_client([[0.1]], sample=['{"delta": "x"}'])], ['{"delta": "y"}'])


class _EventStream(http.server.BaseHTTPRequestHandler):
    """Answers generate_stream as Triton does: chunked server-sent events, one per response."""

    protocol_version = "HTTP/1.1"
    events = [{"model_name": "m", "response": json.dumps({"delta": word})} for word in ("a", "b", "c")]

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in self.events:
            data = f"data: {json.dumps(event)}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


def test_sse_client_reads_each_event_of_a_chunked_stream_on_one_kept_connection():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EventStream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = SseStream({"http_port": server.server_address[1], "model": "m_stream", "body": "{}"})
        answers = [client.send() for _ in range(2)]
        client.close()
    finally:
        server.shutdown()
        server.server_close()

    assert [texts for _, _, texts in answers] == [[json.dumps({"delta": word}) for word in "abc"]] * 2
    assert all(len(arrivals) == 3 and done >= arrivals[-1] for arrivals, done, _ in answers)
