"""The optional dependencies of the export, imported on first use.

``mlflow_triton.export`` itself imports none of them, so ``import mlflow_triton``
never pays for them and a missing one is named with the extra that installs it.
"""

import importlib

EXTRA_HINT = "pip install 'mlflow-triton[onnx]'"


class MissingExtraError(ImportError):
    """An optional dependency of the export is not installed; the message names the extra."""


def require(module_name, purpose):
    """Import ``module_name`` or raise ImportError naming the extra to install."""
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise MissingExtraError(
            f"mlflow_triton.export needs {module_name} for {purpose}: {EXTRA_HINT} "
            f"(installs skl2onnx, onnxruntime, onnx, onnxscript and hypothesis)"
        ) from error


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
