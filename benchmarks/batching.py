"""Dynamic batching, served: the batched generated repository against the unbatched one and MLServer's batching.

The example Pipeline (``examples.sklearn_example``: two numeric columns and one text column ->
``predict_proba``) is saved twice with ``mlflow_triton.sklearn.save_model``: without batching (**a**) and
with ``max_batch_size=4096`` (**a'**, no queue delay: Triton batches what is waiting). Both
repositories are loaded in one ``tritonserver`` (bundled 2.51); **d'** is MLServer 1.7.1 with its MLflow
runtime and adaptive batching on (``max_batch_size`` 16 requests, ``max_batch_time`` 5 ms) on the
same package (``benchmarks/peers.py``). Before any load each target's answer is compared with
``pyfunc.predict`` in this process. Cells (rows x concurrent clients) are measured in rounds that
alternate a, a', d'; Triton's statistics give a''s requests per execution.

Targets (issue #25): a'/a >= 3 at 16 clients (1 row); a' >= 1.2 x d' in every multi-client cell;
a'/a >= 0.95 at 1 client (batching must not cost a lone client).

    .venv/bin/python -m benchmarks.batching [--duration S] [--rounds N] [--results benchmarks/batching-results.md]

``make bench`` runs it after ``benchmarks.run``. The figures are only as good as the machine is quiet:
the load average at start and end is printed with them.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sys
from pathlib import Path

import numpy as np

from benchmarks.load import LoadResult, run_load
from benchmarks.peers import MLServer, ensure_mlserver_env, mlserver_body
from benchmarks.run import _loadavg, _table, machine
from benchmarks.served import _post, _wait_model_ready, save_package, summarize

TARGETS = {
    "a": "generated repository on Triton, max_batch_size 0 (each request its own predict)",
    "a'": "generated repository on Triton, max_batch_size 4096 (dynamic batching, requests joined)",
    "d'": "MLServer 1.7.1 (MLflow runtime) with adaptive batching",
}
CELLS = ((1, 1), (1, 4), (1, 16), (1000, 1), (1000, 4))
MAX_BATCH_SIZE = 4096  # four concurrent 1,000-row requests fit one execution
MLSERVER_ADAPTIVE_BATCHING = {"max_batch_size": 16, "max_batch_time": 0.005}
BATCHED_MODEL = "classifier_batched"
RESULTS = Path(__file__).resolve().parent / "batching-results.md"


def save_batched(work_dir: Path) -> Path:
    """The example Pipeline saved with ``max_batch_size``; returns its generated model directory."""
    from examples.sklearn_example import fitted_pipeline
    from mlflow_triton import sklearn as triton_sklearn

    package = work_dir / "classifier-batched"
    shutil.rmtree(package, ignore_errors=True)
    pipeline, frame = fitted_pipeline()
    triton_sklearn.save_model(
        pipeline,
        package,
        input_example=frame.iloc[:3],
        pyfunc_predict_fn="predict_proba",
        triton_model_name=BATCHED_MODEL,
        max_batch_size=MAX_BATCH_SIZE,
    )
    return package / "model_repository" / BATCHED_MODEL


def bodies(model_dir: Path, batched_dir: Path, rows: int, seed: int = 7):
    """(frame, {target: body}): the same rows as v2 JSON for a, in the batched shapes for a', for MLServer."""
    from examples.sklearn_example import training_frame
    from mlflow_triton._config import declarations, read_config, wire_arrays
    from mlflow_triton._requests import json_request
    from mlflow_triton.runtime.codecs import StructureCodec

    frame, _ = training_frame(rows=rows, seed=seed)
    config, contract = read_config(model_dir / "config.pbtxt")
    batched_config, _ = read_config(batched_dir / "config.pbtxt")
    inputs, outputs = declarations(config)
    tensors = StructureCodec(contract.inputs, {d.name: (d.data_type, d.dims) for d in inputs}).to_tensors(frame)
    datatypes, names = {d.name: d.data_type for d in inputs}, [d.name for d in outputs]
    plain = json_request(tensors, datatypes, names)
    batched = json_request(wire_arrays(batched_config, "input", tensors), datatypes, names)
    return frame, {
        "a": json.dumps(plain).encode(),
        "a'": json.dumps(batched).encode(),
        "d'": mlserver_body(plain, {f.tensor: f.name for f in contract.inputs.fields}),
    }


