"""Where a batched repository's time goes, in process: the runtime's ``execute``, before and after a change, and
against the unbatched model at one request, measured in one run.

Two models are saved once with this checkout (``max_batch_size=4096``, one model directory, and unbatched): a
scikit-learn Pipeline over mixed dtypes (float64, int64, bool and two text columns; ``predict_proba``) and the tiny
BERT text-classification pipeline of the batching benchmark. The batched model's ``1/model.py`` is loaded twice with
the fake ``triton_python_backend_utils`` (tests/support/fake_pb_utils.py): as composed from this checkout's runtime
with the config this checkout wrote, and as composed from the runtime at ``--baseline`` (a git ref, default
:data:`DEFAULT_BASELINE`: ``git show REF:runtime/...``, in that ref's order of sources) with the config as that
runtime wrote it (:func:`config_as_written`: before runtime 2.11 a rank-one input was reshaped to ``[]``). A
request is built as a client sends it and handed to each model as Triton's core applies that model's config
(``fake_pb_utils.as_handed``): ``[rows, 1]`` columns, whose column the runtime takes, since 2.11; ``[rows]``
before. Then, per execution:

* **batched**: ``execute`` of 1, 8 or 64 requests of 1 or 1,000 rows (texts: 1 or 8) each, baseline and current;
* **one request**: ``execute`` of one request by the batched model and by the unbatched repository's model (both
  this checkout's), for "a' >= 0.95 x a at 1 client": unbatched / batched is the runtime's share of that ratio.

Before runtime 2.11 a batched repository was served behind a zero-row guard's front (an unbatched model forwarding
through BLS); the baseline's figures are its batched model's alone, without the front's Python or Triton's hop.

Figures are medians of ``perf_counter_ns`` over many iterations, the variants alternating round by round, so
the ratios compare like with like on a shared machine. The breakdown (decode, DataFrame build, join, predict,
encode, split) comes from separate runs with a timer around each of those functions (exclusive times: a
DataFrame built inside ``_decode`` counts as DataFrame build; medians per stage). The runtime's own time is
everything but ``predict``: the model's prediction is the same work in both variants and varies with the
machine's load far more than the runtime's (the text model's torch runs on one thread here). Triton's own work
(the dynamic batcher, shared memory, HTTP) is not in these figures: they say what the runtime's Python costs.

Run: ``python -m benchmarks.hot_path [--baseline 4ceb783] [--seconds 0.3] [--rounds 3]
[--results benchmarks/hot-path-results.md]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REQUESTS = (1, 8, 64)
#: The landing before the zero-row guard's removal (#52): runtime 2.10.1, its batched model handed ``[rows]``.
DEFAULT_BASELINE = "4ceb783"
ROWS = {"tabular": (1, 1000), "text": (1, 8)}
# Exclusive timers: (stage, where the function lives: "model" = model.py's namespace, "class" = TritonPythonModel,
# name). A function a variant lacks is skipped.
STAGES = (
    ("decode", "class", "_decode"),
    ("join", "model", "join_inputs"),
    ("join", "model", "join_fields"),
    ("predict", "class", "_predict"),
    ("encode", "class", "_encode"),
    ("split", "model", "split_outputs"),
)
STAGE_ORDER = ("decode", "DataFrame build", "join", "pd.concat", "predict", "encode", "split", "rest")


# -- the models ------------------------------------------------------------------------------------------------


def mixed_frame(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cities = np.array(["Oslo", "Pune", "Lima", "Kyiv", "Accra", "Quito"])
    return pd.DataFrame(
        {
            "price": rng.normal(20.0, 5.0, rows),
            "visits": rng.integers(0, 50, rows),
            "member": rng.random(rows) < 0.4,
            "city": cities[rng.integers(0, len(cities), rows)],
            "channel": np.array(["web", "shop", "phone"])[rng.integers(0, 3, rows)],
        }
    )


def _save_tabular(path: Path, max_batch_size: int) -> None:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from mlflow_triton import sklearn as triton_sklearn

    frame = mixed_frame(300)
    label = ((frame["price"] > 20) ^ (frame["city"] == "Oslo")).astype(int)
    columns = ColumnTransformer(
        [
            ("numbers", StandardScaler(), ["price", "visits", "member"]),
            ("text", OneHotEncoder(handle_unknown="ignore"), ["city", "channel"]),
        ]
    )
    pipeline = Pipeline([("columns", columns), ("classifier", LogisticRegression(max_iter=500))]).fit(frame, label)
    triton_sklearn.save_model(
        pipeline,
        path,
        input_example=frame.iloc[:5],
        pyfunc_predict_fn="predict_proba",
        triton_model_name="tabular",
        max_batch_size=max_batch_size,
        serialization_format="cloudpickle",
    )


def _save_text(path: Path, max_batch_size: int) -> None:
    from benchmarks.batching import texts
    from mlflow_triton import transformers as triton_transformers
    from tests.support import tiny_models

    triton_transformers.save_model(
        tiny_models.shared_text_classification_pipeline(),
        path,
        input_example=texts(3, seed=0),
        triton_model_name="text",
        max_batch_size=max_batch_size,
    )


def _text_input(rows: int, seed: int):
    from benchmarks.batching import texts

    return texts(rows, seed=seed)


CASES = {
    "tabular": (_save_tabular, mixed_frame),
    "text": (_save_text, _text_input),
}


# -- the baseline's model.py and config ------------------------------------------------------------------------

#: The runtime version whose batched configs first reshaped each input to ``[1, *dims]`` (``repository.config``).
ROW_AXIS_RUNTIME = (2, 11)
_SOURCE_LABEL = re.compile(r'^\s*\("((?:shared_contract|runtime)/\w+\.py)"', re.MULTILINE)
_RUNTIME_VERSION = re.compile(r'^RUNTIME_VERSION = "([^"]+)"', re.MULTILINE)


def source_labels(model_py_composer: str) -> tuple[str, ...]:
    """The sources a ``logging_side/_model_py.py`` inlines, in its order (``SOURCES``' labels)."""
    return tuple(_SOURCE_LABEL.findall(model_py_composer))


def runtime_version(runtime_init: str) -> tuple[int, ...]:
    """``RUNTIME_VERSION`` of a ``runtime/__init__.py``, as numbers."""
    match = _RUNTIME_VERSION.search(runtime_init)
    if match is None:
        raise ValueError("runtime/__init__.py names no RUNTIME_VERSION")
    return tuple(int(part) for part in match.group(1).split("."))


def config_as_written(config, version: tuple[int, ...]):
    """This checkout's ``ModelConfig`` of a batched model as the runtime at ``version`` wrote it.

    From runtime 2.11 each input is reshaped to ``[1, *dims]`` (a rank-one column ``dims: [1]``, reshape ``[1]``:
    Triton hands ``[rows, 1]``); before, a rank-one input had ``reshape { shape: [] }`` (handed ``[rows]``) and
    the others none. Outputs, and everything else the runtime reads, are written alike by both."""
    from tritonclient.grpc import model_config_pb2

    written = model_config_pb2.ModelConfig()
    written.CopyFrom(config)
    if version >= ROW_AXIS_RUNTIME or written.max_batch_size <= 0:
        return written
    for entry in written.input:
        rank_one = entry.HasField("reshape") and len(entry.reshape.shape) == 1
        entry.ClearField("reshape")
        if rank_one:
            entry.reshape.SetInParent()
    return written


def git_show(ref: str, path: str) -> str:
    return subprocess.check_output(["git", "show", f"{ref}:{path}"], cwd=ROOT, text=True)


def baseline_model_py(ref: str, into: Path) -> tuple[str, tuple[int, ...]]:
    """(the batched ``model.py`` composed from the runtime and contract at git ``ref``, in that ref's order of
    sources, its runtime version)."""
    from mlflow_triton._model_py import HEADER
    from mlflow_triton.repository.vendoring import vendored_source

    version = runtime_version(git_show(ref, "runtime/__init__.py"))
    parts = [HEADER.format(runtime=".".join(map(str, version)), mapping="(baseline)")]
    for label in source_labels(git_show(ref, "logging_side/_model_py.py")):
        path = into / label
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(git_show(ref, label), encoding="utf-8")
        parts.append(vendored_source(label, path))
    return "\n\n".join(parts), version


def load(directory: Path, name: str, model_py: str | None = None, config=None):
    """The initialized ``TritonPythonModel`` of ``directory``, in a copy whose ``1/model.py`` is ``model_py`` and
    whose ``config.pbtxt`` is ``config`` (a ``ModelConfig``) where given."""
    from mlflow_triton.repository.config import write_config
    from tests.support import fake_pb_utils

    if model_py is not None or config is not None:
        copy = directory.with_name(f"{directory.name}-{name}")
        shutil.copytree(directory, copy, dirs_exist_ok=True)
        if model_py is not None:
            (copy / "1" / "model.py").write_text(model_py, encoding="utf-8")
        if config is not None:
            write_config(config, copy / "config.pbtxt")
        directory = copy
    return fake_pb_utils.initialized_model(directory, name=f"hot_path_{name}")


# -- timing ------------------------------------------------------------------------------------------------------


def median_ns(call, seconds: float) -> tuple[float, int]:
    """(median ns of ``call``, iterations) over about ``seconds``."""
    call()  # warm
    times = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(times) < 3:
        start = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times), len(times)


