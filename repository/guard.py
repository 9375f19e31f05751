"""The zero-row guard of a batched repository: an unbatched front model before the batched one.

A batched model directory ``<name>/`` (``max_batch_size > 0``) is guarded by moving it to ``<name>_batched/`` (its
config naming the front, ``forwarding.FRONT_PARAMETER``) and writing in its place a front model ``<name>/`` with
``max_batch_size: 0``, the same tensors with the leading ``-1`` row axis, ``FRONT_INSTANCES`` instances, and a
``1/model.py`` composed from ``runtime/forwarding.py`` and ``runtime/guard.py``: it answers a request without rows
with a 400 and forwards every other one to ``<name>_batched`` (BLS). Clients send exactly what they sent before, to
the same name; Triton needs the whole ``model_repository/`` (both directories).

Every part that reads a repository asks here which directories Triton must load (:func:`served_directories`) and
where the model's files are — the MLflow model, the contract, ``requirements.txt``, the shipped request,
``validation.json`` (:func:`files_directory`: the batched directory behind a front).
"""

from __future__ import annotations

import os
import pathlib

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from mlflow_triton.runtime import RUNTIME_VERSION
from mlflow_triton.runtime.forwarding import FORWARD_PARAMETER, FRONT_PARAMETER, MAX_BATCH_SIZE_PARAMETER

from .config import RUNTIME_VERSION_PARAMETER, render_config
from .layout import CONFIG_FILE, MODEL_FILE, VERSION_DIRECTORY

__all__ = ["BATCHED_SUFFIX", "FRONT_INSTANCES", "batched_name", "files_directory", "guard", "served_directories"]

#: The batched model behind a front ``<name>`` is ``<name>_batched``.
BATCHED_SUFFIX = "_batched"
#: Instances of the front: each waits on its forwarded request, so this many requests reach the batcher at once.
FRONT_INSTANCES = 16


def batched_name(name: str) -> str:
    return f"{name}{BATCHED_SUFFIX}"


def guard(model_directory: str | os.PathLike[str], front_model_py: str, instances: int = FRONT_INSTANCES) -> None:
    """Put the front ``front_model_py`` before the batched model directory ``model_directory`` (see the module)."""
    front = pathlib.Path(model_directory)
    batched = front.with_name(batched_name(front.name))
    config = _read(front / CONFIG_FILE)
    if config.max_batch_size <= 0:
        raise ValueError(f"{front}: only a batched model (max_batch_size > 0) is guarded")
    front.rename(batched)
    config.name = batched.name
    config.parameters[FRONT_PARAMETER].string_value = front.name
    (batched / CONFIG_FILE).write_text(render_config(config), encoding="utf-8")
    (front / VERSION_DIRECTORY).mkdir(parents=True)
    (front / CONFIG_FILE).write_text(render_config(front_config(config, front.name, instances)), encoding="utf-8")
    (front / VERSION_DIRECTORY / MODEL_FILE).write_text(front_model_py, encoding="utf-8")


def front_config(batched: model_config_pb2.ModelConfig, name: str, instances: int) -> model_config_pb2.ModelConfig:
    """The front's config: unbatched, the batched model's tensors as a client sends them (``[-1, *dims]``)."""
    config = model_config_pb2.ModelConfig(name=name, backend="python", max_batch_size=0)
    for side, message in (("input", model_config_pb2.ModelInput), ("output", model_config_pb2.ModelOutput)):
        for entry in getattr(batched, side):
            tensor = message(name=entry.name, data_type=entry.data_type, dims=[-1, *entry.dims])
            if getattr(entry, "optional", False):
                tensor.optional = True
            getattr(config, side).append(tensor)
    config.instance_group.append(
        model_config_pb2.ModelInstanceGroup(count=instances, kind=model_config_pb2.ModelInstanceGroup.KIND_CPU)
    )
    config.parameters[FORWARD_PARAMETER].string_value = batched.name
    config.parameters[MAX_BATCH_SIZE_PARAMETER].string_value = str(batched.max_batch_size)
    config.parameters[RUNTIME_VERSION_PARAMETER].string_value = RUNTIME_VERSION
    return config


def forward_target(model_directory: str | os.PathLike[str]) -> str | None:
    """The batched model a front forwards to, or ``None`` for any other model directory."""
    path = pathlib.Path(model_directory) / CONFIG_FILE
    if not path.is_file() or FORWARD_PARAMETER not in path.read_text(encoding="utf-8", errors="replace"):
        return None
    parameter = _read(path).parameters.get(FORWARD_PARAMETER)
    return parameter.string_value if parameter is not None else None


def served_directories(model_directory: str | os.PathLike[str]) -> tuple[pathlib.Path, ...]:
    """The model directories Triton must load to serve ``model_directory``: itself, and the batched model behind it."""
    path = pathlib.Path(model_directory)
    target = forward_target(path)
    return (path,) if target is None else (path, path.with_name(target))


def files_directory(model_directory: str | os.PathLike[str]) -> pathlib.Path:
    """Where the model's files are: the batched directory behind a front, else ``model_directory`` itself."""
    return served_directories(model_directory)[-1]


def _read(path: pathlib.Path) -> model_config_pb2.ModelConfig:
    return text_format.Parse(path.read_text(encoding="utf-8"), model_config_pb2.ModelConfig())
