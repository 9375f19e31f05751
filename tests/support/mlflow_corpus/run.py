"""``make corpus``: MLflow's flavor-test cases logged with the wrapper and proven with ``mlflow-triton check``.

    python -m tests.support.mlflow_corpus.run [--cases ID,ID | --sample] [--work-dir DIR] [--report DIR]
                                              [--page docs/mlflow-corpus.md] [--list] [--protocol mlflow]

For each case (all by default): build the model, log it with ``mlflow_triton.<flavor>.log_model`` into a sqlite
tracking store of this run (``<work dir>/mlflow.db``). A refused case is logged again with plain
``mlflow.<flavor>.log_model`` and its ``serving_input_example.json`` is sent to MLflow's own scoring server app
(what ``mlflow models serve`` runs), in process. Then the logged models are proven by the real command line,
``mlflow-triton check URI... --tracking-uri sqlite:///<work dir>/mlflow.db --report ...`` (one run for all of them:
one Triton per model, each serving environment built or found once in the shared cache). Writes ``report.json``
and ``report.md`` into ``--report`` (default: the work directory, ``.work/corpus/<UTC time>``) and, with ``--page``,
the Markdown page there too. Exit status 1 when a logged case FAILed or was not checked.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from .both_servers import compare_sample
from .case import Case
from .outcomes import Outcome, apply_check_report, counts, first_line, headline, markdown, mlflow_serve_summary

#: A case add_repository brings in as MLflow's serving protocol (the signature MLflow inferred from predict, a
#: predict_proba model): its serving environment is the one tests/e2e/test_mlflow_protocol_triton.py builds.
SAMPLE_PROTOCOL = "sklearn-gaussian-nb-predict-proba-add"
#: One fast case per flavor of CI's environment, and one of MLflow's serving protocol: the sample CI runs
#: (tests/e2e/test_mlflow_corpus_sample.py).
SAMPLE = (
    "sklearn-logreg-log",
    "pytorch-sequential-log",
    "transformers-classifier-list",
    "xgboost-booster-save-load",
    "lightgbm-booster-save-load",
    "catboost-regressor-save-load",
    "statsmodels-ols-save-load",
    "sentence_transformers-serve-one-sentence",
    "pyfunc-class-artifacts-knn-add",
    SAMPLE_PROTOCOL,
)
ADDED_NOTE = "logged with plain MLflow, brought in with add_repository"
CHECK_TIMEOUT_S = 3600
PROGRESS_BAR = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
#: The environment ``make corpus`` runs in: .venv's packages plus the heavy flavors (requirements.txt, Makefile).
CORPUS_VENV = ".venv-corpus"


def all_cases() -> tuple[Case, ...]:
    from . import (
        cases_catboost,
        cases_interfaces,
        cases_keras,
        cases_lightgbm,
        cases_nested,
        cases_onnx,
        cases_pmdarima,
        cases_prophet,
        cases_pyfunc,
        cases_pytorch,
        cases_sentence_transformers,
        cases_sklearn,
        cases_spacy,
        cases_statsmodels,
        cases_transformers,
        cases_xgboost,
    )

    return (
        *cases_sklearn.CASES,
        *cases_pytorch.CASES,
        *cases_transformers.CASES,
        *cases_xgboost.CASES,
        *cases_lightgbm.CASES,
        *cases_catboost.CASES,
        *cases_statsmodels.CASES,
        *cases_sentence_transformers.CASES,
        *cases_onnx.CASES,
        *cases_keras.CASES,
        *cases_spacy.CASES,
        *cases_pmdarima.CASES,
        *cases_prophet.CASES,
        *cases_pyfunc.CASES,
        *cases_nested.CASES,
        *cases_interfaces.CASES,
    )


def select(cases: Sequence[Case], ids: Sequence[str]) -> list[Case]:
    """The cases named by ``ids``, in the order given; an unknown id is an error that lists the known ones."""
    by_id = {case.id: case for case in cases}
    unknown = [case_id for case_id in ids if case_id not in by_id]
    if unknown:
        raise SystemExit(f"unknown case id(s) {unknown}; known: {', '.join(sorted(by_id))}")
    return [by_id[case_id] for case_id in ids]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.mlflow_corpus.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--cases", help="comma-separated case ids (default: all)")
    parser.add_argument("--sample", action="store_true", help=f"only the CI sample: {', '.join(SAMPLE)}")
    parser.add_argument("--list", action="store_true", help="list the cases and their MLflow tests, then exit")
    parser.add_argument("--work-dir", type=Path, help="default: .work/corpus/<UTC time>")
    parser.add_argument("--report", type=Path, help="folder for report.json and report.md (default: the work dir)")
    parser.add_argument(
        "--page", type=Path, help="also write the Markdown page here (make corpus: docs/mlflow-corpus.md)"
    )
    parser.add_argument("--rewrite", type=Path, metavar="REPORT", help="only write --page again from a report.json")
    parser.add_argument(
        "--protocol",
        choices=("tensors", "mlflow"),
        help="add_repository's protocol for the add-repository cases (default: its own choice)",
    )
    args = parser.parse_args(argv)
    if args.rewrite is not None:
        document = json.loads(args.rewrite.read_text(encoding="utf-8"))
        outcomes = [Outcome.from_dict(entry) for entry in document["cases"]]
        write_reports(outcomes, document["meta"], args.rewrite.parent, args.page)
        return 0
    cases = all_cases()
    if args.list:
        for case in cases:
            print(f"{case.id:50} {case.mlflow_test}")
        return 0
    if args.sample:
        cases = tuple(select(cases, SAMPLE))
    elif args.cases:
        cases = tuple(select(cases, [part.strip() for part in args.cases.split(",") if part.strip()]))
    stamp = datetime.datetime.now(datetime.timezone.utc)
    work_dir = (args.work_dir or Path(".work") / "corpus" / stamp.strftime("%Y%m%dT%H%M%SZ")).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    report_dir = (args.report or work_dir).resolve()
    report_dir.mkdir(parents=True, exist_ok=True)
    print(f"corpus: {len(cases)} case(s); work dir {work_dir}", flush=True)
    started = time.monotonic()
    outcomes, meta = run_cases(cases, work_dir, args.protocol)
    meta.update(date=stamp.strftime("%Y-%m-%d %H:%M UTC"), wall_min=round((time.monotonic() - started) / 60, 1))
    write_reports(outcomes, meta, report_dir, args.page)
    numbers = counts(outcomes)
    print(f"corpus: {headline(numbers)}; report {report_dir / 'report.md'}", flush=True)
    return 1 if numbers["FAIL"] or numbers["not checked"] else 0


def run_cases(
    cases: Sequence[Case], work_dir: Path, protocol: str | None = None
) -> tuple[list[Outcome], dict[str, Any]]:
    """Log every case (wrapper, else plain MLflow + scoring server), then check the logged ones per flavor;
    ``protocol`` goes to ``add_repository`` (``None``: its own choice)."""
    from tests.support.environment import preserved_environment
    from tests.support.mlflow_server import using_tracking
    from tests.support.tiny_models import sqlite_tracking  # sets HF_HUB_OFFLINE before transformers is imported

    from .cases_keras import KERAS_BACKEND

    outcomes = [Outcome(case.id, case.flavor, case.mlflow_test, _note(case)) for case in cases]
    variable, backend = KERAS_BACKEND
    with preserved_environment((variable,)):
        os.environ.setdefault(variable, backend)  # Keras 3 on torch, here and in the check's Triton (cases_keras)
        with sqlite_tracking(work_dir), preserved_environment((PROGRESS_BAR,)):
            os.environ[PROGRESS_BAR] = "false"
            import mlflow

            tracking_uri = mlflow.get_tracking_uri()
            for number, (case, outcome) in enumerate(zip(cases, outcomes), start=1):
                log_case(case, outcome, work_dir / "mlflow-serve" / case.id, protocol)
                print(
                    f"[{number}/{len(cases)}] {case.id}: "
                    f"{outcome.verdict if outcome.model_uri is None else 'logged'}"
                    f" {first_line(outcome.build_error or outcome.refusal, 160)}",
                    flush=True,
                )
        logged = [outcome for outcome in outcomes if outcome.model_uri]
        report = check(logged, tracking_uri, work_dir / "check") if logged else []
        apply_check_report(logged, report)
        with using_tracking(tracking_uri):
            compare_sample(logged, work_dir / "both-servers")
    triton_versions = {entry.get("triton_version") for entry in report if entry.get("triton_version")}
    return outcomes, {"versions": _versions(), "triton_version": ", ".join(sorted(triton_versions)) or "?"}


def _note(case: Case) -> str:
    if case.route != "add-repository":
        return case.note
    return f"{case.note}; {ADDED_NOTE}" if case.note else ADDED_NOTE


def _log_plain(case: Case, built: Any) -> Any:
    """``mlflow.<flavor>.log_model`` as the case's MLflow test calls it (a PythonModel goes in ``python_model=``)."""
    module = importlib.import_module(f"mlflow.{case.flavor}")
    if case.flavor == "pyfunc":
        return module.log_model(name="model", python_model=built.model, **dict(built.log_kwargs))
    return module.log_model(built.model, name="model", **dict(built.log_kwargs))


