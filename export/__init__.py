"""``mlflow_triton.export``: a logged model -> a batching ONNX Triton model directory.

The ML Engineer's hand-off after logging: [export_onnx][.export_onnx] converts a model
logged by mlflow-triton (scikit-learn with skl2onnx, PyTorch with
``torch.onnx.export``; Transformers and sentence-transformers text models as an
ONNX network behind a tokenizing front, ``_text_export``), proves it answers
like ``pyfunc.predict`` and writes a new ``<name>_onnx/`` directory with
dynamic batching, a ready-to-send request and ``handoff.json``. The logging wrappers and the runtime never import this
part; its converters come with ``pip install 'mlflow-triton[onnx]'``:

    from mlflow_triton.export import export_onnx
    export_onnx("models:/demo-classifier/1", "exports", backend="python")

``mlflow-triton export-onnx MODEL_URI --out DIR`` is the same call from the
command line ([export_command][.export_command]).
"""

from ._command import export_command
from ._errors import ExportError, InvalidArgumentError, ParityError, UnsupportedModelError
from ._export import export_onnx

__all__ = [
    "ExportError",
    "InvalidArgumentError",
    "ParityError",
    "UnsupportedModelError",
    "export_command",
    "export_onnx",
]
