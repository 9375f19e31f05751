"""What a repository holds: its folders and files, and the tensors its config declares.

A model directory is ``<name>/config.pbtxt`` plus ``<name>/1/model.py`` and the MLflow package under
``<name>/1/artifact/``, with the ready-to-send request, ``requirements.txt``, ``validation.json`` and, for
PyTorch and Transformers, ``architecture.json`` beside the config. ``TensorLayout`` is what a signature becomes:
the contract plus the config's tensor entries; :func:`codecs_for` reads and writes its tensors with the
runtime's own codecs, so a client's request and the model's answer are encoded by the code that serves them.
"""

import dataclasses
import pathlib

from mlflow_triton.runtime.codecs import StructureCodec
from mlflow_triton.runtime.loading import ARTIFACT_DIRECTORY  # the runtime's, defined once
from mlflow_triton.shared_contract import Contract

#: The folder of the MLflow model that holds the Triton repository (one model directory inside it).
REPOSITORY_DIRECTORY = "model_repository"
#: The one model version a repository ships; Triton serves ``<name>/1/``.
VERSION_DIRECTORY = "1"
CONFIG_FILE = "config.pbtxt"
MODEL_FILE = "model.py"
REQUIREMENTS_FILE = "requirements.txt"
VALIDATION_FILE = "validation.json"
#: A streaming model's ready-to-send ``generate_stream`` body: ``{"request": <the body of request.json's tensor>}``.
STREAM_REQUEST_FILE = "stream_request.json"
ARCHITECTURE_FILE = "architecture.json"
#: MLflow's descriptor of a package (``mlflow.models.model.MLMODEL_FILE_NAME``): ``<version>/artifact/MLmodel`` marks a
#: complete copy of the logged model.
MLMODEL_FILE = "MLmodel"


def artifact_directory(model_directory):
    """``<model directory>/1/artifact``: the copy of the MLflow package that the generated model.py loads."""
    return pathlib.Path(model_directory) / VERSION_DIRECTORY / ARTIFACT_DIRECTORY


@dataclasses.dataclass(frozen=True)
class TensorDeclaration:
    """One ``input``/``output`` entry of config.pbtxt."""

    name: str
    data_type: str
    dims: "tuple[int, ...]"
    optional: bool = False  # a request may leave the tensor out (config.pbtxt: ``optional: true``)


@dataclasses.dataclass(frozen=True)
class TensorLayout:
    """What a signature becomes: the contract plus the config's tensor entries."""

    contract: Contract
    inputs: "tuple[TensorDeclaration, ...]"
    outputs: "tuple[TensorDeclaration, ...]"


def unbatchable_tensor(layout):
    """The first ``(side, declaration)`` of ``layout`` (``"input"`` or ``"output"``) whose first axis is not -1, or
    None: Triton's dynamic batching joins requests along the first axis of every input and output tensor, so each
    must be variable. A batched repository (``max_batch_size``) and a batching export both refuse what this finds.
    """
    for side, declarations in (("input", layout.inputs), ("output", layout.outputs)):
        for declaration in declarations:
            if declaration.dims[0] != -1:
                return side, declaration
    return None


def codecs_for(layout):
    """(input codec, output codec) over the layout's declarations: the runtime's own codecs."""

    def types(declarations):
        return {d.name: (d.data_type, d.dims) for d in declarations}

    return (
        StructureCodec(layout.contract.inputs, types(layout.inputs)),
        StructureCodec(layout.contract.outputs, types(layout.outputs), prediction=True),
    )
