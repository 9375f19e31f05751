"""The exported model's config.pbtxt: Triton's own ``ModelConfig``, batching on.

``--backend onnxruntime``: ``platform: "onnxruntime_onnx"``, served by Triton's
ONNX Runtime backend from ``1/model.onnx``. ``--backend python``: ``backend:
"python"``, served by the generated ``1/model.py``. Both state
``max_batch_size``, ``dynamic_batching {}``, one CPU instance and the tensors
without their batch axis.
"""

from tritonclient.grpc import model_config_pb2

from mlflow_triton.repository.config import render_config

BACKENDS = ("onnxruntime", "python")
ONNX_PLATFORM = "onnxruntime_onnx"
ONNX_FILENAME = "model.onnx"


def build_export_config(name, inputs, outputs, *, backend, max_batch_size):
    """A ``ModelConfig`` for ``ExportedTensor`` inputs and outputs."""
    config = model_config_pb2.ModelConfig(name=name, max_batch_size=max_batch_size)
    if backend == "onnxruntime":
        config.platform = ONNX_PLATFORM
    else:
        config.backend = "python"
    config.input.extend(_entry(model_config_pb2.ModelInput, t) for t in inputs)
    config.output.extend(_entry(model_config_pb2.ModelOutput, t) for t in outputs)
    config.dynamic_batching.SetInParent()
    config.instance_group.append(
        model_config_pb2.ModelInstanceGroup(count=1, kind=model_config_pb2.ModelInstanceGroup.KIND_CPU)
    )
    return config


def _entry(message, tensor):
    entry = message(name=tensor.name, data_type=model_config_pb2.DataType.Value(tensor.data_type), dims=tensor.dims)
    if tensor.reshaped:
        entry.reshape.SetInParent()  # the graph holds [batch]: reshape { shape: [] }
    return entry


__all__ = ["BACKENDS", "ONNX_FILENAME", "ONNX_PLATFORM", "build_export_config", "render_config"]