def alternating(calls: dict, seconds: float, rounds: int) -> dict:
    """``{variant: median µs}``, the variants measured in turn, ``rounds`` times, each round ``seconds``."""
    samples: dict = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(median_ns(call, seconds)[0] / 1e3)
    return {name: statistics.median(values) for name, values in samples.items()}


class StageTimers:
    """Exclusive wall time per stage while installed: a stage's nested stages are not counted in it."""

    def __init__(self, model_class, seconds: float):
        self.globals = model_class.execute.__globals__  # model.py's namespace (loaded outside sys.modules)
        self.model_class, self.seconds = model_class, seconds
        self.totals: dict = {}
        self.stack: list = []
        self.restore: list = []

    def _timed(self, stage, function, filter_caller=False):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            if filter_caller and sys._getframe(1).f_globals is not self.globals:
                return function(*args, **kwargs)
            self.stack.append(0)
            start = time.perf_counter_ns()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter_ns() - start
                nested = self.stack.pop()
                self.totals[stage] = self.totals.get(stage, 0) + elapsed - nested
                if self.stack:
                    self.stack[-1] += elapsed

        return timed

    def __enter__(self):
        for stage, where, name in STAGES:
            if where == "class" and name in vars(self.model_class):
                self.restore.append((self.model_class, name, vars(self.model_class)[name]))
                setattr(self.model_class, name, self._timed(stage, vars(self.model_class)[name]))
            elif where == "model" and name in self.globals:
                self.restore.append((self.globals, name, self.globals[name]))
                self.globals[name] = self._timed(stage, self.globals[name])
        # pandas' constructor and concat, counted where model.py calls them (MLflow and sklearn build frames too)
        self.restore.append((pd.DataFrame, "__init__", pd.DataFrame.__init__))
        pd.DataFrame.__init__ = self._timed("DataFrame build", pd.DataFrame.__init__, filter_caller=True)
        self.restore.append((pd, "concat", pd.concat))
        pd.concat = self._timed("pd.concat", pd.concat, filter_caller=True)
        return self

    def __exit__(self, *exc):
        for owner, name, value in reversed(self.restore):
            if isinstance(owner, dict):
                owner[name] = value
            else:
                setattr(owner, name, value)

    def measure(self, call) -> tuple[dict, float]:
        """(``{stage: median µs per call}``, median µs per call in all) over about ``seconds``."""
        call()
        calls = []
        deadline = time.perf_counter() + self.seconds
        while time.perf_counter() < deadline or len(calls) < 3:
            self.totals.clear()
            start = time.perf_counter_ns()
            call()
            total = time.perf_counter_ns() - start
            stages = {stage: self.totals.get(stage, 0) for stage in STAGE_ORDER if stage != "rest"}
            calls.append({**stages, "rest": total - sum(stages.values()), "all": total})
        medians = {stage: statistics.median(c[stage] for c in calls) / 1e3 for stage in calls[0]}
        return medians, medians.pop("all")