def _log(case: Case, built: Any, protocol: str | None = None) -> Any:
    """The case's route to a Triton repository: its wrapper, or plain MLflow then ``add_repository``."""
    if case.route == "add-repository":
        import mlflow_triton

        options = dict(built.add_kwargs) | ({"protocol": protocol} if protocol else {})
        return mlflow_triton.add_repository(_log_plain(case, built).model_uri, **options)
    return importlib.import_module(f"mlflow_triton.{case.flavor}").log_model(
        built.model, name="model", **dict(built.log_kwargs)
    )


def log_case(case: Case, outcome: Outcome, serve_dir: Path, protocol: str | None = None) -> None:
    """Build and log ``case`` by its route; on a refusal, try plain MLflow and its scoring server."""
    from mlflow_triton.errors import CustomCodeWarning
    from mlflow_triton.shared_contract import MlflowTritonError

    clock = time.monotonic()
    try:
        built = case.build()
    except Exception as error:  # the library no longer has the task, or the model cannot be made here
        outcome.build_error = f"{type(error).__name__}: {error}"
        if isinstance(error, ModuleNotFoundError):  # a flavor of the corpus' own environment, not installed here
            outcome.build_error += f" (`make corpus` runs in {CORPUS_VENV}, which installs it)"
        return
    outcome.seconds["build"] = round(time.monotonic() - clock, 1)
    clock = time.monotonic()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CustomCodeWarning)
            info = _log(case, built, protocol)
        outcome.model_uri = info.model_uri
        outcome.warnings = [str(w.message) for w in caught if issubclass(w.category, CustomCodeWarning)]
    except Exception as error:  # a refusal, recorded with its message
        outcome.refusal = str(error) if isinstance(error, MlflowTritonError) else f"{type(error).__name__}: {error}"
    outcome.seconds["log"] = round(time.monotonic() - clock, 1)
    if outcome.refusal is not None:
        clock = time.monotonic()
        outcome.mlflow_serve = mlflow_serve(case, serve_dir)
        outcome.seconds["mlflow_serve"] = round(time.monotonic() - clock, 1)


