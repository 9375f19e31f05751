"""Run every benchmark and print one table with the figures, the ratios and the targets.

    .venv/bin/python -m benchmarks.run            # full run (~15 min): results.md + docs/benchmarks.md's block
    .venv/bin/python -m benchmarks.run --quick    # smoke run (~4 min), writes .work/benchmarks/results-quick.md

See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

from benchmarks import readme

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("overhead", "logging", "served")
TARGET_KEYS = ("a", "b", "c", "d", "e")
SERVED_TARGETS = {"a/d": 1.0, "a/b": 2.0, "a/c": 0.95, "e/a": 3.0}
EXPORT_TARGET_MIN_CLIENTS = 4
SERVED_TARGET_LABELS = {
    "a/d": "a/d requests/s ≥ 1.0: generated repository vs MLServer (every cell)",
    "a/b": "a/b requests/s ≥ 2.0: generated repository vs mlflow models serve (every cell)",
    "a/c": "a/c requests/s ≥ 0.95: generated repository vs hand-written floor (every cell)",
    "e/a": f"e/a requests/s ≥ 3.0: ONNX export vs generated repository (1 row, ≥ {EXPORT_TARGET_MIN_CLIENTS} clients)",
}


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: short cells, one logging repeat, a 50 MB model; results go to the work dir",
    )
    parser.add_argument(
        "--duration", type=float, help="seconds of load per cell, target and round (default 10; quick 1.5)"
    )
    parser.add_argument("--rounds", type=int, help="alternating a,b,c,d,e rounds per cell (default 2)")
    parser.add_argument(
        "--model-mb", type=float, help="size of the PyTorch model for the logging cost (default 200; quick 50)"
    )
    parser.add_argument("--repeats", type=int, help="runs of each logging mode (default 2; quick 1)")
    parser.add_argument("--only", action="append", choices=PARTS, help="run only this part (repeatable)")
    parser.add_argument("--work-dir", type=Path, default=ROOT / ".work" / "benchmarks")
    parser.add_argument(
        "--results",
        type=Path,
        help="markdown results file (default benchmarks/results.md; quick: <work-dir>/results-quick.md)",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    args.duration = min(args.duration or (1.5 if quick else 10.0), 120.0)
    args.rounds = max(1, args.rounds or 2)
    args.model_mb = args.model_mb or (50.0 if quick else 200.0)
    args.repeats = max(1, args.repeats or (1 if quick else 2))
    args.overhead_seconds = 3.0 if quick else 10.0
    args.parts = args.only or list(PARTS)
    args.work_dir = args.work_dir.resolve()
    if args.results is None:
        args.results = args.work_dir / "results-quick.md" if quick else ROOT / "benchmarks" / "results.md"
    return args


# ----------------------------------------------------------------------------- machine


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu,
        "memory": memory,
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        "packages": {
            name: version(name)
            for name in (
                "numpy",
                "pandas",
                "scikit-learn",
                "torch",
                "mlflow",
                "tritonclient",
                "onnxruntime",
                "skl2onnx",
            )
        },
        "load_average_start": _loadavg(),
    }


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


# ----------------------------------------------------------------------------- formatting


def machine_line(info: dict, load_end: str) -> str:
    """A report's short machine line: CPUs, Python and the load average around the run."""
    return (
        f"Machine: {info['nproc']} CPU(s), {info['cpu']}; Python {info['python']}; load average at start "
        f"{info['load_average_start']}, at end {load_end}."
    )


def _table(header, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "| " + " | ".join("-" * w for w in widths) + " |", *map(line, rows)])


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def _ratio(numerator: dict, denominator: dict) -> float:
    return numerator["rps"] / denominator["rps"] if denominator["rps"] else float("nan")


def _mark(value: float, met) -> str:
    """A ratio, with ✗ when it misses its target (``met`` None: the cell has no target)."""
    return f"{value:.2f}" + (" ✗" if met is False else "")


def _has_target(ratio: str, cell: dict) -> bool:
    """e/a has its target only for 1-row requests from enough clients; every other ratio in every cell."""
    return ratio != "e/a" or (cell["rows"] == 1 and cell["clients"] >= EXPORT_TARGET_MIN_CLIENTS)