def breakdown(model, call, seconds: float) -> tuple[dict, float]:
    with StageTimers(type(model), seconds) as timers:
        return timers.measure(call)


def alternating_stages(calls: dict, seconds: float, rounds: int) -> dict:
    """``{variant: {stage: median µs}}`` of ``calls`` (``{variant: (model, call)}``), measured in turn, ``rounds``
    times; ``"own"``: everything but ``predict``."""
    runs: dict = {name: [] for name in calls}
    for _ in range(rounds):
        for name, (model, call) in calls.items():
            runs[name].append(breakdown(model, call, seconds)[0])
    result = {}
    for name, measured in runs.items():
        stages = {stage: statistics.median(run[stage] for run in measured) for stage in measured[0]}
        stages["own"] = sum(time for stage, time in stages.items() if stage != "predict")
        result[name] = stages
    return result


# -- the run -----------------------------------------------------------------------------------------------------


def requests_for(config, codec, value_of, rows: int, count: int) -> list:
    """``count`` fake requests of ``rows`` rows each (different values), as a client sends them to the model of
    ``config`` (a ``ModelConfig``) and as Triton's core hands them to it (``fake_pb_utils.as_handed``)."""
    from mlflow_triton.repository.config import as_model_config_json, wire_arrays
    from tests.support import fake_pb_utils

    as_json = as_model_config_json(config)
    return [
        fake_pb_utils.request_from_arrays(
            wire_arrays(config, "input", codec.to_tensors(value_of(rows, seed + 1))), model_config=as_json
        )
        for seed in range(count)
    ]


