"""Where the serving environment, the one ``pyfunc.predict`` answers in and the one the example was logged in differ,
among the distributions that decide the answers.

``check`` compares Triton with ``pyfunc.predict`` run here; the serving environment is built from the repository's
``requirements.txt`` under the Triton installation's constraints; validation.json's ``predicted_with`` records the
logging environment. Where they install other versions of what decides the answers (numpy, pandas, pyarrow, the
framework, MLflow), the comparison is still of Triton against this interpreter's answer, but a PASS says less: the
bundled stub's ``numpy<2`` against a numpy 2 at logging or here, a pandas 2 here against the pandas 3 the repository
pins. ``check`` says so in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from mlflow_triton.repository.layout import REQUIREMENTS_FILE
from mlflow_triton.repository.serving_pins import ANSWER_DISTRIBUTIONS, installed_versions, predicted_with

from .serving_env import ENV_RECORD, recorded_versions, requirement_lines


def answer_distributions(model_dir: Path) -> list[str]:
    """The distributions whose versions decide the model's answers: validation.json's ``predicted_with``, or (a
    repository written before it) those its requirements.txt names and numpy, pandas, pyarrow."""
    recorded = predicted_with(model_dir)
    if recorded is not None:
        return [canonicalize_name(name) for name in recorded]
    names = []
    for line in requirement_lines((Path(model_dir) / REQUIREMENTS_FILE).read_text(encoding="utf-8")):
        try:
            names.append(canonicalize_name(Requirement(line).name))
        except InvalidRequirement:  # a pip option or a path
            continue
    return list(dict.fromkeys([*names, *ANSWER_DISTRIBUTIONS]))


def differences(model_dir: Path, env: Path) -> dict[str, dict[str, str | None]]:
    """``{name: {"served": version, "here": version[, "logged": version]}}`` (``None``: not installed) for each answer
    distribution whose version differs between the serving environment ``env`` (its record's ``pip freeze``), this
    interpreter and, where validation.json records it, the logging environment."""
    served = recorded_versions(json.loads((Path(env) / ENV_RECORD).read_text(encoding="utf-8")))
    names = answer_distributions(model_dir)
    here = installed_versions(names)
    logged: dict[str, str | None] = {
        canonicalize_name(name): version for name, version in (predicted_with(model_dir) or {}).items()
    }
    found = {}
    for name in names:
        versions = {"served": served.get(name), "here": here[name]}
        if name in logged:
            versions["logged"] = logged[name]
        if len(set(versions.values())) > 1:
            found[name] = versions
    return found


def note(model: str, found: dict[str, dict[str, str | None]], constraints) -> str:
    """The line ``check`` prints before the verdict when ``found`` (:func:`differences`) is not empty."""
    constrained = {_name(text): text for text in constraints}
    parts = []
    for name, versions in found.items():
        served = f"{versions['served'] or 'absent'} served"
        if name in constrained:
            served += f" (the Triton installation's constraint {constrained[name]})"
        text = f"{name} {served}, {versions['here'] or 'absent'} here"
        if "logged" in versions:
            text += f", {versions['logged'] or 'absent'} at logging"
        parts.append(text)
    return (
        f"NOTE {model}: the serving environment, this one (where pyfunc.predict answers) and the logging one differ "
        f"in distributions that decide the answers: {'; '.join(parts)}. The verdict compares Triton with "
        "pyfunc.predict here; answers that depend on them may differ elsewhere (validation.json: predicted_with)"
    )


def _name(text: str) -> str:
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return text