def served_section(served: dict, targets: list) -> str:
    cells = served["cells"]
    throughput, latency = [], []
    verdicts = {"a/d": [], "a/b": [], "a/c": [], "e/a": []}
    for cell in cells:
        t = cell["targets"]
        ratios = {
            "a/d": _ratio(t["a"], t["d"]),
            "a/b": _ratio(t["a"], t["b"]),
            "a/c": _ratio(t["a"], t["c"]),
            "e/a": _ratio(t["e"], t["a"]),
        }
        marks = []
        for name, value in ratios.items():
            met = value >= SERVED_TARGETS[name] if _has_target(name, cell) else None
            if met is not None:
                verdicts[name].append((cell, value, met))
            marks.append(_mark(value, met))
        batching = cell.get("export_batching") or {}
        per_execution = (
            batching["inference_count"] / batching["execution_count"]
            if batching.get("execution_count")
            else float("nan")
        )
        throughput.append(
            [
                cell["rows"],
                cell["clients"],
                *(f"{t[k]['rps']:.1f}" for k in TARGET_KEYS),
                *marks,
                f"{per_execution:.1f}",
            ]
        )
        latency.append(
            [cell["rows"], cell["clients"], *(f"{t[k]['p50_ms']:.2f} / {t[k]['p99_ms']:.2f}" for k in TARGET_KEYS)]
        )
    for name, label in SERVED_TARGET_LABELS.items():
        checked = verdicts[name]
        if name == "e/a":
            measured = ", ".join(f"{value:.2f} ({cell['clients']} clients)" for cell, value, _ in checked) or "—"
        else:
            measured = f"{sum(met for _, _, met in checked)}/{len(checked)} cells"
        targets.append((label, measured, _verdict(bool(checked) and all(met for _, _, met in checked))))
    errors = {
        f"{c['rows']} rows/{c['clients']} clients/{k}": t["errors"]
        for c in cells
        for k, t in c["targets"].items()
        if t["errors"]
    }
    names = served.get("targets", {})
    legend = "; ".join(f"**{key}** = {names.get(key, key)}" for key in TARGET_KEYS)
    text = [
        "### 1. Served throughput and latency (sklearn Pipeline, closed loop over loopback)",
        "",
        f"{legend}. a and c on Triton {served.get('triton_version', '')} (1 instance each, no batching); "
        "b with 1 uvicorn worker (MLflow's default); "
        f"d MLServer {served.get('mlserver_version', '')} with its defaults (1 parallel worker, no adaptive batching); "
        f"e with dynamic batching (max_batch_size {served.get('export_max_batch_size', '?')}, 1 instance) on a "
        "second tritonserver. "
        f"{served['duration']:g} s per cell, target and round; {served['rounds']} round(s), alternating "
        "a,b,c,d,e,a,b,…, pooled. ✗ marks a ratio below its target.",
        "",
        "Requests per second, and ratios of requests per second (targets: a/d ≥ 1.0, a/b ≥ 2.0, a/c ≥ 0.95 in "
        f"every cell; e/a ≥ 3.0 for 1-row requests at ≥ {EXPORT_TARGET_MIN_CLIENTS} clients, the other e/a cells "
        'have no target). "e rows/exec" is Triton\'s inference count over its execution count for e in the '
        "cell: the rows the dynamic batcher ran together on average (1 row: requests per execution).",
        "",
        _table(["rows", "clients", *(f"{k} req/s" for k in TARGET_KEYS), *verdicts, "e rows/exec"], throughput),
        "",
        "Latency, p50 / p99 in ms:",
        "",
        _table(["rows", "clients", *TARGET_KEYS], latency),
    ]
    if errors:
        text += ["", "Errors during load: " + json.dumps(errors)]
    return "\n".join(text)


def overhead_section(overhead: dict, targets: list) -> str:
    row = [
        f"{overhead['rows']} × {overhead['columns']} (15 numeric + 5 text)",
        f"{overhead['decode_ms']:.3f}",
        f"{overhead['predict_ms']:.3f}",
        f"{overhead['encode_ms']:.3f}",
        f"{overhead['fraction'] * 100:.1f} %",
        overhead["iterations"],
    ]
    targets.append(
        (
            "runtime decode + encode ≤ 5 % of the request",
            f"{overhead['fraction'] * 100:.1f} %",
            _verdict(overhead["met"]),
        )
    )
    text = [
        "### 2. Runtime overhead in process (medians)",
        "",
        _table(["request", "decode ms", "predict ms", "encode ms", "(decode+encode)/total", "iterations"], [row]),
    ]
    if overhead.get("profile"):
        text += [
            "",
            "Target missed; cProfile of decode + encode (top by internal time):",
            "",
            "```",
            overhead["profile"].strip(),
            "```",
        ]
    return "\n".join(text)


