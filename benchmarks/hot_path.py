"""Where a batched repository's time goes, in process: the runtime's ``execute`` and the zero-row guard's front,
before and after a change, measured in one run.

Two models are saved once with this checkout (``max_batch_size=4096``, guarded, and unbatched): a scikit-learn
Pipeline over mixed dtypes (float64, int64, bool and two text columns; ``predict_proba``) and the tiny BERT
text-classification pipeline of the batching benchmark. Each generated ``1/model.py`` (the batched model's and the
front's) is loaded twice with the fake ``triton_python_backend_utils`` (tests/support/fake_pb_utils.py): as
composed from this checkout's runtime, and as composed from the runtime at ``--baseline`` (a git ref, default
``main``: ``git show REF:runtime/...``), both initialized from the same config. Then, per execution:

* **batched**: ``execute`` of 1, 8 or 64 requests of 1 or 1,000 rows (texts: 1 or 8) each, the requests as Triton
  hands them to the batched model (its columns' ``reshape`` applied);
* **front**: the front's ``execute`` of one request, its BLS call answered at once by a stand-in (the front's own
  Python only: Triton's hop to the batched model is not in this process);
* **unbatched**: ``execute`` of one request by the unbatched repository's model.py (this checkout's runtime),
  for "batched >= 0.95 x unbatched at 1 client": the runtime's own time of front + batched at 1 request against
  its own.

Figures are medians of ``perf_counter_ns`` over many iterations, the variants alternating round by round, so
the ratios compare like with like on a shared machine. The breakdown (decode, DataFrame build, join, predict,
encode, split) comes from separate runs with a timer around each of those functions (exclusive times: a
DataFrame built inside ``_decode`` counts as DataFrame build; medians per stage). The runtime's own time is
everything but ``predict``: the model's prediction is the same work in both variants and varies with the
machine's load far more than the runtime's (the text model's torch runs on one thread here). Triton's own work
(shared memory, the BLS hop, HTTP) is not in these figures: they say what the runtime's Python costs, and what
it saved.

Run: ``python -m benchmarks.hot_path [--baseline main] [--seconds 0.3] [--rounds 3]
[--results benchmarks/hot-path-results.md]``.
"""

from __future__ import annotations

import argparse
import functools
import json
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


# -- model.py of the baseline ------------------------------------------------------------------------------------


def baseline_sources(ref: str, into: Path) -> tuple[str, str]:
    """(batched model.py, front model.py) composed from the runtime and contract at git ``ref``."""
    from mlflow_triton._model_py import HEADER, SOURCES
    from mlflow_triton.repository.guard import FRONT_HEADER, FRONT_SOURCES
    from mlflow_triton.repository.vendoring import vendored_source

    def compose(header: str, sources) -> str:
        parts = [header]
        for label, _ in sources:
            path = into / label
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(subprocess.check_output(["git", "show", f"{ref}:{label}"], cwd=ROOT, text=True))
            parts.append(vendored_source(label, path))
        return "\n\n".join(parts)

    return (
        compose(HEADER.format(runtime=ref, mapping="(baseline)"), SOURCES),
        compose(FRONT_HEADER.format(runtime=ref), FRONT_SOURCES),
    )


def load(directory: Path, model_py: str | None, name: str):
    """The initialized ``TritonPythonModel`` of ``directory`` (its ``1/model.py`` replaced by ``model_py``)."""
    from tests.support import fake_pb_utils

    if model_py is not None:
        copy = directory.with_name(f"{directory.name}-{name}")
        shutil.copytree(directory, copy, dirs_exist_ok=True)
        (copy / "1" / "model.py").write_text(model_py, encoding="utf-8")
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


def requests_for(codec, value_of, rows: int, count: int, reshape: bool):
    """``count`` fake requests of ``rows`` rows each (different values), encoded by ``codec``; ``reshape``: the
    columns as the front receives them, ``[rows, 1]``."""
    from tests.support import fake_pb_utils

    requests = []
    for seed in range(count):
        arrays = codec.to_tensors(value_of(rows, seed + 1))
        if reshape and codec.mapping.structure == "columns":
            arrays = {name: array.reshape(-1, 1) for name, array in arrays.items()}
        requests.append(fake_pb_utils.request_from_arrays(arrays))
    return requests


