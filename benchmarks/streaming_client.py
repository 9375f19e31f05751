"""Closed-loop streaming clients in separate processes, for ``benchmarks/streaming.py``.

:func:`run_streams` starts ``python -m benchmarks.streaming_client SPEC OUT`` (a light process: no MLflow, no
torch), which forks ``clients`` client processes before any gRPC channel exists. Each client opens one connection
(one gRPC stream, or one keep-alive HTTP connection), sends ``warmup`` requests, waits at a barrier with the other
clients, then sends ``requests`` requests back to back (the next leaves when the previous stream has ended) and
records, per request, when each chunk arrived (seconds after the request was sent, ``time.perf_counter``, read in
the gRPC callback or right after the server-sent event's line was read) and when the stream ended (the final
flag, the end of the event stream, or the one-shot answer). The texts of each client's last request come back too,
to be compared with ``pyfunc.predict_stream``.

Kinds (``spec["kind"]``):

* ``grpc`` -- ``tritonclient.grpc``: ``start_stream(callback)`` once per client, then ``async_stream_infer(model,
  [request], enable_empty_final_response=True)`` per request; a response's ``response`` output is a chunk, the
  ``triton_final_response`` parameter ends the request;
* ``sse`` -- ``POST /v2/models/<model>/generate_stream`` with ``{"request": body}``: each ``data:`` line's
  ``response`` is a chunk; the end of the HTTP response ends the request;
* ``infer`` -- ``POST /v2/models/<model>/infer`` (v2 JSON, the ``request`` tensor): the answer's ``response`` is the
  whole answer, its one "chunk".
"""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT_S = 60.0


def run_streams(spec: dict, work_dir: Path, timeout: float = 600.0) -> list[dict]:
    """Run ``spec`` (kind, ports, model, body, clients, requests, warmup) in a client process; returns one
    ``{"window": [start, end], "requests": [{"arrivals": [...], "done": s}], "sample": [texts], "errors": [...]}``
    per client (``window`` in ``time.perf_counter`` seconds of the machine's monotonic clock)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    spec_path, out_path = work_dir / "streaming-spec.json", work_dir / "streaming-out.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    out_path.unlink(missing_ok=True)
    finished = subprocess.run(
        [sys.executable, "-m", "benchmarks.streaming_client", str(spec_path), str(out_path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if finished.returncode != 0 or not out_path.is_file():
        raise RuntimeError(f"streaming client failed ({finished.returncode}): {finished.stderr[-2000:]}")
    return json.loads(out_path.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- one connection per kind


class GrpcStream:
    """One gRPC stream to Triton, reused for every request of a client."""

    def __init__(self, spec):
        import queue

        import numpy as np
        import tritonclient.grpc as grpcclient

        self.model = spec["model"]
        self.client = grpcclient.InferenceServerClient(f"127.0.0.1:{spec['grpc_port']}")
        self.events = queue.Queue()
        self.client.start_stream(callback=lambda result, error: self.events.put((time.perf_counter(), result, error)))
        request = grpcclient.InferInput("request", [1], "BYTES")
        request.set_data_from_numpy(np.array([spec["body"].encode("utf-8")], dtype=np.object_))
        self.inputs = [request]

    def send(self):
        sent = time.perf_counter()
        self.client.async_stream_infer(self.model, self.inputs, enable_empty_final_response=True)
        arrivals, texts = [], []
        while True:
            at, result, error = self.events.get(timeout=TIMEOUT_S)
            if error is not None:
                raise RuntimeError(f"gRPC stream error: {error}")
            chunk = result.as_numpy("response")
            if chunk is not None and chunk.size:
                arrivals.append(at - sent)
                texts.append(chunk.reshape(-1)[0].decode("utf-8"))
            if result.get_response().parameters["triton_final_response"].bool_param:
                return arrivals, at - sent, texts

    def close(self):
        self.client.stop_stream()
        self.client.close()


class SseStream:
    """One keep-alive HTTP connection to Triton's ``generate_stream`` (server-sent events)."""

    def __init__(self, spec):
        import http.client

        self.connection = http.client.HTTPConnection("127.0.0.1", spec["http_port"], timeout=TIMEOUT_S)
        self.path = f"/v2/models/{spec['model']}/generate_stream"
        self.payload = json.dumps({"request": spec["body"]}).encode("utf-8")
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}

    def send(self):
        sent = time.perf_counter()
        self.connection.request("POST", self.path, body=self.payload, headers=self.headers)
        response = self.connection.getresponse()
        if response.status != 200:
            raise RuntimeError(f"generate_stream: HTTP {response.status}: {response.read()[:300]!r}")
        arrivals, texts = [], []
        while line := response.readline():
            if not line.startswith(b"data:"):
                continue
            at = time.perf_counter()
            event = json.loads(line[5:])
            if "error" in event:
                raise RuntimeError(f"generate_stream error event: {event['error']}")
            if "response" in event:
                arrivals.append(at - sent)
                texts.append(event["response"])
        return arrivals, time.perf_counter() - sent, texts

    def close(self):
        self.connection.close()


