"""The installed distributions a model's own classes come from: requirements MLflow's inference would record.

``mlflow.<flavor>.save_model`` infers requirements by reloading the saved model
in a subprocess and recording every module that loading imports (27 s for a
tiny BERT module on the project's 2-core machine, against 0.2 s with the
flavor's defaults). The wrappers skip that reload; instead this module looks at
what the model object refers to in memory -- the classes of its parts (with
their base classes), functions and the types of their attributes, and the
flavor's serializer -- and maps the top-level module of each onto the installed
distribution that provides it (``transformers`` for a ``BertModel`` subclass),
as MLflow maps imported modules. Distributions required by another one found
or by the flavor's defaults are pruned, and each is pinned to its installed
version with MLflow's own helper (``numpy``, ``pandas`` and ``pyarrow`` are left
to the serving requirements, which pin them to their installed versions, a
numpy 2 excepted).

* Without ``pip_requirements`` / ``conda_env`` the found distributions are added
  to the flavor's defaults (and ``extra_pip_requirements``).
* With them, the caller's list is kept as given, and each found distribution it
  does not name is reported: Triton's serving environment, built from that list,
  would lack it and loading fails with ``ModuleNotFoundError``.

What loading imports without the model referring to it (a tokenizer's optional
backend, a module imported inside a method) is not seen here: pass it with
``extra_pip_requirements``; ``mlflow-triton check`` builds the serving
environment from the recorded requirements and proves the package loads.
"""

import importlib.metadata
import inspect
import os
import pathlib
import re
import sys

from packaging.requirements import InvalidRequirement, Requirement

from mlflow_triton.repository.serving_pins import ANSWER_DISTRIBUTIONS

from . import mlflow_private

# Never recorded: MLflow itself (the serving requirements name mlflow-skinny), setuptools (MLflow excludes it), and
# numpy, pandas and pyarrow, which the serving requirements pin (:func:`_serving_requirements.answer_pins`: a numpy 2
# pin taken from the logging environment could not be installed beside Triton 2.51's stub, which needs numpy<2).
_EXCLUDED = frozenset({"mlflow", "mlflow-skinny", "setuptools", *ANSWER_DISTRIBUTIONS})
# MLflow's own modules: every distribution that installs the ``mlflow`` package (mlflow, mlflow-skinny and
# mlflow-tracing, a distribution of MLflow itself) is MLflow, which the serving requirements name as mlflow-skinny.
_NOT_INSTALLED = frozenset(sys.stdlib_module_names) | {"__main__", "builtins", "mlflow"}
_CONDA_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def distributions_needed(objects):
    """``{distribution: names of what needs it, in order}`` for the classes, functions and values in ``objects``.

    A class counts with every base class; a value (neither class nor function) by its type; a module
    object by its own name.
    """
    provided_by = importlib.metadata.packages_distributions()
    needed = {}
    for obj in objects:
        for origin in _origins(obj):
            module = origin.__name__ if inspect.ismodule(origin) else getattr(origin, "__module__", None)
            top_level = (module or "").split(".")[0]
            if not top_level or top_level in _NOT_INSTALLED:
                continue
            for distribution in provided_by.get(top_level, ()):
                name = mlflow_private.normalize_package_name(distribution)
                if name not in _EXCLUDED:
                    needed.setdefault(name, {}).setdefault(_describe(obj, origin))
    return {name: list(users) for name, users in needed.items()}


def complete_requirements(options, needed, declared_by_caller):
    """``(options, messages)``: the found distributions added to ``pip_requirements``, or reported as missing.

    ``options`` are the native save options after the flavor filled in its default requirements;
    ``declared_by_caller`` says whether the caller passed ``pip_requirements`` or ``conda_env``
    (then kept as given, and the messages name what they lack).
    """
    options = dict(options)
    if declared_by_caller:
        declared = _declared_names(options)
        if declared is None:  # requirements this module cannot read (a conda_env it cannot parse)
            return options, []
        missing = _pruned(needed, declared)
        return options, [_missing_message(name, needed[name], options) for name in missing]
    current = list(options.get("pip_requirements") or [])
    added = _pruned(needed, _names(current))
    if added:  # else left alone: a flavor may settle its defaults later (transformers does, when saving)
        options["pip_requirements"] = current + [mlflow_private.pinned_requirement(name) for name in added]
    return options, []