def measure(work_dir: Path, *, cells=CELLS, duration=10.0, rounds=2, warmup=3, progress=print) -> dict:
    """Run the batching comparison; returns ``{"cells": [...], ...}``."""
    import mlflow.pyfunc

    from mlflow_triton.local import TritonInstallation, TritonServer, ensure_serving_env

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    progress("[batching] saving the sklearn Pipeline without and with max_batch_size ...")
    package, model_dir = save_package(work_dir)
    batched_dir = save_batched(work_dir)
    repo_root = work_dir / "repository"
    shutil.rmtree(repo_root, ignore_errors=True)
    repo_root.mkdir(parents=True)
    for directory in (model_dir, batched_dir):
        shutil.copytree(directory, repo_root / directory.name)
    installation = TritonInstallation.bundled(progress=progress)
    env = ensure_serving_env(model_dir / "requirements.txt", installation.serving_constraints, progress=progress)
    mlserver_env = ensure_mlserver_env(package, progress=progress)
    pyfunc_model = mlflow.pyfunc.load_model(str(package))
    requests = {}
    for rows in sorted({rows for rows, _ in cells}):
        frame, request_bodies = bodies(model_dir, batched_dir, rows)
        requests[rows] = {"expected": np.asarray(pyfunc_model.predict(frame), dtype=float), **request_bodies}

    progress("[batching] starting tritonserver (a and a') and MLServer with adaptive batching (d') ...")
    with (
        TritonServer(
            repo_root,
            (model_dir.name, BATCHED_MODEL),
            installation=installation,
            serving_env=env,
            log_path=work_dir / "tritonserver.log",
        ) as server,
        MLServer(
            mlserver_env,
            package,
            model_dir.name,
            work_dir / "mlserver",
            work_dir / "mlserver.log",
            adaptive_batching=MLSERVER_ADAPTIVE_BATCHING,
        ) as mlserver,
    ):
        _wait_model_ready(server, BATCHED_MODEL)
        endpoints = {
            "a": (server.http_port, f"/v2/models/{model_dir.name}/infer"),
            "a'": (server.http_port, f"/v2/models/{BATCHED_MODEL}/infer"),
            "d'": (mlserver.port, f"/v2/models/{model_dir.name}/infer"),
        }
        for request in requests.values():
            for key, (port, path) in endpoints.items():
                answer = _post(port, path, request[key])
                (output,) = answer["outputs"]
                got = np.asarray(output["data"], dtype=float).reshape(output["shape"])
                if got.shape != request["expected"].shape or not np.allclose(got, request["expected"], 1e-9, 1e-12):
                    raise AssertionError(f"target {key} ({TARGETS[key]}) answered differently from pyfunc.predict")
        progress("[batching] a, a' and d' answer like pyfunc.predict")

        results = []
        for rows, clients in cells:
            per_target = {key: [] for key in endpoints}
            before = _counts(server.http_port, BATCHED_MODEL)
            for number in range(rounds):
                for key, (port, path) in endpoints.items():
                    result = run_load(
                        port,
                        path,
                        requests[rows][key],
                        concurrency=clients,
                        duration=duration,
                        warmup=warmup,
                        work_dir=work_dir / "load",
                    )
                    per_target[key].append(result)
                    progress(
                        f"[batching] rows={rows:<5} clients={clients:<2} round {number + 1}/{rounds} "
                        f"{key:<2}: {result.rps:8.1f} req/s  p50 {result.percentile_ms(50):7.2f} ms"
                        + (f"  ERRORS: {result.errors[:2]}" if result.errors else "")
                    )
            after = _counts(server.http_port, BATCHED_MODEL)
            executed = {name: after[name] - before[name] for name in after}
            pooled = {key: summarize(LoadResult.pooled(runs)) for key, runs in per_target.items()}
            results.append({"rows": rows, "clients": clients, "targets": pooled, "batched_counts": executed})
        triton_version = server.version()
    return {
        "cells": results,
        "triton_version": triton_version,
        "duration": duration,
        "rounds": rounds,
        "mlserver_adaptive_batching": MLSERVER_ADAPTIVE_BATCHING,
        "max_batch_size": MAX_BATCH_SIZE,
    }