def mlflow_serve(case: Case, serve_dir: Path) -> dict[str, Any]:
    """Log a fresh build of ``case`` with plain MLflow, send its serving example to MLflow's scoring server app."""
    import mlflow
    from mlflow.pyfunc import scoring_server

    built = case.build()
    try:
        with _without_absent_torchvision(case.flavor):
            info = _log_plain(case, built)
    except Exception as error:  # MLflow refuses it too
        return mlflow_serve_summary(f"{type(error).__name__}: {error}", None)
    try:
        local = Path(mlflow.artifacts.download_artifacts(info.model_uri, dst_path=str(serve_dir)))
        example = local / "serving_input_example.json"
        if not example.is_file():
            return mlflow_serve_summary(None, None, "MLflow saved no serving_input_example.json")
        model = mlflow.pyfunc.load_model(str(local))
        from fastapi.testclient import TestClient

        from tests.support.environment import preserved_environment

        # init marks the process as a serving one for good: every later case of this run would be logged under it
        with preserved_environment(("_MLFLOW_IS_IN_SERVING_ENVIRONMENT",)):
            response = TestClient(scoring_server.init(model)).post(
                "/invocations", content=example.read_bytes(), headers={"Content-Type": "application/json"}
            )
    except Exception as error:  # no pyfunc flavor, or the model does not load: MLflow cannot serve it either
        return mlflow_serve_summary(None, None, f"{type(error).__name__}: {error}")
    return mlflow_serve_summary(None, response.status_code, response.text)