def missing_from(needed, requirement_lines):
    """The distributions of ``needed`` that ``requirement_lines`` (a requirements.txt's lines) do not bring, where
    ``mlflow`` brings only what ``mlflow-skinny`` does: the serving requirements name that instead."""
    declared = _names(line for line in requirement_lines if not line.lstrip().startswith("#"))
    return _pruned(needed, {"mlflow-skinny" if name == "mlflow" else name for name in declared})


def pinned(name):
    """``name==<installed version>``, as MLflow pins a requirement."""
    return mlflow_private.pinned_requirement(name)


def _pruned(needed, declared):
    """The distributions of ``needed`` that neither ``declared`` nor another needed one already brings."""
    brought = set()
    for name in set(needed) | set(declared):
        brought.update(mlflow_private.requires_recursive(name))
    return sorted(name for name in needed if name not in declared and name not in brought)


def _origins(obj):
    """What ``obj`` brings in when unpickled: itself (module, function) or its class with every base class."""
    if inspect.ismodule(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return [obj]
    klass = obj if inspect.isclass(obj) else type(obj)
    return [base for base in klass.__mro__ if base is not object]


def _describe(obj, origin):
    if inspect.ismodule(obj):
        return f"module {obj.__name__}"
    kind = "class" if inspect.isclass(obj) else "function" if inspect.isfunction(obj) else "value of type"
    own = obj if inspect.isclass(obj) or inspect.isfunction(obj) else type(obj)
    name = f"{kind} {getattr(own, '__qualname__', repr(own))}"
    if origin is not own:
        name += f" (base class {origin.__module__}.{origin.__qualname__})"
    return name


def _missing_message(distribution, users, options):
    given = "pip_requirements" if options.get("pip_requirements") is not None else "conda_env"
    requirement = mlflow_private.pinned_requirement(distribution)
    return (
        f"{'; '.join(users[:3])}{' and more' if len(users) > 3 else ''} need(s) the installed distribution "
        f"{distribution!r}, which the {given} you passed do(es) not list: Triton's serving environment is built "
        f"from those requirements, so loading the model there fails with ModuleNotFoundError. Add "
        f"{requirement!r} to {given}, or pass only extra_pip_requirements=[...] and let mlflow-triton record the "
        "flavor's defaults and the model's distributions"
    )


def _names(lines):
    """Canonical distribution names of requirement lines (pip or conda spelling); options and paths are skipped."""
    names = set()
    for line in lines:
        text = str(line).strip()
        try:
            names.add(mlflow_private.normalize_package_name(Requirement(text).name))
        except InvalidRequirement:  # a conda spelling (``python=3.11``), a pip option, a path or URL
            match = _CONDA_NAME.match(text)
            if match and not text.startswith(("-", ".", "/")):
                names.add(mlflow_private.normalize_package_name(match.group(0)))
    return names


def _declared_names(options):
    """Canonical names in the caller's ``pip_requirements`` (list or file) or ``conda_env``; None if unreadable."""
    pip_requirements = options.get("pip_requirements")
    if pip_requirements is not None:
        if isinstance(pip_requirements, (str, os.PathLike)):
            return _names(_requirement_file_lines(pathlib.Path(pip_requirements).expanduser()))
        return _names(pip_requirements)
    conda_env = options.get("conda_env")
    if isinstance(conda_env, (str, os.PathLike)):
        import yaml  # MLflow's dependency

        try:
            conda_env = yaml.safe_load(pathlib.Path(conda_env).expanduser().read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            return None
    if not isinstance(conda_env, dict):
        return None
    lines = []
    for dependency in conda_env.get("dependencies") or []:
        lines.extend(dependency.get("pip") or [] if isinstance(dependency, dict) else [dependency])
    return _names(lines)


def _requirement_file_lines(path):
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
