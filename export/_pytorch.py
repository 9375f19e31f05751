"""PyTorch -> ONNX with ``torch.onnx.export`` (the torch.export-based exporter).

The module ``pyfunc.predict`` calls is exported on CPU with the logged input
tensor's name, and every axis the signature declares ``-1`` (the batch axis
always) is dynamic. The exporter traces with the saved example, repeated to at
least two entries along each dynamic axis (torch.export treats sizes 0 and 1 as
constants). An op or a shape the exporter refuses stops the export with its
message and what to do instead.
"""

import contextlib
import re
import warnings

import numpy as np

from mlflow_triton.command_line import quiet_logger

from . import _deps
from ._errors import UnsupportedModelError
from ._tensors import at_op

WHAT_TO_DO = (
    "What to do: rewrite that part of forward() with operations torch.onnx supports (or register a custom "
    "translation and export yourself with torch.onnx.export(..., custom_translation_table=...)); until then keep "
    "serving the generated Python-backend repository, which runs the module as logged"
)


def convert(source):
    """``(onnx ModelProto, converter description)`` for a logged PyTorch module."""
    import torch  # installed with every logged PyTorch model

    onnxscript = _deps.require("onnxscript")
    contract = source.layout.contract
    for side, mapping in (("input", contract.inputs), ("output", contract.outputs)):
        if mapping.structure != "tensor":
            raise UnsupportedModelError(
                f"The logged PyTorch model's {side} is {mapping.structure!r}; export-onnx handles one tensor in and "
                "one tensor out"
            )
    [declared_input], [declared_output] = source.layout.inputs, source.layout.outputs
    module = source.raw_model()
    training = [name or type(module).__name__ for name, m in module.named_modules() if m.training]
    if training:
        raise UnsupportedModelError(f"Submodule `{training[0]}` is in training mode; log the model after model.eval()")
    example = _repeat_dynamic_axes(source.example_tensors[declared_input.name], declared_input.dims)
    dynamic = {
        axis: torch.export.Dim("batch" if axis == 0 else f"axis_{axis}", min=1)
        for axis, size in enumerate(declared_input.dims)
        if size == -1
    }
    try:
        with _quiet_exporter():
            program = torch.onnx.export(
                module,
                (torch.from_numpy(example),),
                dynamo=True,
                input_names=[declared_input.name],
                output_names=[declared_output.name],
                dynamic_shapes=(dynamic,),
                verbose=False,
                report=False,
            )
    except Exception as error:
        raise UnsupportedModelError(_export_failure(module, error, torch.__version__)) from error
    return program.model_proto, converter_record(torch, onnxscript, dynamic_axes={declared_input.name: sorted(dynamic)})


def converter_record(torch, onnxscript, **details):
    """handoff.json's ``converter`` for a graph written by ``torch.onnx.export``."""
    return {
        "name": "torch.onnx.export",
        "version": torch.__version__,
        "exporter": "torch.export (dynamo=True)",
        "torch_version": torch.__version__,
        "onnxscript_version": onnxscript.__version__,
        **details,
    }


@contextlib.contextmanager
def _quiet_exporter():
    """The exporter logs a warning per optional torchvision op and deprecation notices; its errors still raise."""
    with quiet_logger("torch.onnx"), warnings.catch_warnings():
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=DeprecationWarning)
        yield


def _repeat_dynamic_axes(example, dims):
    for axis, size in enumerate(dims):
        if size == -1 and example.shape[axis] < 2:
            example = np.concatenate([example, example], axis=axis)
    return np.ascontiguousarray(example)


def _export_failure(module, error, version):
    """The exporter's own summary (its first cause) and the op it names, without terminal colours."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    summary = text.split("## Exception summary", 1)[-1]
    lines = [
        line.strip()
        for line in summary.splitlines()
        if line.strip() and line.strip() != "\u2b06\ufe0f" and not line.strip().startswith("(Refer")
    ]
    detail = (lines[0] if lines else f"{type(error).__name__}: {text}")[:800]
    where = at_op(text, r"op='([\w.]+)'", r"torch\.ops\.([\w]+\.[\w]+)", r"(aten::[\w.]+)")
    return (
        f"torch.onnx.export (torch {version}) could not export {type(module).__name__}{where}: {detail}. {WHAT_TO_DO}"
    )
