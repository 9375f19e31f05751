"""Custom code that the serving environment will certainly fail to import.

The default validation predicts with the in-memory model, where every class is
already imported. A class (or function) that the saved artifact references by
its module and name must be importable again where Triton loads it: from an
installed distribution or from the package's ``code_paths``. This module finds
the cheap, certain cases before anything is written, so that the wrapper can
warn (and record the warning in ``validation.json``):

* a reference into a module that is neither part of the Python installation
  (standard library, site-packages), nor provided by an installed
  distribution, nor covered by ``code_paths``;
* a reference into ``__main__`` when the serializer stores it by reference
  (``pickle``, skops); cloudpickle, MLflow's default for PyTorch and sklearn's
  ``serialization_format="cloudpickle"``, stores such classes and functions by
  value, so they load elsewhere -- and so it stores those defined inside a
  function (``<locals>`` in their qualified name), whatever their module.

Anything it cannot decide (a module missing from ``sys.modules``, one without
a file) is left alone: ``validate_saved_model=True`` is the complete check.
"""

import dataclasses
import functools
import importlib.metadata
import os
import pathlib
import site
import sys
import sysconfig
from collections.abc import Iterable
from typing import Any

MAIN_MODULE = "__main__"
_LOCALS = "<locals>"  # in the qualified name of a class or function defined inside a function
_INSTALLATION_FOLDERS = ("site-packages", "dist-packages")


@dataclasses.dataclass(frozen=True)
class CodeReference:
    """A class or function the serialized model refers to by module and name."""

    what: str  # "class", "function", ...: how the message names it
    module: str
    qualname: str

    @classmethod
    def of(cls, what: str, obj: object) -> "CodeReference":
        return cls(what, getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", repr(obj)))


def unimportable_code_warnings(
    references: Iterable[CodeReference], code_paths: Any, main_stored_by_value: bool, serializer: str, remedy: str
) -> list[str]:
    """One message per module the serving environment cannot import, naming the referring objects.

    ``serializer`` names how the model is stored (for the ``__main__`` message);
    ``remedy`` is the flavor-specific advice appended to that message.
    """
    covered = _CodePaths(code_paths)
    installed = _InstalledNames()
    unimportable: dict[str, list[CodeReference]] = {}
    for reference in references:
        if main_stored_by_value and (reference.module == MAIN_MODULE or _LOCALS in reference.qualname):
            continue  # cloudpickle stores what cannot be imported by its name by value
        main = reference.module == MAIN_MODULE
        if main or (reference.module and not _importable_elsewhere(reference.module, covered, installed)):
            unimportable.setdefault(reference.module, []).append(reference)
    return [_message(module, found, serializer, remedy) for module, found in sorted(unimportable.items())]


def _message(module, references, serializer, remedy):
    named = ", ".join(sorted({f"{r.what} {r.qualname}" for r in references}))
    if module == MAIN_MODULE:
        return (
            f"{named} is defined in __main__, which {serializer} stores by reference: loading the model "
            f"anywhere else (Triton included) fails with an AttributeError or ModuleNotFoundError. Move it "
            f"into a module and package it with code_paths=[...], {remedy}; validate_saved_model=True proves "
            "the package in a clean interpreter"
        )
    return (
        f"{named} is defined in module {module!r}, which is neither installed (site-packages) nor covered by "
        f"code_paths: loading the model in Triton fails with ModuleNotFoundError: No module named "
        f"{module.split('.')[0]!r}. Package it with code_paths=[<the file or package directory of {module!r}>] "
        "(or install it in the serving environment); validate_saved_model=True proves the package in a clean "
        "interpreter"
    )


def _importable_elsewhere(module_name, covered, installed):
    """False only when certain: the module's file lies outside the installation and code_paths."""
    module = sys.modules.get(module_name)
    filename = getattr(module, "__file__", None)
    if module is None or not filename:
        return True  # built-in, namespace or synthetic module: cannot decide
    path = pathlib.Path(filename).resolve()
    top_level = module_name.split(".")[0]
    return _in_installation(path) or covered.cover(path, top_level) or installed.provides(top_level)


def _in_installation(path):
    if any(part in _INSTALLATION_FOLDERS for part in path.parts):
        return True
    return any(path.is_relative_to(root) for root in _installation_roots())


@functools.lru_cache(maxsize=1)
def _installation_roots():
    """The standard library and site-packages folders of the running interpreter."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(key)}
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        roots.add(site.getusersitepackages())
    return tuple(pathlib.Path(root).resolve() for root in roots)


class _InstalledNames:
    """Top-level import names of installed distributions (editable installs included).

    Read once per check, on first use: scanning the installed distributions
    takes a moment, and an install between two log calls must count.
    """

    def __init__(self):
        self._names = None

    def provides(self, top_level):
        if self._names is None:
            self._names = set(importlib.metadata.packages_distributions())
        return top_level in self._names


class _CodePaths:
    """``code_paths`` as MLflow packages them: each entry is copied to ``code/<its name>``."""

    def __init__(self, code_paths):
        entries = [code_paths] if isinstance(code_paths, (str, os.PathLike)) else list(code_paths or [])
        self._paths = [pathlib.Path(entry).expanduser().resolve() for entry in entries]

    def cover(self, path, top_level):
        """Whether the module at ``path``, imported as ``top_level…``, is packaged by an entry."""
        for entry in self._paths:
            if path == entry or path.is_relative_to(entry):
                return True
            if entry.name == top_level or (entry.suffix == ".py" and entry.stem == top_level):
                return True
        return False
