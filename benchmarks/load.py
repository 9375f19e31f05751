"""Closed-loop HTTP load from separate processes, bounded in time and in count.

:func:`run_load` starts ``python -m benchmarks.load`` (a separate, light process: no MLflow, no
server code) which forks ``concurrency`` client processes. Each client opens one keep-alive
``http.client`` connection to ``127.0.0.1``, sends ``warmup`` requests, waits at a barrier with the
other clients, then POSTs the same body back to back (closed loop: the next request leaves when
the previous answer has been read) until ``duration`` seconds have passed or ``max_requests`` were
sent. Every answer must be HTTP 200; the first failure stops that client and is reported.

The result holds requests/s (sum over clients of requests / measured window), the latencies of all
measured requests (seconds) and the error count.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Hard bounds, whatever the caller asks for.
MAX_DURATION_S = 120.0
MAX_REQUESTS_PER_CLIENT = 1_000_000
MAX_CONCURRENCY = 16
SOCKET_TIMEOUT_S = 60.0


@dataclass
class LoadResult:
    """One closed-loop measurement of one target."""

    requests: int = 0
    seconds: float = 0.0  # longest client window
    rps: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds, measured requests only
    errors: list[str] = field(default_factory=list)

    def percentile_ms(self, q: float) -> float:
        return float(np.percentile(self.latencies, q) * 1e3) if self.latencies else float("nan")

    @staticmethod
    def pooled(results: list[LoadResult]) -> LoadResult:
        """Rounds of the same cell taken together: requests/s over all measured time."""
        total = LoadResult()
        rps_weighted = 0.0
        for r in results:
            total.requests += r.requests
            total.seconds += r.seconds
            total.latencies.extend(r.latencies)
            total.errors.extend(r.errors)
            rps_weighted += r.rps * r.seconds
        total.rps = rps_weighted / total.seconds if total.seconds else 0.0
        return total


def run_load(
    port: int,
    path: str,
    body: bytes,
    *,
    headers: dict[str, str] | None = None,
    concurrency: int = 1,
    duration: float = 10.0,
    warmup: int = 5,
    max_requests: int = MAX_REQUESTS_PER_CLIENT,
    work_dir: Path,
    timeout_margin: float = 60.0,
) -> LoadResult:
    """Drive ``POST http://127.0.0.1:<port><path>`` from a separate process; see the module docstring."""
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be 1..{MAX_CONCURRENCY}")
    duration = min(float(duration), MAX_DURATION_S)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    body_file = work_dir / "body.bin"
    body_file.write_bytes(body)
    spec = {
        "port": port,
        "path": path,
        "body_file": str(body_file),
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "concurrency": concurrency,
        "duration": duration,
        "warmup": warmup,
        "max_requests": min(int(max_requests), MAX_REQUESTS_PER_CLIENT),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.load"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=duration + 2 * SOCKET_TIMEOUT_S + timeout_margin,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"load generator failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(proc.stdout)
    return LoadResult(
        requests=data["requests"],
        seconds=data["seconds"],
        rps=data["rps"],
        latencies=data["latencies"],
        errors=data["errors"],
    )


# ----------------------------------------------------------------------------- load process


def _client(spec, body, barrier, results):
    latencies: list[float] = []
    errors: list[str] = []
    started = finished = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", spec["port"], timeout=SOCKET_TIMEOUT_S)
    headers = dict(spec["headers"])

    def post():
        conn.request("POST", spec["path"], body=body, headers=headers)
        response = conn.getresponse()
        payload = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {payload[:300]!r}")

    try:
        for _ in range(spec["warmup"]):
            post()
    except Exception as error:  # reported, and this client sends no measured request
        errors.append(f"warm-up: {type(error).__name__}: {error}")
    try:
        barrier.wait(timeout=SOCKET_TIMEOUT_S)
    except Exception as error:
        errors.append(f"barrier: {type(error).__name__}")
    if not errors:
        started = time.monotonic()
        deadline = started + spec["duration"]
        now = started
        try:
            while now < deadline and len(latencies) < spec["max_requests"]:
                post()
                then, now = now, time.monotonic()
                latencies.append(now - then)
        except Exception as error:
            errors.append(f"{type(error).__name__}: {error}")
        finished = now
    conn.close()
    results.put({"latencies": latencies, "seconds": finished - started, "errors": errors})


def _main():
    spec = json.loads(sys.stdin.read())
    body = Path(spec["body_file"]).read_bytes()
    ctx = multiprocessing.get_context("fork")  # this process is single-threaded and light
    barrier = ctx.Barrier(spec["concurrency"])
    results = ctx.Queue()
    clients = [
        ctx.Process(target=_client, args=(spec, body, barrier, results), daemon=True)
        for _ in range(spec["concurrency"])
    ]
    for c in clients:
        c.start()
    limit = time.monotonic() + spec["duration"] + 2 * SOCKET_TIMEOUT_S
    collected = []
    for _ in clients:
        remaining = max(0.1, limit - time.monotonic())
        try:
            collected.append(results.get(timeout=remaining))
        except Exception:
            break
    for c in clients:
        c.join(timeout=5)
        if c.is_alive():
            c.kill()
            c.join()
    errors = [e for r in collected for e in r["errors"]]
    if len(collected) < len(clients):
        errors.append(f"{len(clients) - len(collected)} client(s) did not report in time")
    latencies = [x for r in collected for x in r["latencies"]]
    rps = sum(len(r["latencies"]) / r["seconds"] for r in collected if r["seconds"] > 0)
    out = {
        "requests": len(latencies),
        "seconds": max((r["seconds"] for r in collected), default=0.0),
        "rps": rps,
        "latencies": [round(x, 7) for x in latencies],
        "errors": errors,
    }
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    argparse.ArgumentParser(
        prog="python -m benchmarks.load", description="closed-loop load process; reads its spec as JSON on stdin"
    ).parse_args()
    _main()
