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
* ``numpy``, ``pandas`` and ``pyarrow`` (:data:`~mlflow_triton.repository.serving_pins.ANSWER_DISTRIBUTIONS`),
  which decide what ``predict`` answers and how MLflow reads a request, are pinned to the versions installed
  where the example was predicted (:func:`answer_pins`; ``pyarrow`` only where it was installed), unless a line
  already names them. numpy and pandas are needed in any case: the runtime imports them, and only the full
  ``mlflow`` brings them. A logging numpy 2 is the exception (:func:`beside_no_stub`): no Triton stub the project
  serves on installs beside it (they are built against the numpy 1 ABI), so numpy -- and a pandas that requires
  numpy 2 -- keep the bound the logging MLflow declares (``numpy<3``, ``pandas<4``) and the server's constraint
  picks versions that install; validation.json says so (``not_pinned``) and ``check`` prints it;
* when no line names MLflow at all (a user's ``pip_requirements`` may name only ``mlflow-tracing``),
  ``mlflow-skinny==<logging version>`` is added: ``model.py`` cannot load the model without it;
* what the native package's *saved format* loads with (:func:`format_distributions`, read from its MLmodel: skops
  for ``mlflow.sklearn``'s default ``serialization_format``, cloudpickle for a pickled PyTorch model or a
  ``PythonModel``) is added, pinned, where no line brings it (``pip_requirements=["scikit-learn"]`` leaves skops
  out of MLflow's list): validation.json's ``requirements_added`` says why, and ``add-repository`` prints it.
"""

import importlib.metadata

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from mlflow_triton.repository.serving_pins import ANSWER_DISTRIBUTIONS, installed_versions

__all__ = [
    "ADDED",
    "RUNTIME_PACKAGES",
    "SERVING_REQUIREMENTS_HEADER",
    "answer_pins",
    "beside_no_stub",
    "format_distributions",
    "mlflow_bounds",
    "not_pinned",
    "predicted_versions",
    "serving_requirements",
]

#: validation.json's field: ``{requirement line added: why}`` for what the saved format loads with.
ADDED = "requirements_added"
#: ``(flavor, key in its MLmodel configuration, value) -> distribution``: what MLflow's loader imports to read a
#: package saved so (``mlflow.sklearn._load_model_from_local_file``; ``mlflow.pyfunc.model`` unpickles a
#: ``PythonModel`` with cloudpickle; ``mlflow.pytorch``'s default ``pickle_module``, ``mlflow.pytorch.pickle_module``,
#: is cloudpickle's).
_FORMATS = {
    ("sklearn", "serialization_format", "skops"): "skops",
    ("sklearn", "serialization_format", "cloudpickle"): "cloudpickle",
    ("python_function", "pickle_module_name", "mlflow.pytorch.pickle_module"): "cloudpickle",
    ("python_function", "pickle_module_name", "cloudpickle"): "cloudpickle",
    ("python_function", "python_model", None): "cloudpickle",
}
#: Imported by the runtime (``runtime/``), installed by the full ``mlflow`` but not by ``mlflow-skinny``.
RUNTIME_PACKAGES = ("numpy", "pandas")
_MLFLOW_NAMES = frozenset({"mlflow", "mlflow-skinny"})
#: The last numpy 1 release: what a distribution must accept to be installed beside Triton's numpy-1 stubs.
_LAST_NUMPY_1 = "1.26.4"

SERVING_REQUIREMENTS_HEADER = (
    "# Serving environment for this Triton model: what 1/model.py needs to load and run the MLflow model.\n"
    "# mlflow-skinny (MLflow without its tracking server, UI and SQL stores) at the logging MLflow's version,\n"
    "# the flavor's and the user's requirements from 1/artifact/requirements.txt, and numpy, pandas and pyarrow at\n"
    "# the versions the example was predicted with (they change what predict answers; validation.json records them).\n"
    "# 1/artifact/requirements.txt keeps MLflow's own list (the full mlflow) for `mlflow models serve`.\n"
    "# Build it with the Python version of Triton's Python-backend stub; Triton 2.51's stub needs numpy<2.\n"
)


def serving_requirements(native_lines, mlflow_version, pins):
    """The lean requirement lines for the Triton repository, in the MLflow package's order.

    ``native_lines`` are the lines of ``1/artifact/requirements.txt``; ``mlflow_version`` is the
    logging MLflow's version; ``pins`` maps ``numpy``/``pandas``/``pyarrow`` to the requirement line to add
    for each (see :func:`answer_pins`; numpy and pandas get a bare name where it has none, the runtime imports
    them). Comments and blank lines are dropped, duplicates removed.
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
    for package in ANSWER_DISTRIBUTIONS:
        line = pins.get(package, package if package in RUNTIME_PACKAGES else None)
        if package not in names and line is not None:
            lines.append(line)
    return lines


def format_distributions(flavors):
    """``{distribution: why}``: what loading a package whose MLmodel has ``flavors`` (``{flavor: configuration}``)
    imports because of the format it was saved in (:data:`_FORMATS`; ``None`` there: the key present, any value)."""
    needed = {}
    for (flavor, key, value), distribution in _FORMATS.items():
        found = (flavors.get(flavor) or {}).get(key)
        if found is not None and value in (None, found):
            said = f"{key}: {found}" if value is not None else f"{key}: {found} is unpickled with {distribution}"
            needed.setdefault(distribution, f"the MLmodel's {flavor} flavor is saved so ({said}), and loads with it")
    return needed


def answer_pins(versions, bounds, beside_no_stub=frozenset()):
    """``{name: requirement line}`` for the distributions that decide the answers, from their ``versions`` where the
    example was predicted (``{name: version or None}``; ``None``: not installed, no line).

    Each is pinned to its version, except those of ``beside_no_stub`` (:func:`beside_no_stub`: a numpy 2, a pandas
    that requires it), which no Triton stub this project serves on can install beside: they get ``bounds[name]``
    (:func:`mlflow_bounds`; the bare name without one), and the server's ``numpy<2`` picks versions that install.
    """
    pins = {}
    for name in ANSWER_DISTRIBUTIONS:
        version = versions.get(name)
        if version is not None:
            pins[name] = bounds.get(name, name) if name in beside_no_stub else f"{name}=={version}"
    return pins


def beside_no_stub(versions, requires=importlib.metadata.requires):
    """The names of ``versions`` whose installed version cannot be installed beside numpy 1: numpy 2 or later, and a
    distribution whose own requirements (``requires(name)``, its metadata) exclude numpy 1.26.4, the last numpy 1
    (pandas 3.1 requires numpy>=2.0.2). The Python-backend stubs of Triton 2.51 and of the 24.xx/25.xx containers
    are built against the numpy 1 ABI (``numpy<2`` in their serving environments)."""
    names = set()
    numpy = versions.get("numpy")
    if numpy is None or _version(numpy) is None or _version(numpy).major < 2:
        return names
    names.add("numpy")
    for name, version in versions.items():
        if version is None or name == "numpy":
            continue
        for text in requires(name) or []:
            requirement = _parse(text)
            if requirement is None or canonicalize_name(requirement.name) != "numpy":
                continue
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            if not requirement.specifier.contains(_LAST_NUMPY_1, prereleases=True):
                names.add(name)
    return names


def not_pinned(lines, versions, beside_no_stub=frozenset()):
    """``{name: why}`` for each distribution of ``versions`` installed at logging time whose line in ``lines`` does
    not pin that version (validation.json's ``not_pinned``): where the serving environment may answer otherwise."""
    by_name = {}
    for line in lines:
        requirement = _parse(line)
        if requirement is not None:
            by_name.setdefault(canonicalize_name(requirement.name), (line, requirement))
    reasons = {}
    for name, version in versions.items():
        if version is None or name not in by_name:
            continue
        line, requirement = by_name[name]
        specifiers = list(requirement.specifier)
        if len(specifiers) == 1 and specifiers[0].operator == "==" and requirement.specifier.contains(version, True):
            continue
        if name in beside_no_stub:
            needs = "" if name == "numpy" else ", which requires numpy 2"
            reasons[name] = (
                f"the example was predicted with {name} {version}{needs}, and the Triton stubs (2.51, the 24.xx and "
                "25.xx containers) are built against numpy 1: requirements.txt keeps "
                f"{line!r} and the server's constraint numpy<2 picks a version that installs, so answers that depend "
                f"on {name} may differ; log under numpy<2 for a serving environment that answers as the example was "
                "proven"
            )
        else:
            reasons[name] = (
                f"the example was predicted with {name} {version}; requirements.txt names it as {line!r} (as given "
                "or as MLflow recorded it), so the serving environment may install another version"
            )
    return reasons


def predicted_versions(lines):
    """``{name: installed version or None}`` for every distribution ``lines`` name and the answer distributions:
    validation.json's ``predicted_with`` (this interpreter is the one the example was predicted in)."""
    requirements = [_parse(line) for line in lines]
    names = [requirement.name for requirement in requirements if requirement is not None]
    return installed_versions(dict.fromkeys([*names, *ANSWER_DISTRIBUTIONS]))


def _version(text):
    try:
        return Version(text)
    except InvalidVersion:
        return None


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
