"""The flavor registry: one ``Framework`` entry per flavor a wrapper logs, and the facts the other parts read.

What differs between flavors is written once, on the flavor's entry (``_framework.Framework``), in the flavor's
own module: the model argument, the native options, whether its pyfunc ``predict`` takes a dict, the device form
its MLflow loader reads, its pyfunc wrapper and the key of its exporter. The module registers its entry with
:func:`register`; ``WRAPPERS`` names the module of each built-in flavor, which is imported only when one of its
facts is asked for: importing this module (``mlflow_triton`` and ``mlflow_triton.local`` do) loads no wrapper, no
MLflow flavor and no framework.

Readers: ``_schema`` (dict input), ``local``'s source reading (how to log a model MLflow logged natively) and
``export`` (the exporter's key). The runtime, vendored into every ``1/model.py``, imports nothing of the logging
side and keeps its own device rule (``runtime.loading.device_setting``); a test holds it equal to the entries'
``device_index``.

A new flavor is its module (a ``Framework`` subclass passed to :func:`register`, ``log_model``, ``save_model``) and
its line in ``WRAPPERS`` (docs/contributing.md#adding-a-flavor).
"""

from __future__ import annotations

import importlib
from collections.abc import Collection
from typing import TYPE_CHECKING

from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from ._framework import Framework

__all__ = [
    "ADOPTED_EXPORTERS",
    "WRAPPERS",
    "entries",
    "entry",
    "exported_by",
    "exporter",
    "register",
    "takes_dict_input",
    "wrapper_names",
]

#: MLflow flavor name -> the module that registers its entry (and offers ``log_model``/``save_model``).
WRAPPERS = {
    "sklearn": "mlflow_triton.sklearn",
    "pytorch": "mlflow_triton.pytorch",
    "transformers": "mlflow_triton.transformers",
    "python_function": "mlflow_triton.pyfunc",
}
#: Flavors no wrapper logs, whose models ``add_repository`` adopts and ``export-onnx`` exports: flavor -> exporter.
ADOPTED_EXPORTERS = {"sentence_transformers": "text"}

_REGISTERED: dict[str, Framework] = {}


def register(framework: Framework) -> Framework:
    """Enter ``framework`` as the entry of its flavor and return it (``_FRAMEWORK = register(_Mine())``).

    Registering again from the same module and class (a reloaded module) replaces the entry; another entry for a
    registered flavor is refused, naming the module that holds it.
    """
    flavor = framework.flavor
    if not isinstance(flavor, str) or not flavor:
        raise InvalidArgumentError(f"{_origin(framework)}: flavor must be a non-empty string, got {flavor!r}")
    known = _REGISTERED.get(flavor)
    if known is not None and _origin(known) != _origin(framework):
        raise InvalidArgumentError(
            f"{_origin(framework)}: flavor {flavor!r} is registered already, by {_origin(known)}; registered "
            f"flavors: {', '.join(_REGISTERED)}"
        )
    _REGISTERED[flavor] = framework
    return framework


def entry(flavor: str) -> Framework | None:
    """The entry of ``flavor`` (its module imported on first use), or None where no wrapper logs it."""
    if flavor not in _REGISTERED and flavor in WRAPPERS:
        _import_wrapper(flavor)
    return _REGISTERED.get(flavor)


def entries() -> list[Framework]:
    """Every entry: the built-in flavors in ``WRAPPERS`` order, then those registered besides, in their order."""
    return [_REGISTERED[flavor] for flavor in _flavors()]


def takes_dict_input(flavor: str) -> bool:
    """Whether MLflow's pyfunc ``predict`` of ``flavor`` takes a dict input (a flavor no wrapper logs: yes)."""
    found = entry(flavor)
    return found is None or found.dict_input


def exporter(flavor: str) -> str | None:
    """The key of the ``export-onnx`` exporter for ``flavor``'s models, or None where export refuses them."""
    found = entry(flavor)
    return found.exporter if found is not None else ADOPTED_EXPORTERS.get(flavor)


def exported_by(exporters: Collection[str]) -> list[str]:
    """The flavors whose entry names one of ``exporters``, in registry order (what ``export-onnx`` converts)."""
    return [flavor for flavor in _flavors() if _REGISTERED[flavor].exporter in exporters]


def wrapper_names() -> tuple[str, ...]:
    """The built-in wrapper modules' names under ``mlflow_triton`` (``sklearn``, ..., ``pyfunc``)."""
    return tuple(module.rpartition(".")[2] for module in WRAPPERS.values())


def _flavors() -> list[str]:
    for flavor in WRAPPERS:
        entry(flavor)
    return [*WRAPPERS, *(flavor for flavor in _REGISTERED if flavor not in WRAPPERS)]


def _import_wrapper(flavor: str) -> None:
    module = WRAPPERS[flavor]
    importlib.import_module(module)
    if flavor not in _REGISTERED:  # a module listed here must register the flavor it is listed for
        raise InvalidArgumentError(
            f"{module} registered no entry for flavor {flavor!r}; a flavor module calls "
            "mlflow_triton.flavors.register(<its Framework>) when imported"
        )


def _origin(framework: Framework) -> str:
    return f"{type(framework).__module__}.{type(framework).__qualname__}"