def read_config(directory: Path):
    from mlflow_triton.repository.config import read_model_config

    return read_model_config(directory / "config.pbtxt")


def run_case(case: str, work: Path, baseline: str, seconds: float, rounds: int, progress=print) -> list:
    save, value_of = CASES[case]
    save(work / case / "batched", 4096)
    save(work / case / "unbatched", 0)
    batched_dir = work / case / "batched" / "model_repository" / case
    unbatched_dir = work / case / "unbatched" / "model_repository" / case
    old_model_py, old_version = baseline_model_py(baseline, work / "baseline-sources")
    configs = {"current": read_config(batched_dir)}
    configs["baseline"] = config_as_written(configs["current"], old_version)
    batched = {
        "baseline": load(batched_dir, f"{case}_old", old_model_py, configs["baseline"]),
        "current": load(batched_dir, case),
    }
    unbatched, unbatched_config = load(unbatched_dir, f"{case}_unbatched"), read_config(unbatched_dir)
    codec = batched["current"].inputs
    cells = []
    for rows in ROWS[case]:
        for count in REQUESTS:
            requests = {name: requests_for(configs[name], codec, value_of, rows, count) for name in batched}
            calls = {name: functools.partial(model.execute, requests[name]) for name, model in batched.items()}
            _same_answers({name: call() for name, call in calls.items()}, f"{case} {count} x {rows}")
            cell = {"case": case, "target": "batched", "requests": count, "rows": rows}
            cell.update(_measured(batched, calls, seconds, rounds))
            cells.append(cell)
            progress(
                f"{case} batched {count} x {rows}: {_ratio_text(cell['us'])}; runtime's own: {_ratio_text(cell['own'])}"
            )
        # one request at a time (1 client): the batched model against the unbatched one, both this checkout's
        models = {"batched": batched["current"], "unbatched": unbatched}
        [one] = requests_for(configs["current"], codec, value_of, rows, 1)
        [alone] = requests_for(unbatched_config, unbatched.inputs, value_of, rows, 1)
        calls = {"batched": functools.partial(models["batched"].execute, [one])}
        calls["unbatched"] = functools.partial(unbatched.execute, [alone])
        _same_answers({name: call() for name, call in calls.items()}, f"{case} 1 x {rows}, batched and unbatched")
        cell = {"case": case, "target": "one request", "requests": 1, "rows": rows}
        cell.update(_measured(models, calls, seconds, rounds))
        cells.append(cell)
        progress(
            f"{case} 1 x {rows}, unbatched / batched: {one_client_share(cell['us']):.2f} with predict, "
            f"{one_client_share(cell['own']):.2f} runtime's own (batched {cell['own']['batched']:.0f} µs, "
            f"unbatched {cell['own']['unbatched']:.0f} µs)"
        )
    return cells