def logging_section(logging: dict, targets: list) -> str:
    modes, checks = logging["modes"], logging["checks"]
    native = checks["native_bytes"]
    mb = lambda b: f"{b / 1e6:.1f}"  # noqa: E731
    labels = {
        "native_copy": "mlflow.pytorch.save_model + one copytree",
        "triton_save": "mlflow_triton.pytorch.save_model",
        "native_log": "mlflow.pytorch.log_model",
        "triton_log": "mlflow_triton.pytorch.log_model",
    }
    rows = []
    for mode, label in labels.items():
        m = modes[mode]
        wall = f"{m['wall_s']:.2f}"
        if mode == "native_copy":
            wall += f" (save {m['save_s']:.2f} + copy {m['wall_s'] - m['save_s']:.2f})"
        rows.append(
            [
                label,
                wall,
                mb(m["peak_disk_bytes"]),
                f"{m['peak_disk_bytes'] / native:.2f}",
                mb(m["final_disk_bytes"]),
                mb(m["rss_peak_bytes"] - m["rss_before_bytes"]),
            ]
        )
    targets.append(
        (
            "save_model peak disk ≤ native + one copy",
            f"{checks['save_peak_disk_ratio']:.3f} × native",
            _verdict(checks["save_peak_disk_met"]),
        )
    )
    targets.append(
        (
            "log_model peak disk ≤ 2 × mlflow.pytorch.log_model's",
            f"{checks['log_peak_disk_ratio']:.3f} ×",
            _verdict(checks["log_peak_disk_met"]),
        )
    )
    targets.append(
        (
            "save_model wall time vs native save + one copy (no numeric target)",
            f"{checks['save_wall_ratio']:.2f} ×",
            "info",
        )
    )
    return "\n".join(
        [
            f"### 3. Logging cost ({logging['size_mb']:g} MB PyTorch module; native package {mb(native)} MB; "
            f"median of {logging['repeats']} fresh-process run(s) per call)",
            "",
            _table(["call", "wall s", "peak disk MB", "peak / native", "final disk MB", "peak RSS Δ MB"], rows),
            "",
            f"Wall-time ratios: mlflow_triton save_model / (native save + copy) = {checks['save_wall_ratio']:.2f}; "
            f"/ native save alone = {checks['save_wall_vs_native_only']:.2f}; "
            f"mlflow_triton log_model / mlflow.pytorch.log_model = {checks['log_wall_ratio']:.2f}.",
        ]
    )


def machine_section(info: dict, args) -> str:
    packages = ", ".join(f"{k} {v}" for k, v in info["packages"].items())
    return "\n".join(
        [
            f"Run: `{' '.join(['python -m benchmarks.run', *sys.argv[1:]])}` — {info['date']}"
            + (" — **quick smoke run: short cells, not for docs/benchmarks.md**" if args.quick else ""),
            "",
            f"Machine: {info['nproc']} CPU(s) ({info['cpu']}), {info['memory']} RAM, {info['os']}; "
            f"Python {info['python']}; {packages}. "
            f"Load average at start: {info['load_average_start']}; at end: {info.get('load_average_end', '?')}. "
            "Servers, load clients and the benchmark share these CPUs.",
        ]
    )


# ----------------------------------------------------------------------------- main


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.chdir(ROOT)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    info = machine()
    say = lambda message: print(message, flush=True)  # noqa: E731
    say(f"benchmarks: {', '.join(args.parts)} -> {args.results} (work dir {args.work_dir})")
    started = time.monotonic()
    results = {}
    if "overhead" in args.parts:
        from benchmarks import overhead

        results["overhead"] = overhead.measure(args.work_dir / "overhead", seconds=args.overhead_seconds, progress=say)
    if "logging" in args.parts:
        from benchmarks import logging_cost

        results["logging"] = logging_cost.measure(
            args.work_dir / "logging", size_mb=args.model_mb, repeats=args.repeats, progress=say
        )
    if "served" in args.parts:
        from benchmarks import served

        results["served"] = served.measure(
            args.work_dir / "served", duration=args.duration, rounds=args.rounds, progress=say
        )
    info["load_average_end"] = _loadavg()

    targets: list[tuple[str, str, str]] = []
    sections = []
    if "served" in results:
        sections.append(served_section(results["served"], targets))
    if "overhead" in results:
        sections.append(overhead_section(results["overhead"], targets))
    if "logging" in results:
        sections.append(logging_section(results["logging"], targets))
    summary = "### Targets\n\n" + _table(["target", "measured", "verdict"], targets)
    report = "\n\n".join(["## Benchmark results", machine_section(info, args), summary, *sections]) + "\n"
    print("\n" + report)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(report, encoding="utf-8")
    (args.work_dir / "results.json").write_text(json.dumps({"machine": info, **results}, indent=1, default=str))
    say(f"written {args.results} ({time.monotonic() - started:.0f} s)")
    if args.quick or set(args.parts) != set(PARTS) or args.results.resolve() != readme.RESULTS:
        say("docs/benchmarks.md not updated (only a full run of every part into benchmarks/results.md updates it)")
    else:
        readme.sync(report)
        say("docs/benchmarks.md benchmark block updated from it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