def _counts(port: int, model: str) -> dict:
    """Triton's counts for ``model``: requests answered, rows inferred, executions."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", f"/v2/models/{model}/stats")
        [stats] = json.loads(connection.getresponse().read())["model_stats"]
    finally:
        connection.close()
    return {
        "requests": int(stats["inference_stats"]["success"]["count"]),
        "rows": int(stats["inference_count"]),
        "executions": int(stats["execution_count"]),
    }


# ----------------------------------------------------------------------------- targets and report


def targets(cells: list) -> list:
    """``[(target, met, measured)]`` for the three targets of issue #25."""

    def rps(cell, key):
        return cell["targets"][key]["rps"]

    def ratio(cell, top, bottom):
        return rps(cell, top) / rps(cell, bottom) if rps(cell, bottom) else 0.0

    checks = []
    for cell in cells:
        where = f"{cell['rows']} row(s) x {cell['clients']} client(s)"
        if cell["rows"] == 1 and cell["clients"] == 16:
            value = ratio(cell, "a'", "a")
            checks.append(("a'/a >= 3 at 16 clients, 1 row", value >= 3.0, f"{value:.2f}"))
        if cell["clients"] > 1:
            value = ratio(cell, "a'", "d'")
            checks.append((f"a' >= 1.2 x d' ({where})", value >= 1.2, f"{value:.2f}"))
        if cell["clients"] == 1:
            value = ratio(cell, "a'", "a")
            checks.append((f"a'/a >= 0.95 at 1 client ({where})", value >= 0.95, f"{value:.2f}"))
    return checks


def report(measured: dict, info: dict, load_end: str) -> str:
    rows = []
    for cell in measured["cells"]:
        t = cell["targets"]
        counts = cell["batched_counts"]
        per_execution = counts["requests"] / counts["executions"] if counts["executions"] else float("nan")
        plain, batched, mlserver = (t[key]["rps"] for key in TARGETS)
        rows.append(
            [
                cell["rows"],
                cell["clients"],
                *(f"{t[k]['rps']:.1f}" for k in TARGETS),
                f"{batched / plain:.2f}" if plain else "—",
                f"{batched / mlserver:.2f}" if mlserver else "—",
                *(f"{t[k]['p50_ms']:.1f}" for k in TARGETS),
                f"{per_execution:.1f}",
                sum(len(t[k]["errors"]) for k in TARGETS),
            ]
        )
    checks = targets(measured["cells"])
    lines = [
        "## Dynamic batching: a' (batched generated repository) vs a (unbatched) and d' (MLServer adaptive batching)",
        "",
        *(f"- **{key}**: {text}" for key, text in TARGETS.items()),
        "",
        f"Triton {measured['triton_version']}; MLServer adaptive batching {measured['mlserver_adaptive_batching']}; "
        f"a' max_batch_size {measured['max_batch_size']}, no queue delay. {measured['rounds']} round(s) of "
        f"{measured['duration']:g} s per target and cell, alternating a, a', d'.",
        "",
        _table(
            [
                "rows",
                "clients",
                "a req/s",
                "a' req/s",
                "d' req/s",
                "a'/a",
                "a'/d'",
                "a p50 ms",
                "a' p50 ms",
                "d' p50 ms",
                "a' requests/execution",
                "errors",
            ],
            rows,
        ),
        "",
        "Targets (issue #25):",
        "",
        *(f"- {'met' if met else 'MISSED'}: {what}: {value}" for what, met, value in checks),
        "",
        f"Machine: {info['nproc']} CPU(s), {info['cpu']}, {info['memory']}; {info['os']}; Python {info['python']}; "
        f"load average at start {info['load_average_start']}, at end {load_end}. Servers, load clients and the "
        "benchmark share these CPUs.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.batching", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per target, cell and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work-dir", type=Path, default=Path(".work") / "bench-batching")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    info = machine()
    measured = measure(args.work_dir, duration=args.duration, rounds=args.rounds)
    text = report(measured, info, _loadavg())
    args.results.write_text(text, encoding="utf-8")
    (args.work_dir / "batching.json").write_text(json.dumps(measured, indent=1) + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
