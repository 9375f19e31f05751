"""onnxruntime's threads in a ``--backend python`` export, served: the export as written (``intra_op_thread_count:
"0"``, onnxruntime's default pool, its spinning off) against the same export on one thread (``"1"``) and with the
pool spinning between runs (onnxruntime's own default, and the generated ``model.py`` before it turned it off).

The case's unbatched package (``benchmarks.batching``'s ``text`` or ``embeddings`` case) is exported once with
``export_onnx(backend="python")``; each variant is a copy of that export with one setting changed (the network's
config parameter, or the one line of its ``1/model.py`` that turns spinning off). Each is served alone on the bundled
``tritonserver`` (the others stopped, so that they never share the CPUs), in rounds that alternate them; every cell
sends requests of one text from 1, 4 and 16 closed-loop clients. Before any load every variant answers the request
as the export as written does (within float32).

    .venv/bin/python -m benchmarks.export_threads [--case text|embeddings] [--duration S] [--rounds N]

Prints a markdown table (req/s, the ratios of the export as written to each variant, p50) and the machine's facts;
no result file (docs/export-onnx.md "Threads" quotes a run).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

from benchmarks.batching import CASES, answer_differences, prepared_export
from benchmarks.load import LoadResult, run_load
from benchmarks.run import _loadavg, _table, machine, machine_line
from benchmarks.served import _post, summarize
from mlflow_triton.export._config import THREADS_PARAMETER
from mlflow_triton.repository.config import read_model_config, write_config
from mlflow_triton.repository.guard import files_directory, served_directories

CLIENTS = (1, 4, 16)
SPINNING_OFF = 'options.add_session_config_entry("session.intra_op.allow_spinning", "0")'
#: variant -> (intra_op_thread_count, spinning between runs)
VARIANTS = {"written": ("0", False), "one thread": ("1", False), "spinning": ("0", True)}


def variant(export_root: Path, network: str, threads: str, spinning: bool, target: Path) -> Path:
    """A copy of ``export_root`` whose ``network`` runs on ``threads`` threads, its pool spinning or not."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(export_root, target)
    path = target / network / "config.pbtxt"
    config = read_model_config(path)
    if config.parameters[THREADS_PARAMETER].string_value != "0":
        raise AssertionError(f"{path} does not name {THREADS_PARAMETER} 0 (an export made before it?)")
    config.parameters[THREADS_PARAMETER].string_value = threads
    write_config(config, path)
    if spinning:
        model = target / network / "1" / "model.py"
        code = model.read_text()
        if SPINNING_OFF not in code:
            raise AssertionError(f"{model} does not turn spinning off with {SPINNING_OFF}")
        model.write_text(code.replace(SPINNING_OFF, SPINNING_OFF.replace('"0"', '"1"')))
    return target


def measure(case_name: str, work_dir: Path, *, duration: float, rounds: int, progress=print) -> list[dict]:
    """``[{"clients": n, <variant>: summary, ...}, ...]`` (``VARIANTS``) for the export of ``case_name``'s package."""
    from mlflow_triton.local import TritonServer

    case = CASES[case_name]
    export_dir, body, installation, env = prepared_export(case, work_dir, "threads", progress)
    network = files_directory(export_dir).name
    roots = {
        key: variant(work_dir / "export", network, threads, spinning, work_dir / key.replace(" ", "-"))
        for key, (threads, spinning) in VARIANTS.items()
    }
    names = [directory.name for directory in served_directories(export_dir)]
    path = f"/v2/models/{export_dir.name}/infer"
    runs = {(clients, key): [] for clients in CLIENTS for key in VARIANTS}
    answers = {}
    for number in range(rounds):
        for key, root in roots.items():
            log = work_dir / f"tritonserver-{root.name}.log"
            with TritonServer(root, names, installation=installation, serving_env=env, log_path=log) as server:
                answers.setdefault(key, _post(server.http_port, path, body))
                for clients in CLIENTS:
                    result = run_load(
                        server.http_port, path, body, concurrency=clients, duration=duration, work_dir=work_dir / "load"
                    )
                    runs[(clients, key)].append(result)
                    progress(
                        f"[threads] {case_name} clients={clients:<2} round {number + 1}/{rounds} {key:<10}: "
                        f"{result.rps:8.1f} req/s  p50 {result.percentile_ms(50):7.2f} ms"
                    )
    written = {output["name"]: _expected(output["data"]) for output in answers["written"]["outputs"]}
    for key, answer in answers.items():
        found = answer_differences(answer, written, case.export_tolerance)
        if found:
            raise AssertionError(f"the variant {key!r} answered otherwise than the export as written: {found}")
    return [
        {"clients": clients, **{key: summarize(LoadResult.pooled(runs[(clients, key)])) for key in VARIANTS}}
        for clients in CLIENTS
    ]


def _expected(data: list) -> np.ndarray:
    """A V2 JSON output's values as ``answer_differences`` expects them (texts as UTF-8 bytes)."""
    return np.asarray([value.encode("utf-8") if isinstance(value, str) else value for value in data], dtype=object)


def report(cells: list[dict], case_name: str, info: dict, load_end: str, command: str) -> str:
    others = [key for key in VARIANTS if key != "written"]

    def ratio(cell, key):
        return f"{cell['written']['rps'] / cell[key]['rps']:.2f}" if cell[key]["rps"] else "—"

    rows = [
        [
            cell["clients"],
            *(f"{cell[key]['rps']:.1f}" for key in VARIANTS),
            *(ratio(cell, key) for key in others),
            *(f"{cell[key]['p50_ms']:.1f}" for key in VARIANTS),
            sum(len(cell[key]["errors"]) for key in VARIANTS),
        ]
        for cell in cells
    ]
    header = [
        "clients",
        *(f"{key} req/s" for key in VARIANTS),
        *(f"written/{key}" for key in others),
        *(f"{key} p50 ms" for key in VARIANTS),
        "errors",
    ]
    described = "; ".join(
        f"**{key}**: {THREADS_PARAMETER} {threads}, spinning {'on' if spinning else 'off'}"
        for key, (threads, spinning) in VARIANTS.items()
    )
    return "\n".join(
        [
            f"## onnxruntime's threads in the `--backend python` export of the {case_name} case, one text per request",
            "",
            f"Run: `{command}`. {described}; each served alone, alternating.",
            "",
            _table(header, rows),
            "",
            machine_line(info, load_end),
            "",
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.export_threads", description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("text", "embeddings"), default="text")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per target, cell and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work-dir", type=Path, default=Path(".work") / "bench-export-threads")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    info = machine()
    cells = measure(args.case, args.work_dir, duration=args.duration, rounds=args.rounds)
    print(report(cells, args.case, info, _loadavg(), " ".join(["python -m benchmarks.export_threads", *argv])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