def _measured(models: dict, calls: dict, seconds: float, rounds: int) -> dict:
    """``{"us": {variant: µs with predict}, "stages": {variant: {stage: µs}}, "own": {variant: µs}}``."""
    medians = alternating(calls, seconds, rounds)
    stages = alternating_stages({name: (models[name], call) for name, call in calls.items()}, seconds, rounds)
    own = {name: stages[name].pop("own") for name in stages}
    return {"us": medians, "stages": stages, "own": own}


def one_client_share(medians: dict) -> float:
    """unbatched / batched time of one request: what the runtime leaves of "a' >= 0.95 x a at 1 client" (a one-client
    throughput is the reciprocal of a request's time)."""
    return medians["unbatched"] / medians["batched"]


def _same_answers(answers: dict, what: str) -> None:
    """Every variant answers as the first does (the profile compares equal work)."""
    from tests.support import fake_pb_utils

    [first, *others] = answers.values()
    for other in others:
        for before, after in zip(first, other, strict=True):
            left, right = fake_pb_utils.outputs_of(before), fake_pb_utils.outputs_of(after)
            if left.keys() != right.keys() or any(not np.array_equal(left[k], right[k]) for k in left):
                raise AssertionError(f"{what}: {' and '.join(answers)} answer differently")


def _ratio_text(medians: dict) -> str:
    return f"baseline {medians['baseline']:.0f} µs, current {medians['current']:.0f} µs, {_speedup(medians)}"


def _speedup(medians: dict) -> str:
    return f"{medians['baseline'] / medians['current']:.2f}x"