def _without_absent_torchvision(flavor: str) -> contextlib.AbstractContextManager[object]:
    """MLflow 3.17's Transformers flavor pins torchvision for every PyTorch pipeline and fails where it is absent.

    That is this machine, not the model: the retry then pins what is installed, as the wrapper does
    (``mlflow_triton.transformers._default_requirements``), so the row says what MLflow does with the model.
    """
    if flavor != "transformers" or importlib.util.find_spec("torchvision") is not None:
        return contextlib.nullcontext()
    import mlflow.transformers

    from mlflow_triton.transformers import _default_requirements

    original = mlflow.transformers.get_default_pip_requirements

    def installed_requirements(model: Any) -> list[str]:
        with mock.patch.object(mlflow.transformers, "get_default_pip_requirements", original):
            return _default_requirements(model)

    return mock.patch.object(mlflow.transformers, "get_default_pip_requirements", installed_requirements)


def check(outcomes: Sequence[Outcome], tracking_uri: str, work_dir: Path) -> list[dict[str, Any]]:
    """``mlflow-triton check`` (this interpreter's console script) on the outcomes' model URIs; its JSON report."""
    command = Path(sys.executable).with_name("mlflow-triton")
    report = work_dir / "report.json"
    uris = [outcome.model_uri for outcome in outcomes if outcome.model_uri]
    arguments = [str(command), "check", *uris, "--tracking-uri", tracking_uri, "--work-dir", str(work_dir)]
    print(f"corpus: mlflow-triton check of {len(uris)} model(s) (log: {work_dir / 'check.log'})", flush=True)
    work_dir.mkdir(parents=True, exist_ok=True)
    with open(work_dir / "check.log", "w", encoding="utf-8") as log:
        completed = subprocess.run(
            [*arguments, "--report", str(report)], stdout=log, stderr=subprocess.STDOUT, timeout=CHECK_TIMEOUT_S
        )
    for line in (work_dir / "check.log").read_text(encoding="utf-8").splitlines():
        if line.startswith(("PASS ", "FAIL ")):
            print(f"  {line[:300]}", flush=True)
    if not report.is_file():
        print(f"corpus: check exited {completed.returncode} without a report (see {work_dir / 'check.log'})")
        return []
    return json.loads(report.read_text(encoding="utf-8"))


def write_reports(outcomes: Sequence[Outcome], meta: dict[str, Any], report_dir: Path, page: Path | None) -> None:
    document = {"meta": meta, "counts": counts(outcomes), "cases": [outcome.to_dict() for outcome in outcomes]}
    (report_dir / "report.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    text = markdown(outcomes, meta) + "\n"
    (report_dir / "report.md").write_text(text, encoding="utf-8")
    if page is not None:
        page.write_text(text, encoding="utf-8")


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    names = ("mlflow", "scikit-learn", "torch", "transformers")
    #: the libraries of the cases logged with plain MLflow, where installed (the wrappers' flavors need the above)
    optional = (
        "xgboost",
        "lightgbm",
        "catboost",
        "statsmodels",
        "sentence-transformers",
        "onnx",
        "onnxruntime",
        "skl2onnx",
        "keras",
        "spacy",
        "prophet",
        "pmdarima",
    )
    versions = {"Python": platform.python_version(), **{name: version(name) for name in names}}
    for name in optional:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            continue
    return versions


if __name__ == "__main__":
    sys.exit(main())
