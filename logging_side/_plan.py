"""``Plan``: everything the packaging flow decided and checked before the first byte is written.

``_packaging`` makes it; the stages that write (``_build``, ``_repository_files``, ``_model_log``) read it. It lives
below all of them, so the stages import downwards only.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from . import _batching

if TYPE_CHECKING:
    from mlflow.models import ModelSignature

    from ._framework import Framework


@dataclasses.dataclass(frozen=True, kw_only=True)
class Plan:
    """Everything decided and checked before the first byte is written; each field keeps its name through the
    stages that read it."""

    framework: Framework
    model: Any
    input_example: Any  # as the caller gave it, params included: what the native flavor saves
    options: dict[str, Any]  # for mlflow.<flavor>.save_model
    declared_init_kwargs: Any
    signature: ModelSignature | None | bool  # as MLflow records it (False: none)
    layout: Any  # the mapping (_schema.layout_from_signature)
    tensors: dict[str, Any]  # the example as the Triton tensors a client sends
    validation: dict[str, Any] | None  # None: validate the saved artifact once it exists
    device: str
    triton_model_name: str
    recorded_warnings: tuple[str, ...]  # custom-code and missing-requirement warnings, recorded in validation.json
    batching: _batching.Batching = _batching.Batching()
    batching_proof: dict[str, Any] | None = None  # the row-independence record of a batched model
    example_params: dict[str, Any] | None = None  # the params of an ``(input, params)`` example, in the request
    lineage: dict[str, Any] | None = None  # where the model came from (add_repository), recorded in validation.json
    output_mapping: dict[str, Any] | None = None  # outputs mapped from the example's prediction: why
    protocol_reason: str | None = None  # why the repository speaks its protocol (``_protocol``)
    stream: bool = False  # also write ``<name>_stream``, the model decoupled, streaming predict_stream
