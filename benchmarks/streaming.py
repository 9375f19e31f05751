"""Streaming, served: a tiny GPT-2's ``predict_stream`` through Triton's gRPC stream and HTTP ``generate_stream``,
beside ``pyfunc.predict_stream`` in process and the one-shot full answer, in one run.

The model (:data:`MODEL_CODE`, models from code) is a ``PythonModel`` around a tiny GPT-2 text-generation pipeline
(``tests/support/tiny_models.text_generation_pipeline``: 1 layer, 2 heads, 16-dim embeddings, the tests' WordLevel
tokenizer, 128 positions; no model hub) saved as an artifact: ``predict`` returns the generated text, and
``predict_stream`` runs the same generation with ``transformers.TextIteratorStreamer`` in a thread and yields each
non-empty piece as ``{"delta": piece}``. Greedy, ``min_new_tokens = max_new_tokens`` (``--new-tokens``, 64), so every
request generates the same number of tokens. (A pipeline logged with ``mlflow_triton.transformers`` and ``stream=True``
streams through the same streamer, in a pyfunc of the package's own: docs/repository.md.) It is saved once with
``mlflow_triton.pyfunc.save_model(..., stream=True)``, which writes ``<name>/`` (one-shot: MLflow's serving protocol)
and ``<name>_stream/`` (decoupled: one Triton response per chunk); both are served by one ``tritonserver`` (bundled
2.51), one instance each.

Targets, all sent MLflow's serving body for one prompt (``{"dataframe_split": ...}``):

* **a** -- ``<name>_stream`` over gRPC (``tritonclient.grpc``: ``start_stream`` + ``async_stream_infer``);
* **b** -- ``<name>_stream`` over HTTP ``POST /v2/models/<name>_stream/generate_stream`` (server-sent events);
* **c** -- ``pyfunc.predict_stream`` in this process (the MLflow reference: ``mlflow models serve`` answers
  ``/invocations`` with ``predict`` only, and MLflow's agent server serves agents, not a pyfunc model, so no MLflow
  server streams this model);
* **d** -- ``<name>`` over HTTP ``/v2/models/<name>/infer``: the one-shot door, whose full answer is its "first
  chunk".

Each cell (1 and 4 concurrent clients) is measured in rounds alternating a, b, c, d; a, b and d run in separate
client processes (``benchmarks/streaming_client.py``, one connection per client), c in threads of this process.
Per request: time to first chunk (TTFT), time to the last chunk, chunks/s of the stream (chunks / time to the last
chunk) and the gaps between chunks. Before any load every target's chunks are compared with ``pyfunc.predict_stream``
(each chunk's JSON text) and d's answer with ``pyfunc.predict``.

    .venv/bin/python -m benchmarks.streaming [--quick] [--results PATH] [--requests N] [--rounds N]

``make bench`` runs it after ``benchmarks.batching``; it writes ``benchmarks/streaming-results.md`` (``--quick``:
``.work/bench-streaming/streaming-results-quick.md``), and in the work directory (``--work-dir``) ``streaming.json``
(the figures) and ``streaming-arrivals.json`` (when each chunk of each measured request arrived, by clients and
target: one list per client, one list of seconds per request).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.batching import process_rss_mb, stub_rss_mb
from benchmarks.run import _loadavg, _table, machine
from benchmarks.served import _wait_model_ready
from benchmarks.streaming_client import run_streams

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODEL_NAME = "tiny_gpt2"
STREAM_MODEL = f"{MODEL_NAME}_stream"
PROMPT = "the cat sat on the mat"
#: The GPT-2's positions: the prompt's tokens plus ``--new-tokens`` (at most ``MAX_NEW_TOKENS``) must fit.
POSITIONS = 128
MAX_NEW_TOKENS = 100
CLIENTS = (1, 4)
#: torch's intra-op threads in every process that loads the model. With 2 (torch's default here) on 2 busy cores, a
#: lone ``predict`` -- generation on the calling thread -- took 471 ms instead of 34 ms (load average 6), while
#: ``predict_stream``'s generation thread was unaffected: the pool's contention, not serving, would be measured.
TORCH_THREADS = 1
#: A gap between two chunks under this many seconds: they came in one read (bunched), not one by one.
BUNCHED_GAP_S = 50e-6
TARGETS = {
    "a": f"Triton, {STREAM_MODEL} over gRPC (tritonclient.grpc start_stream + async_stream_infer)",
    "b": f"Triton, {STREAM_MODEL} over HTTP generate_stream (server-sent events)",
    "c": "pyfunc.predict_stream in this process (the MLflow reference: no MLflow server streams a pyfunc model)",
    "d": f"Triton, {MODEL_NAME} over HTTP /infer: the one-shot full answer (its first chunk is the whole answer)",
}
STREAMED = ("a", "b", "c")
#: target -> the client kind of benchmarks/streaming_client.py and the Triton model it asks
SERVED = {"a": ("grpc", STREAM_MODEL), "b": ("sse", STREAM_MODEL), "d": ("infer", MODEL_NAME)}
PACKAGES = ("mlflow", "torch", "transformers", "tokenizers", "tritonclient", "numpy", "pandas")
MODEL_CODE = textwrap.dedent(
    """\
    import threading

    import mlflow
    from mlflow.pyfunc import PythonModel


    def _prompts(model_input):
        if isinstance(model_input, dict):  # predict_stream: MLflow hands over the one row as a dict
            return [str(model_input["prompt"])]
        if isinstance(model_input, str):
            return [model_input]
        return [str(prompt) for prompt in model_input["prompt"]]


    class StreamingGPT2(PythonModel):
        \"\"\"A text generation whose predict_stream yields each piece of TextIteratorStreamer.\"\"\"

        def load_context(self, context):
            import torch
            from transformers import pipeline

            torch.set_num_threads(int(context.model_config["torch_threads"]))
            self.new_tokens = int(context.model_config["new_tokens"])
            self.pipeline = pipeline("text-generation", model=context.artifacts["pipeline"])

        def _generate(self, prompt, **extra):
            return self.pipeline(
                prompt,
                max_new_tokens=self.new_tokens,
                min_new_tokens=self.new_tokens,
                do_sample=False,
                return_full_text=False,
                **extra,
            )

        def predict(self, context, model_input, params=None):
            return [self._generate(prompt)[0]["generated_text"] for prompt in _prompts(model_input)]

        def predict_stream(self, context, model_input, params=None):
            from transformers import TextIteratorStreamer

            [prompt] = _prompts(model_input)
            streamer = TextIteratorStreamer(self.pipeline.tokenizer, skip_prompt=True, skip_special_tokens=True)
            worker = threading.Thread(target=self._generate, args=(prompt,), kwargs={"streamer": streamer}, daemon=True)
            worker.start()
            try:
                for piece in streamer:
                    if piece:  # the streamer yields "" while a word is incomplete
                        yield {"delta": piece}
            finally:
                worker.join()


    mlflow.models.set_model(StreamingGPT2())
    """
)


# ----------------------------------------------------------------------------- the model


def save_package(work_dir: Path, new_tokens: int) -> Path:
    """The streaming GPT-2 saved with ``mlflow_triton.pyfunc.save_model(..., stream=True)`` at ``work_dir/model``
    (models from code; the pipeline an artifact; MLflow's store a sqlite file in a scratch directory)."""
    import tempfile
    from importlib.metadata import version

    import pandas as pd

    from mlflow_triton import pyfunc as triton_pyfunc
    from tests.support import tiny_models

    package = work_dir / "model"
    shutil.rmtree(package, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="bench-streaming-") as scratch, tiny_models.sqlite_tracking(scratch):
        pipeline_dir, code = Path(scratch) / "pipeline", Path(scratch) / "streaming_gpt2.py"
        tiny_models.text_generation_pipeline(tiny_models.shared_tokenizer(), n_positions=POSITIONS).save_pretrained(
            pipeline_dir
        )
        code.write_text(MODEL_CODE, encoding="utf-8")
        triton_pyfunc.save_model(
            str(code),
            package,
            input_example=pd.DataFrame({"prompt": [PROMPT]}),
            artifacts={"pipeline": str(pipeline_dir)},
            model_config={"new_tokens": new_tokens, "torch_threads": TORCH_THREADS},
            # pinned as MLflow would pin them: unpinned, pip would fetch torch's multi-GB CUDA build
            pip_requirements=[f"{name}=={version(name).split('+')[0]}" for name in ("torch", "transformers")],
            triton_model_name=MODEL_NAME,
            stream=True,
        )
    return package


def serving_body() -> str:
    """MLflow's serving body for the prompt, as ``mlflow models serve`` takes it at ``/invocations``."""
    return json.dumps({"dataframe_split": {"columns": ["prompt"], "data": [[PROMPT]]}})


def serving_input():
    """What MLflow's parser makes of :func:`serving_body`: the model input ``pyfunc.predict_stream`` is given."""
    import pandas as pd

    return pd.DataFrame({"prompt": [PROMPT]})


# ----------------------------------------------------------------------------- in process (c)


def in_process(pyfunc_model, clients: int, requests: int, warmup: int) -> list[dict]:
    """``pyfunc.predict_stream`` from ``clients`` threads of this process, shaped as
    :func:`benchmarks.streaming_client.run_streams` answers."""
    data = serving_input()
    barrier = threading.Barrier(clients)
    found = [{"window": [0.0, 0.0], "requests": [], "sample": [], "errors": []} for _ in range(clients)]

    def send():
        sent, arrivals, texts = time.perf_counter(), [], []
        for chunk in pyfunc_model.predict_stream(data):
            arrivals.append(time.perf_counter() - sent)
            texts.append(json.dumps(chunk))
        return arrivals, time.perf_counter() - sent, texts

    def client(mine):
        try:
            for _ in range(warmup):
                send()
        except Exception as error:
            mine["errors"].append(f"{type(error).__name__}: {error}")
            barrier.abort()
        try:
            barrier.wait(timeout=60)
        except threading.BrokenBarrierError:
            return
        mine["window"][0] = time.perf_counter()
        try:
            for _ in range(requests):
                arrivals, done, texts = send()
                mine["requests"].append({"arrivals": arrivals, "done": done})
                mine["sample"] = texts
        except Exception as error:
            mine["errors"].append(f"{type(error).__name__}: {error}")
        mine["window"][1] = time.perf_counter()

    threads = [threading.Thread(target=client, args=(mine,)) for mine in found]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found


def predict_times(pyfunc_model, count: int, warmup: int) -> list[float]:
    """Milliseconds of ``count`` lone ``pyfunc.predict`` calls in this process (the one-shot answer without a
    server), after ``warmup`` calls."""
    data, times = serving_input(), []
    for number in range(warmup + count):
        start = time.perf_counter()
        pyfunc_model.predict(data)
        if number >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return times


def stream_times(pyfunc_model, count: int, warmup: int) -> list[float]:
    """Milliseconds of ``count`` lone ``pyfunc.predict_stream`` calls consumed to the end, in this process."""
    data, times = serving_input(), []
    for number in range(warmup + count):
        start = time.perf_counter()
        for _ in pyfunc_model.predict_stream(data):
            pass
        if number >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return times


# ----------------------------------------------------------------------------- measurement


def summarize(runs: list[list[dict]]) -> dict:
    """One target's figures in a cell from its rounds (each a list of clients' results)."""
    requests = [request for run in runs for client in run for request in client["requests"]]
    errors = [error for run in runs for client in run for error in client["errors"]]
    chunks = sum(len(request["arrivals"]) for request in requests)
    # all clients of a round together: the chunks of the round over its longest client window
    window = sum(max((c["window"][1] - c["window"][0] for c in run), default=0.0) for run in runs)
    gaps = np.concatenate([np.diff(r["arrivals"]) for r in requests if len(r["arrivals"]) > 1] or [np.zeros(0)])

    def percentile(values, q):
        return float(np.percentile(values, q) * 1e3) if len(values) else float("nan")

    first = [r["arrivals"][0] for r in requests if r["arrivals"]]
    last = [r["arrivals"][-1] for r in requests if r["arrivals"]]
    rates = [len(r["arrivals"]) / r["arrivals"][-1] for r in requests if r["arrivals"] and r["arrivals"][-1] > 0]
    return {
        "requests": len(requests),
        "chunks_per_request": sorted({len(r["arrivals"]) for r in requests}),
        "ttft_p50_ms": percentile(first, 50),
        "ttft_p90_ms": percentile(first, 90),
        "last_p50_ms": percentile(last, 50),
        "last_p90_ms": percentile(last, 90),
        "end_p50_ms": percentile([r["done"] for r in requests], 50),
        "chunks_per_s": float(np.median(rates)) if rates else float("nan"),
        "aggregate_chunks_per_s": chunks / window if window else float("nan"),
        "gap_p50_ms": percentile(gaps, 50),
        "gap_p99_ms": percentile(gaps, 99),
        "bunched": float(np.mean(gaps < BUNCHED_GAP_S)) if len(gaps) else float("nan"),
        "burst_requests": float(np.mean([_burst(r["arrivals"]) for r in requests])) if requests else float("nan"),
        "errors": errors[:5],
    }


def _burst(arrivals: list[float]) -> bool:
    """Whether most of a request's chunks came bunched (gaps under ``BUNCHED_GAP_S``): held, then read at once."""
    gaps = np.diff(arrivals)
    return bool(len(gaps)) and float(np.mean(gaps < BUNCHED_GAP_S)) > 0.5


def _check(key: str, clients: list[dict], expected: list[str]) -> None:
    """Every client's last request answered ``expected`` (chunk texts, compared as JSON), and nothing failed."""
    for client in clients:
        if client["errors"]:
            raise RuntimeError(f"target {key} ({TARGETS[key]}) failed: {client['errors'][:2]}")
        if [json.loads(text) for text in client["sample"]] != [json.loads(text) for text in expected]:
            raise AssertionError(
                f"target {key} ({TARGETS[key]}) answered {client['sample'][:3]}... ({len(client['sample'])} chunks), "
                f"expected {expected[:3]}... ({len(expected)} chunks)"
            )


def measure(work_dir: Path, *, requests: int, rounds: int, warmup: int, new_tokens: int, progress=print) -> dict:
    """Run the comparison; returns ``{"cells": [{"clients", "targets": {key: summary}, "rss_mb"}], ...}``."""
    import mlflow.pyfunc

    from mlflow_triton.local import TritonInstallation, TritonServer
    from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines
    from mlflow_triton.repository.guard import served_directories

    work_dir.mkdir(parents=True, exist_ok=True)
    progress(
        f"[streaming] saving the tiny GPT-2 with mlflow_triton.pyfunc.save_model(stream=True), {new_tokens} tokens"
    )
    package = save_package(work_dir, new_tokens)
    model_dir = package / "model_repository" / MODEL_NAME
    validation = json.loads((model_dir / "validation.json").read_text(encoding="utf-8"))
    served = served_directories(model_dir)
    repo_root = work_dir / "repository"
    shutil.rmtree(repo_root, ignore_errors=True)
    repo_root.mkdir(parents=True)
    for directory in served:
        shutil.copytree(directory, repo_root / directory.name)
    installation = TritonInstallation.bundled(progress=progress)
    env = ensure_env_for_requirements(
        requirement_lines((model_dir / "requirements.txt").read_text(encoding="utf-8")),
        installation.serving_constraints,
        progress=progress,
        reuse_superset=True,
        source=str(model_dir / "requirements.txt"),
    )
    pyfunc_model = mlflow.pyfunc.load_model(str(package))
    stream_chunks = [json.dumps(chunk) for chunk in pyfunc_model.predict_stream(serving_input())]
    one_shot = [json.dumps({"predictions": pyfunc_model.predict(serving_input())})]
    expected = {"a": stream_chunks, "b": stream_chunks, "c": stream_chunks, "d": one_shot}
    body = serving_body()

    progress(f"[streaming] starting tritonserver with {', '.join(d.name for d in served)} ...")
    with TritonServer(
        repo_root,
        [directory.name for directory in served],
        installation=installation,
        serving_env=env,
        log_path=work_dir / "tritonserver.log",
    ) as server:
        for directory in served:
            _wait_model_ready(server, directory.name)
        ports = {"http_port": server.http_port, "grpc_port": server.grpc_port}

        def run(key, clients, count, warm):
            if key == "c":
                return in_process(pyfunc_model, clients, count, warm)
            kind, model = SERVED[key]
            spec = {"kind": kind, "model": model, "body": body, "clients": clients, "requests": count, "warmup": warm}
            return run_streams({**spec, **ports}, work_dir / "client")

        for key in TARGETS:
            _check(key, run(key, 1, 1, 0), expected[key])
        progress(f"[streaming] {', '.join(TARGETS)} answer like pyfunc.predict_stream / pyfunc.predict")

        cells = []
        for clients in CLIENTS:
            per_target = {key: [] for key in TARGETS}
            for number in range(rounds):
                order = list(TARGETS) if number % 2 == 0 else list(reversed(TARGETS))
                for key in order:
                    found = run(key, clients, requests, warmup)
                    _check(key, found, expected[key])
                    per_target[key].append(found)
                    shown = summarize([found])
                    progress(
                        f"[streaming] clients={clients} round {number + 1}/{rounds} {key}: TTFT p50 "
                        f"{shown['ttft_p50_ms']:7.2f} ms  last p50 {shown['last_p50_ms']:7.2f} ms  "
                        f"{shown['chunks_per_s']:7.0f} chunks/s"
                    )
            rss = {
                "stream stub": stub_rss_mb(server.pid, STREAM_MODEL),
                "one-shot stub": stub_rss_mb(server.pid, MODEL_NAME),
                "tritonserver": process_rss_mb(server.pid),
                "this process (c)": process_rss_mb(os.getpid()),
            }
            targets = {key: summarize(runs) for key, runs in per_target.items()}
            arrivals = {
                key: [[request["arrivals"] for request in client["requests"]] for run in runs for client in run]
                for key, runs in per_target.items()
            }
            cells.append({"clients": clients, "targets": targets, "rss_mb": rss, "arrivals": arrivals})
        triton_version = server.version()
    predict_ms = predict_times(pyfunc_model, max(10, requests), warmup)
    stream_ms = stream_times(pyfunc_model, max(10, requests), warmup)
    return {
        "cells": cells,
        "triton_version": triton_version,
        "requests": requests,
        "rounds": rounds,
        "warmup": warmup,
        "new_tokens": new_tokens,
        "torch_threads": TORCH_THREADS,
        "chunks": len(stream_chunks),
        "predict_p50_ms": float(np.median(predict_ms)),
        "stream_in_process_p50_ms": float(np.median(stream_ms)),
        "stream_validation": validation.get("stream"),
    }


# ----------------------------------------------------------------------------- report

#: (label, numerator, denominator): ratios of p50 times (lower is better) or of chunks/s (higher is better).
TIME_RATIOS = (
    ("a TTFT / d full", ("a", "ttft_p50_ms"), ("d", "ttft_p50_ms")),
    ("b TTFT / d full", ("b", "ttft_p50_ms"), ("d", "ttft_p50_ms")),
    ("a last / d full", ("a", "last_p50_ms"), ("d", "ttft_p50_ms")),
    ("b last / d full", ("b", "last_p50_ms"), ("d", "ttft_p50_ms")),
    ("a TTFT / c TTFT", ("a", "ttft_p50_ms"), ("c", "ttft_p50_ms")),
)
RATE_RATIOS = (
    ("a chunks/s / c", ("a", "chunks_per_s"), ("c", "chunks_per_s")),
    ("b chunks/s / c", ("b", "chunks_per_s"), ("c", "chunks_per_s")),
    ("a aggregate / c", ("a", "aggregate_chunks_per_s"), ("c", "aggregate_chunks_per_s")),
    ("b aggregate / c", ("b", "aggregate_chunks_per_s"), ("c", "aggregate_chunks_per_s")),
)


def ratios(cell: dict) -> dict[str, float]:
    t = cell["targets"]
    return {
        label: t[top][top_field] / t[bottom][bottom_field] if t[bottom][bottom_field] else float("nan")
        for label, (top, top_field), (bottom, bottom_field) in (*TIME_RATIOS, *RATE_RATIOS)
    }


def report(measured: dict, info: dict, load_end: str, command: str) -> str:
    cells = measured["cells"]
    rows = []
    for cell in cells:
        for key, t in cell["targets"].items():
            streamed = key in STREAMED
            rows.append(
                [
                    cell["clients"],
                    key,
                    t["requests"],
                    "/".join(map(str, t["chunks_per_request"])),
                    f"{t['ttft_p50_ms']:.1f} / {t['ttft_p90_ms']:.1f}",
                    f"{t['last_p50_ms']:.1f} / {t['last_p90_ms']:.1f}",
                    f"{t['chunks_per_s']:.0f}" if streamed else "—",
                    f"{t['aggregate_chunks_per_s']:.0f}" if streamed else "—",
                    f"{t['gap_p50_ms']:.3f} / {t['gap_p99_ms']:.2f}" if streamed else "—",
                    f"{t['bunched']:.0%}" if streamed else "—",
                    f"{t['burst_requests']:.0%}" if streamed else "—",
                    len(t["errors"]),
                ]
            )
    labels = [label for label, _, _ in (*TIME_RATIOS, *RATE_RATIOS)]
    ratio_rows = [[cell["clients"], *(f"{ratios(cell)[label]:.2f}" for label in labels)] for cell in cells]
    rss_rows = [[cell["clients"], *(f"{mb:.0f}" for mb in cell["rss_mb"].values())] for cell in cells]
    packages = ", ".join(f"{name} {info['packages'].get(name, '?')}" for name in PACKAGES)
    lines = [
        "## Streaming, served: a tiny GPT-2's predict_stream through Triton's streams, in process and one-shot",
        "",
        *(f"- **{key}**: {text}" for key, text in TARGETS.items()),
        "",
        f"The model: a PythonModel (models from code) around a tiny GPT-2 text-generation pipeline (1 layer, 2 heads, "
        f"16-dim embeddings, a 22-word WordLevel tokenizer), greedy, {measured['new_tokens']} new tokens per request "
        f"(min_new_tokens = max_new_tokens); predict_stream yields each non-empty piece of TextIteratorStreamer as "
        f'{{"delta": piece}}: {measured["chunks"]} chunks per request; torch.set_num_threads('
        f"{measured['torch_threads']}) in load_context (below). Saved with "
        "`mlflow_triton.pyfunc.save_model(..., stream=True)`; both model directories on one tritonserver, one "
        "instance each. Every target is sent MLflow's serving body for one prompt.",
        "",
        f"Run: `{command}` — {info['date']}. Triton {measured['triton_version']}. {measured['rounds']} round(s) of "
        f"{measured['requests']} request(s) per client, target and cell after {measured['warmup']} warm-up "
        "request(s) per client, alternating a, b, c, d (reversed every other round). Versions: "
        f"{packages}.",
        "",
        _table(
            [
                "clients",
                "target",
                "requests",
                "chunks",
                "TTFT p50 / p90 ms",
                "last chunk p50 / p90 ms",
                "chunks/s",
                "aggregate chunks/s",
                "gap p50 / p99 ms",
                "bunched",
                "burst streams",
                "errors",
            ],
            rows,
        ),
        "",
        "Ratios (of the p50 times: below 1 is sooner; of chunks/s: above 1 is faster):",
        "",
        _table(["clients", *labels], ratio_rows),
        "",
        f"In this process, alone and after the servers stopped: `pyfunc.predict` (the one-shot answer without a "
        f"server) p50 {measured['predict_p50_ms']:.1f} ms, `pyfunc.predict_stream` consumed to its end p50 "
        f"{measured['stream_in_process_p50_ms']:.1f} ms: what the streamer's thread and queue cost over generating "
        "alone.",
        "",
        "Resident memory (RSS, MiB) after each cell:",
        "",
        _table(["clients", *cells[0]["rss_mb"]], rss_rows),
        "",
        "Legend:",
        "",
        "- **TTFT**: time to first chunk, from sending the request to reading its first chunk (d: the whole answer).",
        "- **last chunk**: from sending the request to reading its last chunk (a: before the empty final response; "
        "b: before the event stream ends).",
        "- **chunks/s**: per request, chunks / time to its last chunk (median over requests): what one reader sees. "
        "**aggregate**: every client's chunks together over the round's longest client window.",
        f"- **gap**: between consecutive chunks of a request. **bunched**: share of gaps under "
        f"{BUNCHED_GAP_S * 1e3:g} ms, chunks that arrived in one read rather than one by one. **burst streams**: "
        "share of requests most of whose chunks came bunched (held, then delivered at once).",
        "- c runs in this process: the MLflow reference, not a server (no network, no serialization beyond "
        "`json.dumps` of each chunk); at 4 clients, 4 threads share one model and the GIL. a, b and d run in client "
        "processes (`benchmarks/streaming_client.py`). At 4 clients the Triton models have one instance each: the "
        "streams of a and b, and d's requests, are served one after another.",
        f"- torch runs {TORCH_THREADS} intra-op thread(s) in each process: with torch's default of 2 on these 2 shared "
        "cores, a lone `predict` (generation on the calling thread, as d's stub runs it) was 14x slower "
        "under a load average of 6 (471 ms against 34 ms) while `predict_stream` (generation in its own thread) was "
        "not slowed: that contention, not serving, would be measured.",
        "",
        f"Machine: {info['nproc']} CPU(s), {info['cpu']}, {info['memory']}; {info['os']}; Python {info['python']}; "
        f"load average at start {info['load_average_start']}, at end {load_end}. The server, its stubs, the client "
        "processes and the benchmark share these CPUs.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.streaming", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 round of 3 requests per client")
    parser.add_argument("--requests", type=int, help="requests per client, target, cell and round (default 15)")
    parser.add_argument("--rounds", type=int, help="rounds per cell (default 3; quick 1)")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up requests per client before each measurement")
    parser.add_argument(
        "--new-tokens",
        type=int,
        default=64,
        help=f"tokens each request generates (default 64, at most {MAX_NEW_TOKENS})",
    )
    parser.add_argument("--work-dir", type=Path, default=ROOT / ".work" / "bench-streaming")
    parser.add_argument(
        "--results",
        type=Path,
        help="markdown results file (default benchmarks/streaming-results.md; quick: <work-dir>/streaming-results-"
        "quick.md)",
    )
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if not 1 <= args.new_tokens <= MAX_NEW_TOKENS:
        parser.error(f"--new-tokens must be 1 to {MAX_NEW_TOKENS}: the prompt and the tokens fit {POSITIONS} positions")
    requests = max(1, args.requests or (3 if args.quick else 15))
    rounds = max(1, args.rounds or (1 if args.quick else 3))
    results = args.results or (
        args.work_dir / "streaming-results-quick.md" if args.quick else HERE / "streaming-results.md"
    )
    command = " ".join(["python -m benchmarks.streaming", *argv])
    info = machine()
    info["packages"].update({name: _version(name) for name in PACKAGES})
    measured = measure(
        args.work_dir.resolve(), requests=requests, rounds=rounds, warmup=args.warmup, new_tokens=args.new_tokens
    )
    text = report(measured, info, _loadavg(), command)
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(text, encoding="utf-8")
    arrivals = {cell["clients"]: cell.pop("arrivals") for cell in measured["cells"]}
    (args.work_dir / "streaming.json").write_text(json.dumps(measured, indent=1) + "\n", encoding="utf-8")
    (args.work_dir / "streaming-arrivals.json").write_text(json.dumps(arrivals) + "\n", encoding="utf-8")
    print(text)
    print("ratios:", json.dumps({cell["clients"]: ratios(cell) for cell in measured["cells"]}, indent=1))
    return 0


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