class OneShot:
    """One keep-alive HTTP connection to Triton's ``/infer`` (v2 JSON, MLflow's body in the ``request`` tensor)."""

    def __init__(self, spec):
        import http.client

        self.connection = http.client.HTTPConnection("127.0.0.1", spec["http_port"], timeout=TIMEOUT_S)
        self.path = f"/v2/models/{spec['model']}/infer"
        body = {
            "inputs": [{"name": "request", "datatype": "BYTES", "shape": [1], "data": [spec["body"]]}],
            "outputs": [{"name": "response"}],
        }
        self.payload = json.dumps(body).encode("utf-8")

    def send(self):
        sent = time.perf_counter()
        self.connection.request("POST", self.path, body=self.payload, headers={"Content-Type": "application/json"})
        response = self.connection.getresponse()
        payload = response.read()
        at = time.perf_counter() - sent
        if response.status != 200:
            raise RuntimeError(f"infer: HTTP {response.status}: {payload[:300]!r}")
        [output] = json.loads(payload)["outputs"]
        return [at], at, [output["data"][0]]

    def close(self):
        self.connection.close()


KINDS = {"grpc": GrpcStream, "sse": SseStream, "infer": OneShot}


# ----------------------------------------------------------------------------- the client processes


def _client(spec, barrier, results, index):
    found = {"window": [0.0, 0.0], "requests": [], "sample": [], "errors": []}
    connection = None
    try:
        connection = KINDS[spec["kind"]](spec)
        for _ in range(spec["warmup"]):
            connection.send()
    except Exception as error:  # reported, and the other clients are let go
        found["errors"].append(f"{type(error).__name__}: {error}")
        barrier.abort()
    try:
        barrier.wait(timeout=TIMEOUT_S)
    except Exception:
        results.put((index, found))
        return
    found["window"][0] = time.perf_counter()
    try:
        for _ in range(spec["requests"]):
            arrivals, done, texts = connection.send()
            found["requests"].append({"arrivals": arrivals, "done": done})
            found["sample"] = texts
    except Exception as error:
        found["errors"].append(f"{type(error).__name__}: {error}")
    found["window"][1] = time.perf_counter()
    connection.close()
    results.put((index, found))


def main(argv=None) -> int:
    spec_path, out_path = argv or sys.argv[1:]
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    context = multiprocessing.get_context("fork")  # nothing of gRPC exists in this process yet
    barrier, results = context.Barrier(spec["clients"]), context.Queue()
    processes = [
        context.Process(target=_client, args=(spec, barrier, results, index)) for index in range(spec["clients"])
    ]
    for process in processes:
        process.start()
    found = dict(results.get(timeout=600) for _ in processes)
    for process in processes:
        process.join(timeout=30)
    Path(out_path).write_text(json.dumps([found[index] for index in sorted(found)]), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
