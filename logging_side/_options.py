"""The options of a logging call, as two frozen values, and the parameter paragraphs of the wrappers' docstrings.

Every wrapper (``sklearn``, ``pytorch``, ``transformers``, ``pyfunc``) keeps an explicit, typed signature, as
MLflow's flavors do, and turns its arguments at once into two values that travel unchanged through the packaging
stages: ``Destination`` (where ``Model.log`` puts the model: its name, registration, run, metadata, tags, params)
and ``TritonOptions`` (the repository: device, model name, validation, batching, protocol). An option is added
here, once: its field, default and documentation; the wrappers' signatures name it (``tests/unit`` checks that
every signature carries every field with the field's default) and their docstrings draw its paragraph from
``documented``, as MLflow's ``LOG_MODEL_PARAM_DOCS`` + ``format_docstring`` do.
"""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mlflow.models.model import DEFAULT_AWAIT_MAX_SLEEP_SECONDS

_Option = TypeVar("_Option", "Destination", "TritonOptions")
_Function = TypeVar("_Function", bound=Callable[..., Any])


def _option(default: Any, doc: str) -> Any:
    return dataclasses.field(default=default, metadata={"doc": doc})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Destination:
    """Where ``mlflow.models.Model.log`` puts the model (``log_model`` only; ``save_model`` writes a path)."""

    name: str = _option("model", "The MLflow model's name (``Model.log``'s ``name``); default ``\"model\"``.")
    registered_model_name: str | None = _option(
        None, "Also register the model under this name in the Model Registry (created if missing)."
    )
    await_registration_for: int = _option(
        DEFAULT_AWAIT_MAX_SLEEP_SECONDS,
        "Seconds to wait for the registered version to become ``READY`` (0: do not wait).",
    )
    run_id: str | None = _option(None, "Log into this run instead of the active one (or a new one).")
    metadata: dict[str, Any] | None = _option(
        None, "Custom metadata, recorded in the MLmodel file (also in ``1/artifact/MLmodel``)."
    )
    tags: dict[str, Any] | None = _option(None, "Tags of the LoggedModel.")
    params: dict[str, Any] | None = _option(None, "Params of the LoggedModel: tracking metadata only.")
    # add_repository's, not a wrapper argument: the LoggedModel goes beside its source instead of the active experiment
    experiment_id: str | None = None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> Destination:
        """The value from a caller's arguments (``locals()``), field by field."""
        return _of(cls, arguments)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TritonOptions:
    """What the Triton repository is made of, beside the model and its example."""

    device: str = _option(
        "cpu",
        '``"cpu"`` (``KIND_CPU``) or ``"gpu"`` (``KIND_GPU``: model.py loads the model on the GPU Triton assigns; '
        "PyTorch and Transformers only).",
    )
    triton_model_name: str | None = _option(
        None,
        "The model's name in Triton (the repository's directory); default: the MLflow model's ``name`` "
        "(``save_model``: the directory's name) made Triton-safe.",
    )
    validate_saved_model: bool = _option(
        False,
        "Validate the example against the saved package reloaded in a clean interpreter instead of the model in "
        "memory.",
    )
    max_batch_size: int = _option(
        0,
        "0 (default): no batching. N turns on Triton's dynamic batching: requests are joined into one ``predict`` "
        "of up to N rows, after logging proved that the model predicts each row on its own (docs/batching.md).",
    )
    max_queue_delay_microseconds: int | None = _option(
        None, "With ``max_batch_size``: how long Triton waits to gather a batch."
    )
    zero_row_guard: bool = _option(
        True,
        "Accepted for repositories written before runtime 2.11, and ignored: a batched repository is one model "
        "directory either way, whose config has Triton answer a 0-row request with a 400 (docs/batching.md); "
        "only ``True`` or ``False``.",
    )
    protocol: str = _option(
        "auto",
        '``"auto"`` (default): the typed tensor mapping where it carries the model exactly, else MLflow\'s serving '
        "protocol (the body ``mlflow models serve`` accepts, in one BYTES tensor; docs/repository.md), as "
        'validation.json\'s ``protocol_chosen_because`` says; ``"tensors"`` or ``"mlflow"`` chooses one.',
    )
    stream: bool = _option(
        False,
        "``True``: the repository also holds ``<triton_model_name>_stream``, which streams the chunks of the "
        "model's ``predict_stream`` over Triton's gRPC streams and HTTP ``generate_stream`` (MLflow's serving "
        "protocol; ``max_batch_size=0``; docs/repository.md); the one-shot model keeps its name and answers.",
    )

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> TritonOptions:
        """The value from a caller's arguments (``locals()``), field by field."""
        return _of(cls, arguments)


def _of(cls: type[_Option], arguments: Mapping[str, Any]) -> _Option:
    """The fields ``arguments`` holds; the others keep their defaults (``add_repository`` takes no ``device``).
    Every wrapper's signature holds every field: ``tests/unit`` checks it."""
    return cls(**{field.name: arguments[field.name] for field in _documented_fields(cls) if field.name in arguments})


def _documented_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields a wrapper's signature carries (``experiment_id`` is not one)."""
    return [field for field in dataclasses.fields(cls) if "doc" in field.metadata]


def wrapper_fields() -> dict[str, dataclasses.Field[Any]]:
    """Every option a wrapper's signature carries, by name (``tests/unit``: with the field's default)."""
    return {field.name: field for cls in (Destination, TritonOptions) for field in _documented_fields(cls)}


_WIDTH = 116  # the docstring as help() shows it: dedented, within the project's line length

_SHARED_DOCS = {
    "input_example": (
        "Required, also with ``signature``: predicted in memory before anything is written, shipped as the "
        "ready-to-send request and used to validate the tensor mapping. An ``(input, params)`` tuple carries "
        "request parameters."
    ),
    "signature": (
        "The MLflow signature; default: inferred from the example and its prediction; ``False``: none recorded."
    ),
}


def documented(function: _Function) -> _Function:
    """Fill the wrapper's docstring: ``{destination}`` and ``{triton}`` become the ``Args`` entries of those values'
    fields, ``{input_example}`` and ``{signature}`` their shared paragraphs, each indented where it stands. A field
    the function does not take, or one its docstring documents itself (``add_repository``'s defaults differ), is
    left out."""
    template = inspect.cleandoc(function.__doc__ or "")
    taken = inspect.signature(function).parameters
    written = {line.strip().partition(":")[0] for line in template.splitlines()}
    lines = []
    for line in template.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        stripped = line.strip()
        if stripped in ("{destination}", "{triton}"):
            cls = Destination if stripped == "{destination}" else TritonOptions
            for field in _documented_fields(cls):
                if field.name not in taken or field.name in written:
                    continue
                entry = f"{indent}{field.name}: {field.metadata['doc']}"
                lines.extend(textwrap.wrap(entry, _WIDTH, subsequent_indent=indent + "    "))
        else:
            filled = line
            for key, doc in _SHARED_DOCS.items():
                filled = filled.replace(f"{{{key}}}", doc)
            lines.extend(textwrap.wrap(filled, _WIDTH, subsequent_indent=indent + "    ") if filled != line else [line])
    function.__doc__ = "\n".join(lines)
    return function
