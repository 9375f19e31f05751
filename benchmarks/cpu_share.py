"""Where a served ONNX export's CPU goes: each process' CPU time over one closed-loop load, per request.

The case's unbatched package (``benchmarks.batching``'s ``sklearn``, ``text`` or ``embeddings`` case) is exported
once with ``export_onnx(backend="python")`` and served alone on the bundled ``tritonserver`` with the export's own
serving environment. After a warm-up load, one measured load of ``--clients`` closed-loop clients (one request of
the case's 1-row / 1-text body) runs for ``--duration`` seconds. The server's processes -- ``tritonserver`` and the
Python backend's stubs under it, each model's instances taken together -- are read from ``/proc`` (user + system
time) before and after it, and the load clients' time is what their processes used (``getrusage`` of this
process' finished children), so each part's CPU seconds, its milliseconds per request and its share are exact
sums, not samples.

    .venv/bin/python -m benchmarks.cpu_share [--case text|embeddings|sklearn] [--clients N] [--duration S]

Prints a markdown table and the machine's facts; no result file (docs/batching.md quotes a run).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from pathlib import Path

from benchmarks.batching import CASES, prepared_export
from benchmarks.load import run_load
from benchmarks.run import _loadavg, _table, machine, machine_line
from mlflow_triton.repository.guard import served_directories

#: What the load clients' processes are called in the table.
CLIENTS_LABEL = "load clients"
SERVER_LABEL = "tritonserver"
STUB = "triton_python_backend_stub"


def process_tree(root: int, proc: Path = Path("/proc")) -> dict[int, tuple[str, float]]:
    """``{pid: (command line, CPU seconds)}`` of ``root`` and every process below it, read from ``proc``."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[int, tuple[int, str, float]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # the process ended while being read
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, ...
        found[int(entry.name)] = (int(fields[1]), command, (int(fields[11]) + int(fields[12])) / ticks)
    children: dict[int, list[int]] = {}
    for pid, (parent, *_) in found.items():
        children.setdefault(parent, []).append(pid)
    tree, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in found:
            tree[pid] = found[pid][1:]
            frontier.extend(children.get(pid, ()))
    return tree


def label(command: str, models: list[str]) -> str:
    """Which part a server process is: a model's Python stub (by its model directory) or ``tritonserver``."""
    if STUB in command:
        for model in models:
            if f"/{model}/" in command:
                return f"{model} (Python stub)"
        return "Python stub of another model"
    return SERVER_LABEL


def shares(before: dict, after: dict, models: list[str], clients_cpu: float, requests: int) -> list[dict]:
    """``[{"part", "cpu_s", "ms_per_request", "share"}]``, largest first: the server's processes' CPU between
    ``before`` and ``after`` (:func:`process_tree`; a process started in between counts from 0) and the clients'."""
    parts: dict[str, float] = {CLIENTS_LABEL: clients_cpu}
    for pid, (command, cpu) in after.items():
        part = label(command, models)
        parts[part] = parts.get(part, 0.0) + cpu - (before[pid][1] if pid in before else 0.0)
    total = sum(parts.values())
    return [
        {
            "part": part,
            "cpu_s": cpu,
            "ms_per_request": cpu / requests * 1e3 if requests else float("nan"),
            "share": cpu / total if total else float("nan"),
        }
        for part, cpu in sorted(parts.items(), key=lambda item: -item[1])
    ]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(case_name: str, work_dir: Path, *, clients: int, duration: float, progress=print) -> dict:
    """One measured load of the case's export: ``{"rps", "requests", "seconds", "parts": shares(...)}``."""
    from mlflow_triton.local import TritonServer

    export_dir, body, installation, env = prepared_export(CASES[case_name], work_dir, "cpu", progress)
    models = [directory.name for directory in served_directories(export_dir)]
    path = f"/v2/models/{export_dir.name}/infer"
    log = work_dir / "tritonserver.log"
    with TritonServer(work_dir / "export", models, installation=installation, serving_env=env, log_path=log) as server:
        run_load(server.http_port, path, body, concurrency=clients, duration=2.0, work_dir=work_dir / "load")
        before, clients_before = process_tree(server.pid), _children_cpu()
        result = run_load(
            server.http_port, path, body, concurrency=clients, duration=duration, work_dir=work_dir / "load"
        )
        after, clients_cpu = process_tree(server.pid), _children_cpu() - clients_before
    if result.errors:
        raise AssertionError(f"the export answered with errors under load: {result.errors[:2]}")
    progress(f"[cpu] {case_name}: {result.rps:.1f} req/s from {clients} clients")
    return {
        "rps": result.rps,
        "requests": result.requests,
        "seconds": result.seconds,
        "parts": shares(before, after, models, clients_cpu, result.requests),
    }


def report(measured: dict, case_name: str, clients: int, info: dict, load_end: str, command: str) -> str:
    rows = [
        [part["part"], f"{part['cpu_s']:.2f}", f"{part['ms_per_request']:.3f}", f"{part['share']:.0%}"]
        for part in measured["parts"]
    ]
    total = sum(part["cpu_s"] for part in measured["parts"])
    return "\n".join(
        [
            f"## Where the CPU goes: the `--backend python` export of the {case_name} case, {clients} clients",
            "",
            f"Run: `{command}`. {measured['requests']} requests in {measured['seconds']:.1f} s "
            f"({measured['rps']:.1f} req/s); {total:.2f} CPU seconds in all, "
            f"{total / measured['requests'] * 1e3:.3f} ms per request.",
            "",
            _table(["part", "CPU s", "ms per request", "share"], rows),
            "",
            machine_line(info, load_end),
            "",
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cpu_share", description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), default="text")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of the measured load")
    parser.add_argument("--work-dir", type=Path, default=Path(".work") / "bench-cpu-share")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    info = machine()
    measured = measure(args.case, args.work_dir, clients=args.clients, duration=args.duration)
    command = " ".join(["python -m benchmarks.cpu_share", *argv])
    print(report(measured, args.case, args.clients, info, _loadavg(), command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