def report(cells: list, baseline: str, command: str, machine: str) -> str:
    """The markdown report of ``cells``; ``baseline``: the baseline's ref and runtime, as a reader should see them."""
    lines = [
        "## The batched hot path in process: where the time goes, baseline and this checkout",
        "",
        f"Run: `{command}` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Baseline: the runtime at "
        f"{baseline}; current: this checkout. Each batched model is handed a request's columns as its own config "
        "declares them (`fake_pb_utils.as_handed`): `[rows]` before runtime 2.11 (`reshape: []`), `[rows, 1]` since "
        "(the runtime takes the column). Before 2.11 a batched repository was served behind a zero-row guard's front, "
        "whose own Python (5-7 µs per request) and Triton's BLS hop to the batched model are not in the baseline's "
        "figures. Fake `triton_python_backend_utils`, one process, medians of `perf_counter_ns`, variants "
        "alternating. µs per execution (per request in brackets). **Runtime's own**: everything `execute` does but "
        "the model's `predict` (the median of the stages below, predict left out); **with predict**: the whole "
        "`execute`, whose `predict` varies with the machine's load far more than the runtime's own work.",
        "",
        "### Per execution (batched model)",
        "",
        "| case | requests x rows | runtime's own, baseline µs | current µs | baseline/current | with predict, "
        "baseline µs | current µs | baseline/current |",
        "| ---- | --------------- | -------------------------- | ---------- | ---------------- | "
        "-------------------------- | ---------- | ---------------- |",
    ]
    batched = [c for c in cells if c["target"] == "batched"]
    for cell in batched:
        us, own, n = cell["us"], cell["own"], cell["requests"]
        lines.append(
            f"| {cell['case']} | {n} x {cell['rows']} | {own['baseline']:.0f} ({own['baseline'] / n:.0f}) | "
            f"{own['current']:.0f} ({own['current'] / n:.0f}) | {_speedup(own)} | "
            f"{us['baseline']:.0f} ({us['baseline'] / n:.0f}) | {us['current']:.0f} ({us['current'] / n:.0f}) | "
            f"{_speedup(us)} |"
        )
    lines += [
        "",
        "### Where the time goes (exclusive µs per execution, medians: baseline → current)",
        "",
        "| case | requests x rows | " + " | ".join(STAGE_ORDER) + " |",
        "| ---- | --------------- | " + " | ".join("-" * len(s) for s in STAGE_ORDER) + " |",
    ]
    for cell in batched:
        old, new = cell["stages"]["baseline"], cell["stages"]["current"]
        row = [f"{old.get(s, 0):.0f} → {new.get(s, 0):.0f}" for s in STAGE_ORDER]
        lines.append(f"| {cell['case']} | {cell['requests']} x {cell['rows']} | " + " | ".join(row) + " |")
    lines += [
        "",
        "### One request at a time (1 client): the batched model against the unbatched one (this checkout, µs)",
        "",
        "unbatched / batched is the runtime's share of \"a' >= 0.95 x a at 1 client\" (a one-client throughput is "
        "the reciprocal of a request's time); Triton's own work (dynamic batcher, shared memory, HTTP) is not in it.",
        "",
        "| case | rows | runtime's own, batched | unbatched | unbatched / batched | with predict, batched | "
        "unbatched | unbatched / batched |",
        "| ---- | ---- | ---------------------- | --------- | ------------------- | --------------------- | "
        "--------- | ------------------- |",
    ]
    for cell in (c for c in cells if c["target"] == "one request"):
        own, us = cell["own"], cell["us"]
        lines.append(
            f"| {cell['case']} | {cell['rows']} | {own['batched']:.0f} | {own['unbatched']:.0f} | "
            f"{one_client_share(own):.2f} | {us['batched']:.0f} | {us['unbatched']:.0f} | {one_client_share(us):.2f} |"
        )
    lines += ["", f"Machine: {machine}", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument(
        "--baseline",
        default=DEFAULT_BASELINE,
        help=f"git ref of the runtime to compare with (default {DEFAULT_BASELINE})",
    )
    parser.add_argument("--seconds", type=float, default=0.3, help="seconds per variant, cell and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=sorted(CASES))
    parser.add_argument("--results", type=Path, help="write the markdown report here too")
    parser.add_argument("--json", type=Path, help="write all figures here")
    args = parser.parse_args(argv)
    import torch

    from benchmarks.run import _loadavg, machine

    torch.set_num_threads(1)  # the text model's predict on one thread: steadier beside other work on the machine
    command = "python -m benchmarks.hot_path " + " ".join(argv if argv is not None else sys.argv[1:])
    info, load_start = machine(), _loadavg()
    with tempfile.TemporaryDirectory() as temporary:
        cells = []
        for case in args.cases:
            cells += run_case(case, Path(temporary), args.baseline, args.seconds, args.rounds)
    facts = (
        f"{info['nproc']} CPU(s), {info['cpu']}; {info['os']}; Python {info['python']}; load average at start "
        f"{load_start}, at end {_loadavg()} (other sessions share these CPUs)."
    )
    version = ".".join(map(str, runtime_version(git_show(args.baseline, "runtime/__init__.py"))))
    text = report(cells, f"`{args.baseline}` (runtime {version})", command.strip(), facts)
    print(text)
    if args.results:
        args.results.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(cells, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
