"""Logging cost of a ~200 MB PyTorch module: wall time, peak disk and peak RSS.

Every measurement runs in a fresh interpreter (``python -m benchmarks.logging_cost --child MODE``)
with ``TMPDIR`` pointing into its own empty directory. Peak disk is the peak, over the call, of the
total size of the files under that ``TMPDIR`` (temporary workspaces), the destination directory
(save_model, and the staging sibling it builds in) and the artifact store (log_model), minus
what was there before; the sqlite tracking database is metadata and not counted. It is sampled
every 10 ms and, exactly, just before every deletion (see :class:`DiskSampler`). Peak RSS is the
kernel's ``VmHWM`` of the process, reset just before the call (``/proc/self/clear_refs``), so that
it covers the call only (model creation excluded).

Before the measured call, each process makes the same call once with a tiny model, so one-time
costs of a fresh interpreter (lazy imports; MLflow's scan of all installed distributions for
its requirement-mismatch warning, 1-2 s) are paid alike by every mode and not counted.

The model is an eval-mode ``nn.Sequential`` of four square ``Linear`` layers sized to
``size_mb`` of float32 weights; the input example is two rows.

Modes (run alternately, ``repeats`` times each; medians reported):

* ``native_copy`` -- ``mlflow.pytorch.save_model`` followed by one ``shutil.copytree`` of the
  result: the baseline "native + one copy";
* ``triton_save`` -- ``mlflow_triton.pytorch.save_model`` (native package + the repository whose
  ``1/artifact`` is the serving copy);
* ``native_log`` / ``triton_log`` -- ``mlflow.pytorch.log_model`` / ``mlflow_triton.pytorch.log_model``
  into a local sqlite + file artifact store (both stage the package in a temporary directory and
  copy it into the artifact store: MLflow's own upload).

Native calls get the same options the wrapper records (``serialization_format="pickle"``,
``pip_requirements`` = MLflow's defaults for the flavor) and no input example, so that MLflow
neither infers requirements nor reloads the 200 MB model in a subprocess to do so.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

MODES = ("native_copy", "triton_save", "native_log", "triton_log")
SAMPLE_INTERVAL_S = 0.01
CHILD_TIMEOUT_S = 900
# Peak disk of save_model may exceed native + one copy by the repository's small files only.
DISK_SLACK_BYTES = 2 * 1024 * 1024


# ----------------------------------------------------------------------------- parent side


def measure(work_dir: Path, *, size_mb: float = 200.0, repeats: int = 2, progress=print) -> dict:
    work_dir = Path(work_dir)
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for r in range(repeats):
        for mode in MODES:
            result = _run_child(mode, work_dir / mode, size_mb)
            runs[mode].append(result)
            progress(
                f"[logging] {mode:<12} run {r + 1}/{repeats}: {result['wall_s']:6.2f} s, "
                f"peak disk {result['peak_disk_bytes'] / 1e6:7.1f} MB, "
                f"peak RSS +{(result['rss_peak_bytes'] - result['rss_before_bytes']) / 1e6:6.1f} MB"
            )
    summary = {mode: _median_run(results) for mode, results in runs.items()}
    return {"size_mb": size_mb, "repeats": repeats, "modes": summary, "checks": _checks(summary)}


def _run_child(mode: str, directory: Path, size_mb: float) -> dict:
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "tmp").mkdir(parents=True)
    env = dict(os.environ, TMPDIR=str(directory / "tmp"), PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.logging_cost",
                "--child",
                mode,
                "--dir",
                str(directory),
                "--size-mb",
                str(size_mb),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=CHILD_TIMEOUT_S,
            cwd=Path(__file__).resolve().parent.parent,
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"logging-cost child {mode} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median_run(results: list[dict]) -> dict:
    keys = [k for k, v in results[0].items() if isinstance(v, (int, float))]
    return {k: float(np.median([r[k] for r in results])) for k in keys}


def _checks(summary: dict) -> dict:
    native = summary["native_copy"]["native_bytes"]
    save = summary["triton_save"]
    log_native, log_triton = summary["native_log"], summary["triton_log"]
    return {
        "native_bytes": native,
        "save_wall_ratio": save["wall_s"] / summary["native_copy"]["wall_s"],
        "save_wall_vs_native_only": save["wall_s"] / summary["native_copy"]["save_s"],
        "save_peak_disk_ratio": save["peak_disk_bytes"] / native,
        "save_peak_disk_met": save["peak_disk_bytes"] <= 2 * native + DISK_SLACK_BYTES,
        "save_final_disk_ratio": save["final_disk_bytes"] / native,
        "log_wall_ratio": log_triton["wall_s"] / log_native["wall_s"],
        "log_peak_disk_ratio": log_triton["peak_disk_bytes"] / log_native["peak_disk_bytes"],
        "log_peak_disk_met": log_triton["peak_disk_bytes"] <= 2 * log_native["peak_disk_bytes"] + 2 * DISK_SLACK_BYTES,
        "save_rss_delta_bytes": save["rss_peak_bytes"] - save["rss_before_bytes"],
        "native_rss_delta_bytes": summary["native_copy"]["rss_peak_bytes"] - summary["native_copy"]["rss_before_bytes"],
    }


# ----------------------------------------------------------------------------- child side


class DiskSampler:
    """Peak of the sum of file sizes under ``roots`` (hard links counted once).

    Sampled every ``interval`` seconds in a thread and, exactly, just before every deletion:
    while active, ``shutil.rmtree``, ``os.remove`` and ``os.unlink`` are wrapped (in this
    benchmark process only) to take a sample first. Between deletions the tree only grows, so
    the sample before each deletion plus the one at the end give the true peak, however fast a
    copy was.
    """

    def __init__(self, roots: list[Path], interval: float = SAMPLE_INTERVAL_S):
        self.roots = [str(r) for r in roots]
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def size(self) -> int:
        seen, total, stack = set(), 0, list(self.roots)
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:  # removed while we looked
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        if (st.st_dev, st.st_ino) not in seen:
                            seen.add((st.st_dev, st.st_ino))
                            total += st.st_size
                except OSError:
                    continue
        return total

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self):
        self.peak = max(self.peak, self.size())

    def _wrap(self, function):
        def before_deleting(*args, **kwargs):
            if not self._deleting:  # rmtree calls os.unlink for each file: one sample is enough
                self.sample()
            self._deleting += 1
            try:
                return function(*args, **kwargs)
            finally:
                self._deleting -= 1

        return before_deleting

    def __enter__(self):
        self.peak = self.size()
        self._deleting = 0
        self._originals = {(shutil, "rmtree"): shutil.rmtree, (os, "remove"): os.remove, (os, "unlink"): os.unlink}
        for (module, name), function in self._originals.items():
            setattr(module, name, self._wrap(function))
        self._thread.start()
        return self

    def __exit__(self, *exc):
        for (module, name), function in self._originals.items():
            setattr(module, name, function)
        self._stop.set()
        self._thread.join()
        self.sample()


def _rss_bytes(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def build_model(size_mb: float):
    import torch

    torch.manual_seed(0)
    width = max(2, int(round((size_mb * 1e6 / 4 / 4) ** 0.5)))  # four width x width float32 layers
    layers = []
    for i in range(4):
        layers.append(torch.nn.Linear(width, width))
        if i < 3:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).eval()
    example = np.random.default_rng(0).normal(size=(2, width)).astype(np.float32)
    return model, example


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file() and not p.is_symlink())


def _call(mode: str, model, example, dest: Path, native_options: dict, timings: dict) -> None:
    import mlflow.pytorch

    import mlflow_triton.pytorch as triton_pytorch

    started = time.perf_counter()
    if mode == "native_copy":
        mlflow.pytorch.save_model(model, str(dest / "native"), **native_options)
        timings["save_s"] = time.perf_counter() - started
        shutil.copytree(dest / "native", dest / "copy")
    elif mode == "triton_save":
        triton_pytorch.save_model(model, dest / "model", input_example=example)
    elif mode == "native_log":
        mlflow.pytorch.log_model(model, name="model", **native_options)
    elif mode == "triton_log":
        triton_pytorch.log_model(model, name="model", input_example=example)


def _child(mode: str, directory: Path, size_mb: float) -> dict:
    import mlflow
    import mlflow.pytorch

    if mode.endswith("_log"):
        store = directory / "store"
        store.mkdir()
        mlflow.set_tracking_uri(f"sqlite:///{store / 'mlflow.db'}")
        experiment = mlflow.create_experiment("bench", artifact_location=(store / "artifacts").as_uri())
        mlflow.set_experiment(experiment_id=experiment)
    native_options = {
        "serialization_format": "pickle",
        "pip_requirements": mlflow.pytorch.get_default_pip_requirements(),
    }

    # One call with a tiny model first: one-time costs of a fresh process (lazy imports, MLflow's
    # scan of the installed distributions for its requirement-mismatch warning) are paid here,
    # by every mode alike, and not counted.
    tiny, tiny_example = build_model(0.0001)
    warm = directory / "warm-up"
    warm.mkdir()
    _call(mode, tiny, tiny_example, warm, native_options, {})
    shutil.rmtree(warm)

    model, example = build_model(size_mb)
    dest = directory / "dest"
    dest.mkdir()
    timings = {}
    os.sync()  # earlier runs' dirty pages must not throttle this call's writes
    rss_before = _rss_bytes("VmRSS")
    peak_reset = _reset_peak_rss()
    # The tracking database (sqlite, with its journal) is metadata, not model bytes: not sampled.
    sampler = DiskSampler([directory / "tmp", dest, directory / "store" / "artifacts"])
    with sampler:
        baseline = sampler.peak
        started = time.perf_counter()
        _call(mode, model, example, dest, native_options, timings)
        wall = time.perf_counter() - started
    final = sampler.size()
    rss_peak = _rss_bytes("VmHWM") if peak_reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = {
        "mode": mode,
        "wall_s": wall,
        **timings,
        "peak_disk_bytes": sampler.peak - baseline,
        "final_disk_bytes": final - baseline,
        "rss_before_bytes": rss_before,
        "rss_peak_bytes": rss_peak,
        "rss_peak_covers_call_only": peak_reset,
        "model_param_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
    }
    if mode == "native_copy":
        result["native_bytes"] = _tree_bytes(dest / "native")
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.logging_cost", description="one logging-cost measurement (used by benchmarks.run)"
    )
    parser.add_argument("--child", choices=MODES, required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--size-mb", type=float, default=200.0)
    args = parser.parse_args(argv)
    result = _child(args.child, args.dir, args.size_mb)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
