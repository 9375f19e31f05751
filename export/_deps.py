"""The optional dependencies of the export, imported on first use.

``mlflow_triton.export`` itself imports none of them, so ``import mlflow_triton``
never pays for them and a missing one is named with the extra that installs it
and what the export needs it for (:data:`PURPOSES`).
"""

from mlflow_triton.errors import require_extra

#: The modules of the ``onnx`` extra the export imports, each with what it is needed for.
PURPOSES = {
    "skl2onnx": "converting scikit-learn models",
    "skl2onnx.sklapi": "casting tree inputs to float32 as scikit-learn does",
    "onnxruntime": "the parity check",
    "onnx": "reading and editing ONNX graphs",
    "onnxscript": "torch.onnx.export's exporter",
    "hypothesis": "generating the parity check's inputs",
}
#: What the extra installs, said after the command that installs it.
EXTRA_CONTENTS = "installs skl2onnx, onnxruntime, onnx, onnxscript and hypothesis"


def require(module_name, purpose=None):
    """Import ``module_name`` or raise ``MissingExtraError`` naming the ``onnx`` extra and ``purpose`` (by default
    the module's in :data:`PURPOSES`)."""
    purpose = purpose or PURPOSES[module_name]
    return require_extra(module_name, "onnx", f"mlflow_triton.export needs {module_name} for {purpose}", EXTRA_CONTENTS)