def run_case(case: str, work: Path, baseline: str, seconds: float, rounds: int, progress=print) -> list:
    from mlflow_triton.repository.guard import served_directories
    from tests.support import fake_pb_utils

    save, value_of = CASES[case]
    save(work / case / "batched", 4096)
    save(work / case / "unbatched", 0)
    front_dir, batched_dir = served_directories(work / case / "batched" / "model_repository" / case)
    old_batched_py, old_front_py = baseline_sources(baseline, work / "baseline-sources")
    batched = {"baseline": load(batched_dir, old_batched_py, f"{case}_old"), "current": load(batched_dir, None, case)}
    fronts = {
        "baseline": load(front_dir, old_front_py, f"{case}_front_old"),
        "current": load(front_dir, None, f"{case}_front"),
    }
    unbatched = load(work / case / "unbatched" / "model_repository" / case, None, f"{case}_unbatched")
    codec = batched["current"].inputs
    cells = []
    for rows in ROWS[case]:
        for count in REQUESTS:
            requests = requests_for(codec, value_of, rows, count, reshape=False)
            answers = {name: model.execute(requests) for name, model in batched.items()}
            _same_answers(answers["baseline"], answers["current"], f"{case} {count} x {rows}")
            medians = alternating(
                {name: functools.partial(model.execute, requests) for name, model in batched.items()}, seconds, rounds
            )
            stages = alternating_stages(
                {name: (model, functools.partial(model.execute, requests)) for name, model in batched.items()},
                seconds,
                rounds,
            )
            own = {name: stages[name].pop("own") for name in stages}
            cell = {"case": case, "target": "batched", "requests": count, "rows": rows, "us": medians}
            cell.update(stages=stages, own=own)
            cells.append(cell)
            progress(f"{case} batched {count} x {rows}: {_ratio_text(medians)}; runtime's own: {_ratio_text(own)}")
        # the front's own Python at one request, and front + batched against the unbatched model
        [front_request] = requests_for(codec, value_of, rows, 1, reshape=True)
        [request] = requests_for(codec, value_of, rows, 1, reshape=False)
        canned = fake_pb_utils.InferenceResponse(output_tensors=[])
        fake_pb_utils.MODELS[batched_dir.name] = lambda _request, answer=canned: answer
        front_us = alternating(
            {name: functools.partial(front.execute, [front_request]) for name, front in fronts.items()}, seconds, rounds
        )
        fake_pb_utils.MODELS.clear()
        cells.append({"case": case, "target": "front", "requests": 1, "rows": rows, "us": front_us})
        # the unbatched model's own time, in turn with the batched model's at one request
        one = alternating_stages(
            {
                "unbatched": (unbatched, functools.partial(unbatched.execute, [request])),
                "batched": (batched["current"], functools.partial(batched["current"].execute, [request])),
            },
            seconds,
            rounds,
        )
        own = {name: stages["own"] for name, stages in one.items()}
        cells.append({"case": case, "target": "unbatched", "requests": 1, "rows": rows, "own": own})
        progress(f"{case} front 1 x {rows}: {_ratio_text(front_us)}; runtime's own, unbatched and batched: {own}")
    return cells


def _same_answers(old, new, what):
    """The baseline and this checkout answer alike (the profile compares equal work)."""
    from tests.support import fake_pb_utils

    for before, after in zip(old, new):
        left, right = fake_pb_utils.outputs_of(before), fake_pb_utils.outputs_of(after)
        if left.keys() != right.keys() or any(not np.array_equal(left[k], right[k]) for k in left):
            raise AssertionError(f"{what}: the baseline and this checkout answer differently")


def _ratio_text(medians: dict) -> str:
    return f"baseline {medians['baseline']:.0f} µs, current {medians['current']:.0f} µs, {_speedup(medians)}"


def _speedup(medians: dict) -> str:
    return f"{medians['baseline'] / medians['current']:.2f}x"


def report(cells: list, baseline: str, command: str, machine: str) -> str:
    lines = [
        "## The batched hot path in process: where the time goes, before and after",
        "",
        f"Run: `{command}` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Baseline: the runtime at "
        f"`{baseline}`; current: this checkout. Fake `triton_python_backend_utils`, one process, medians of "
        "`perf_counter_ns`, variants alternating. µs per execution (per request in brackets). **Runtime's own**: "
        "everything `execute` does but the model's `predict` (the median of the stages below, predict left out); "
        "**with predict**: the whole `execute`, whose `predict` varies with the machine's load far more than the "
        "runtime's own work.",
        "",
        "### Per execution (batched model)",
        "",
        "| case | requests x rows | runtime's own, baseline µs | current µs | baseline/current | with predict, "
        "baseline µs | current µs | baseline/current |",
        "| ---- | --------------- | -------------------------- | ---------- | ---------------- | "
        "-------------------------- | ---------- | ---------------- |",
    ]
    for cell in (c for c in cells if c["target"] == "batched"):
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
    for cell in (c for c in cells if c["target"] == "batched"):
        old, new = cell["stages"]["baseline"], cell["stages"]["current"]
        row = [f"{old.get(s, 0):.0f} → {new.get(s, 0):.0f}" for s in STAGE_ORDER]
        lines.append(f"| {cell['case']} | {cell['requests']} x {cell['rows']} | " + " | ".join(row) + " |")
    lines += [
        "",
        "### One request at a time (1 client): the front, and front + batched against unbatched (runtime's own µs)",
        "",
        "| case | rows | front, baseline | front, current | batched, current | unbatched | "
        "unbatched / (front + batched) |",
        "| ---- | ---- | --------------- | -------------- | ---------------- | --------- | "
        "----------------------------- |",
    ]
    for front in (c for c in cells if c["target"] == "front"):
        key = (front["case"], front["rows"])
        [alone] = [c for c in cells if c["target"] == "unbatched" and (c["case"], c["rows"]) == key]
        guarded = front["us"]["current"] + alone["own"]["batched"]
        lines.append(
            f"| {front['case']} | {front['rows']} | {front['us']['baseline']:.1f} | {front['us']['current']:.1f} | "
            f"{alone['own']['batched']:.0f} | {alone['own']['unbatched']:.0f} | "
            f"{alone['own']['unbatched'] / guarded:.2f} |"
        )
    lines += ["", f"Machine: {machine}", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git ref of the runtime to compare with (default main)")
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
    text = report(cells, args.baseline, command.strip(), facts)
    print(text)
    if args.results:
        args.results.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(cells, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
