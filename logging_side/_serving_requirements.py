"""The serving environment a generated Triton repository asks for: ``model_repository/<name>/requirements.txt``.

The generated ``model.py`` only calls ``mlflow.pyfunc.load_model(...).predict(...)``, so it needs
``mlflow-skinny`` (MLflow without its tracking server, UI, SQL stores, Flask, ...), not the full
``mlflow`` distribution the MLflow package under ``1/artifact/`` names for ``mlflow models serve``.
The lean set is derived from the MLflow package's own requirements:

* a plain ``mlflow`` line (``mlflow==3.17.2``) becomes ``mlflow-skinny`` with the same specifier
  and marker; a line asking for an extra (``mlflow[gateway]``) or a URL is kept as written: the
  user asked for it;
* every other line is kept: the flavor's load-time requirements (``scikit-learn``/``skops``,
  ``torch``/``cloudpickle``, ``transformers``/``tokenizers``) and whatever the user passed as
  ``pip_requirements`` / ``extra_pip_requirements``;
* ``numpy`` and ``pandas``, which the runtime imports and which only the full ``mlflow`` brings,
  are added with the bounds the logging MLflow declares for them (``pandas<3`` under MLflow 3.14),
  unless a line already names them;
* when no line names MLflow at all (a user's ``pip_requirements`` may name only ``mlflow-tracing``),
  ``mlflow-skinny==<logging version>`` is added: ``model.py`` cannot load the model without it.
"""

import importlib.metadata

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

__all__ = ["RUNTIME_PACKAGES", "SERVING_REQUIREMENTS_HEADER", "mlflow_bounds", "serving_requirements"]

#: Imported by the runtime (``runtime/``), installed by the full ``mlflow`` but not by ``mlflow-skinny``.
RUNTIME_PACKAGES = ("numpy", "pandas")
_MLFLOW_NAMES = frozenset({"mlflow", "mlflow-skinny"})

SERVING_REQUIREMENTS_HEADER = (
    "# Serving environment for this Triton model: what 1/model.py needs to load and run the MLflow model.\n"
    "# mlflow-skinny (MLflow without its tracking server, UI and SQL stores) at the logging MLflow's version,\n"
    "# the flavor's and the user's requirements from 1/artifact/requirements.txt, numpy and pandas for the runtime.\n"
    "# 1/artifact/requirements.txt keeps MLflow's own list (the full mlflow) for `mlflow models serve`.\n"
    "# Build it with the Python version of Triton's Python-backend stub; Triton 2.51's stub needs numpy<2.\n"
)


def serving_requirements(native_lines, mlflow_version, bounds):
    """The lean requirement lines for the Triton repository, in the MLflow package's order.

    ``native_lines`` are the lines of ``1/artifact/requirements.txt``; ``mlflow_version`` is the
    logging MLflow's version; ``bounds`` maps ``numpy``/``pandas`` to the requirement line to add
    for each (see :func:`mlflow_bounds`). Comments and blank lines are dropped, duplicates removed.
    """
    lines, names = [], set()
    for raw in native_lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        requirement = _parse(line)
        if requirement is not None:
            if canonicalize_name(requirement.name) == "mlflow" and not requirement.extras and not requirement.url:
                requirement.name = "mlflow-skinny"
                line = str(requirement)
            names.add(canonicalize_name(requirement.name))
        if line not in lines:
            lines.append(line)
    if not names & _MLFLOW_NAMES:
        lines.insert(0, f"mlflow-skinny=={mlflow_version}")
    lines += [bounds.get(package, package) for package in RUNTIME_PACKAGES if package not in names]
    return lines


def mlflow_bounds(distribution="mlflow"):
    """``{"numpy": "numpy<3", "pandas": "pandas<4"}``: what the installed ``mlflow`` requires of them.

    Empty where that distribution is not installed (an ``mlflow-skinny``-only environment).
    """
    try:
        declared = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    bounds = {}
    for text in declared:
        requirement = _parse(text)
        if requirement is None or requirement.marker is not None:  # extras and platform-specific lines
            continue
        name = canonicalize_name(requirement.name)
        if name in RUNTIME_PACKAGES:
            bounds[name] = f"{name}{requirement.specifier}"
    return bounds


def _parse(line):
    try:
        return Requirement(line)
    except InvalidRequirement:  # pip options (-c, --extra-index-url), paths: kept as written
        return None
