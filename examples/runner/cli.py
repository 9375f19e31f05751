"""The example runner: log each example model, then prove its repository on a real Triton server.

For every example named on the command line it logs the model to a local sqlite MLflow store
(with ``registered_model_name``) and hands the Registry URI to ``mlflow_triton.local``, which
does what ``mlflow-triton check`` does: fetch the repository, build or reuse the serving
environment, start ``tritonserver`` on free loopback ports, send the shipped request, compare
the answer with ``pyfunc.predict``, print one PASS/FAIL line per model and write a JSON report.
"""

import argparse
import importlib
import sys
import time
from pathlib import Path

import mlflow

from mlflow_triton.command_line import Progress, stop_on_sigterm
from mlflow_triton.local.check import validate_model, write_report
from mlflow_triton.local.installation import choose_installation

EXAMPLES = ("sklearn", "pytorch", "transformers")
#: Examples whose wrapper can log a KIND_GPU repository (mlflow_triton.sklearn is CPU-only).
GPU_EXAMPLES = ("pytorch", "transformers")
EXPERIMENT = "mlflow-triton-examples"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m examples.runner", description=__doc__.splitlines()[0])
    parser.add_argument(
        "examples",
        nargs="*",
        default=["sklearn"],
        choices=[*EXAMPLES, "all"],
        help="which examples to run (default: sklearn)",
    )
    parser.add_argument(
        "--work-dir",
        default=".work/runner",
        type=Path,
        help="MLflow store, served repository, logs and report (default: .work/runner)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        choices=("cpu", "gpu"),
        help="log with this device and validate a KIND_CPU/KIND_GPU repository "
        f"(gpu: {' and '.join(GPU_EXAMPLES)} only)",
    )
    parser.add_argument("--tritonserver", type=Path, help="use this tritonserver binary instead of the bundled 2.51")
    parser.add_argument("--backend-directory", type=Path, help="the backends folder of --tritonserver")
    parser.add_argument(
        "--serving-constraint",
        action="append",
        default=None,
        help="a pip constraint the chosen Triton imposes on the serving env (repeatable); "
        "default for the bundled 2.51: numpy<2",
    )
    parser.add_argument(
        "--python",
        metavar="X.Y|PATH",
        help="build the serving environment with this Python and run the stub of its X.Y "
        "(default: the Python running the runner)",
    )
    parser.add_argument("--report", type=Path, help="JSON report path (default: <work-dir>/report.json)")
    args = parser.parse_args(argv)
    if (args.tritonserver is None) != (args.backend_directory is None):
        parser.error("--tritonserver and --backend-directory go together")
    if "all" in args.examples:
        args.examples = list(EXAMPLES)
    cpu_only = [example for example in args.examples if example not in GPU_EXAMPLES]
    if args.device == "gpu" and cpu_only:
        parser.error(
            f"--device gpu: the {', '.join(cpu_only)} example cannot target a GPU (mlflow_triton.sklearn logs "
            f"KIND_CPU repositories only); run {' '.join(GPU_EXAMPLES)} with --device gpu"
        )
    return args


def use_local_store(work_dir):
    """A sqlite tracking store in ``work_dir`` whose artifacts also stay there (not in ./mlruns)."""
    tracking_uri = f"sqlite:///{(work_dir / 'mlflow.db').resolve()}"
    mlflow.set_tracking_uri(tracking_uri)
    if mlflow.get_experiment_by_name(EXPERIMENT) is None:
        mlflow.create_experiment(EXPERIMENT, artifact_location=(work_dir / "artifacts").resolve().as_uri())
    mlflow.set_experiment(EXPERIMENT)
    return tracking_uri


def log_example(example, work_dir, device):
    module = importlib.import_module(f"examples.{example}_example")
    tracking_uri = use_local_store(work_dir)
    options = {"device": device} if device != "cpu" else {}
    return module.log_example(tracking_uri, registered_model_name=f"runner-{example}", **options)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    work_dir = args.work_dir.resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    progress = Progress(print)
    with stop_on_sigterm():
        installation = choose_installation(
            args.tritonserver, args.backend_directory, args.serving_constraint, python=args.python, progress=progress
        )
        report_path = args.report or work_dir / "report.json"
        print(f"report: {report_path}", flush=True)
        reports = []
        for example in args.examples:
            started = time.monotonic()
            print(f"[{example}] logging the example model to {work_dir / 'mlflow.db'} ...", flush=True)
            info = log_example(example, work_dir, args.device)
            registry_uri = f"models:/runner-{example}/{info.registered_model_version}"
            report = validate_model(
                registry_uri,
                work_dir / example,
                installation,
                device=args.device,
                progress=progress.with_prefix(f"[{example}] "),
                name=example,
            )
            report.seconds["total"] = round(time.monotonic() - started, 1)
            if report.environment_note:
                print(report.environment_note, flush=True)
            if report.triton_log_tail and not report.passed:
                print(f"--- Triton log ({example}) ---\n{report.triton_log_tail}")
            reports.append(report)
            write_report(reports, report_path)
            print(report.line(), flush=True)
    return 0 if all(r.passed for r in reports) else 1
