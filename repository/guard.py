"""Repositories written behind a zero-row guard, before runtime 2.11: which directories serve a model, and where its
files are.

mlflow-triton up to runtime 2.10 wrote a batched model directory ``<name>/`` as two: ``<name>_batched/``, the
batched model (its config naming the front, :data:`FRONT_PARAMETER`), and in ``<name>/`` an unbatched front model
(its config naming the batched model, :data:`FORWARD_PARAMETER`) that refused 0-row requests and forwarded the
others through BLS. Nothing writes them any more: a batched repository is one model directory whose inputs make
Triton refuse a 0-row request itself (``repository.config``, docs/batching.md). Those repositories keep serving as
written, each directory's ``1/model.py`` carrying its own runtime.

A streaming repository (``stream=True``, docs/repository.md) is two model directories of its own kind: ``<name>/``,
the one-shot model, whose config names ``<name>_stream/`` (:data:`STREAM_PARAMETER`), the same model decoupled.
Each carries all its files and can be served alone; serving ``<name>`` loads both.

Every part that reads a repository asks here which directories Triton must load (:func:`served_directories`) and
where the model's files are — the MLflow model, the contract, ``requirements.txt``, the shipped request,
``validation.json`` (:func:`files_directory`: the batched directory behind a front).
"""

from __future__ import annotations

import os
import pathlib

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from mlflow_triton.errors import InvalidArgumentError, ModelSourceError

from .layout import CONFIG_FILE

__all__ = [
    "FORWARD_PARAMETER",
    "FRONT_PARAMETER",
    "STREAM_PARAMETER",
    "checked_zero_row_guard",
    "files_directory",
    "forward_target",
    "front_of",
    "STREAM_SUFFIX",
    "served_directories",
    "stream_model",
    "stream_model_name",
]

#: In a front's config: the batched model it forwards to.
FORWARD_PARAMETER = "mlflow_triton_forward_to"
#: In a batched model's config: the front that forwards to it.
FRONT_PARAMETER = "mlflow_triton_front"
#: In a streaming repository's one-shot model's config: the streaming (decoupled) model beside it.
STREAM_PARAMETER = "mlflow_triton_stream_model"
#: The streaming model's name: the one-shot model's followed by this.
STREAM_SUFFIX = "_stream"


def checked_zero_row_guard(value: object) -> bool:
    """The ``zero_row_guard`` option (every wrapper, ``add_repository``, ``export_onnx``) as given, or
    ``InvalidArgumentError``; accepted for callers written for runtime 2.10, it changes nothing."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(
            f"zero_row_guard must be True or False (accepted for compatibility; a batched repository answers a 0-row "
            f"request with a 400 either way), got {value!r}"
        )
    return value


def forward_target(model_directory: str | os.PathLike[str]) -> str | None:
    """The batched model a front forwards to, or ``None`` for any other model directory."""
    return _parameter(model_directory, FORWARD_PARAMETER)


def front_of(model_directory: str | os.PathLike[str]) -> str | None:
    """The front model that forwards to ``model_directory`` (a guarded batched model), or ``None``."""
    return _parameter(model_directory, FRONT_PARAMETER)


def stream_model_name(model_name: str) -> str:
    """The name of the streaming model beside the one-shot model ``model_name``."""
    return model_name + STREAM_SUFFIX


def stream_model(model_directory: str | os.PathLike[str]) -> str | None:
    """The streaming model beside a one-shot model (``<name>_stream``), or ``None`` for any other model directory."""
    return _parameter(model_directory, STREAM_PARAMETER)


def served_directories(model_directory: str | os.PathLike[str]) -> tuple[pathlib.Path, ...]:
    """The model directories Triton must load to serve ``model_directory``: itself, and the batched model behind it
    or the streaming model beside it.

    The batched model behind a front cannot be served alone (a 0-row request sent to it stops Triton 2.51):
    ``ModelSourceError`` naming the front's directory, the one to serve."""
    path = pathlib.Path(model_directory)
    front = front_of(path)
    if front is not None:
        raise ModelSourceError(
            f"{path}: the batched model behind the zero-row guard's front model `{front}` (written by an earlier "
            f"mlflow-triton), which cannot be served alone: a request without rows sent to it stops Triton; serve "
            f"the front, {path.with_name(front)} (Triton then loads both)"
        )
    target = forward_target(path) or stream_model(path)
    return (path,) if target is None else (path, path.with_name(target))


def files_directory(model_directory: str | os.PathLike[str]) -> pathlib.Path:
    """Where the model's files are: the batched directory behind a front, else ``model_directory`` itself."""
    path = pathlib.Path(model_directory)
    target = forward_target(path)
    return path if target is None else path.with_name(target)


def _parameter(model_directory, key):
    path = pathlib.Path(model_directory) / CONFIG_FILE
    if not path.is_file() or key not in path.read_text(encoding="utf-8", errors="replace"):
        return None
    config = text_format.Parse(path.read_text(encoding="utf-8"), model_config_pb2.ModelConfig())
    parameter = config.parameters.get(key)
    return parameter.string_value if parameter is not None else None
