"""The optional dependencies of the export, imported on first use.

``mlflow_triton.export`` itself imports none of them, so ``import mlflow_triton``
never pays for them and a missing one is named with the extra that installs it.
"""

from mlflow_triton.errors import require_extra

#: What the extra installs, said after the command that installs it.
EXTRA_CONTENTS = "installs skl2onnx, onnxruntime, onnx, onnxscript and hypothesis"


def require(module_name, purpose):
    """Import ``module_name`` or raise ``MissingExtraError`` naming the ``onnx`` extra."""
    return require_extra(module_name, "onnx", f"mlflow_triton.export needs {module_name} for {purpose}", EXTRA_CONTENTS)


def onnx():
    return require("onnx", "reading and editing ONNX graphs")


def onnxruntime():
    return require("onnxruntime", "the parity check")


def hypothesis():
    return require("hypothesis", "generating the parity check's inputs")


def skl2onnx():
    return require("skl2onnx", "converting scikit-learn models")


def onnxscript():
    return require("onnxscript", "torch.onnx.export's exporter")


def skl2onnx_sklapi():
    return require("skl2onnx.sklapi", "casting tree inputs to float32 as scikit-learn does")
