"""The exported model's config.pbtxt: Triton's own ``ModelConfig``, batching on.

``--backend onnxruntime``: ``platform: "onnxruntime_onnx"``, served by Triton's
ONNX Runtime backend from ``1/model.onnx``. ``--backend python``: ``backend:
"python"``, served by the generated ``1/model.py``. Both state
``max_batch_size``, ``dynamic_batching {}``, one CPU instance and the tensors
without their batch axis.

The generated ``model.py`` runs onnxruntime with its thread pool's spinning off
and on the number of threads ``intra_op_thread_count`` names (``THREADS_PARAMETER``,
the name Triton's ONNX Runtime backend reads; the export writes ``SERVED_THREADS``,
0: onnxruntime's default, a thread per core); the parity check runs its session
alike (``session_options``), so the graph is proven as it serves. Measured on 2
shared CPUs (docs/export-onnx.md "Threads"): a pool that spins between runs took
the CPU the server and the text front's 16 instances needed (the tiny BERT's
export served 1.8-2x the requests without it at 4 and 16 clients), while a
network whose layers are the work (all-MiniLM-L6-v2) served 1.2-1.4x more on the
default pool than on one thread.
"""

from tritonclient.grpc import model_config_pb2

from mlflow_triton.repository.config import render_config

BACKENDS = ("onnxruntime", "python")
#: The generated model.py's onnxruntime threads: a config parameter, as Triton's ONNX Runtime backend names it.
THREADS_PARAMETER = "intra_op_thread_count"
SERVED_THREADS = 0  # onnxruntime's default
ONNX_PLATFORM = "onnxruntime_onnx"
ONNX_FILENAME = "model.onnx"


def build_export_config(name, inputs, outputs, *, backend, max_batch_size):
    """A ``ModelConfig`` for ``ExportedTensor`` inputs and outputs."""
    config = batched_config(name, backend=backend, max_batch_size=max_batch_size)
    config.input.extend(_entry(model_config_pb2.ModelInput, t) for t in inputs)
    config.output.extend(_entry(model_config_pb2.ModelOutput, t) for t in outputs)
    return config


def batched_config(name, *, backend, max_batch_size):
    """The part every exported graph's config shares: the engine, batching, one CPU instance; no tensors yet."""
    config = model_config_pb2.ModelConfig(name=name, max_batch_size=max_batch_size)
    if backend == "onnxruntime":
        config.platform = ONNX_PLATFORM
    else:
        config.backend = "python"
        config.parameters[THREADS_PARAMETER].string_value = str(SERVED_THREADS)
    config.dynamic_batching.SetInParent()
    config.instance_group.append(
        model_config_pb2.ModelInstanceGroup(count=1, kind=model_config_pb2.ModelInstanceGroup.KIND_CPU)
    )
    return config


def session_options(onnxruntime):
    """onnxruntime ``SessionOptions`` as the generated model.py sets them (the parity check runs with these)."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = SERVED_THREADS
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _entry(message, tensor):
    entry = message(name=tensor.name, data_type=model_config_pb2.DataType.Value(tensor.data_type), dims=tensor.dims)
    if tensor.reshape is not None:  # never [] for an input: see _tensors
        entry.reshape.SetInParent()
        entry.reshape.shape.extend(tensor.reshape)
    return entry


__all__ = [
    "BACKENDS",
    "ONNX_FILENAME",
    "ONNX_PLATFORM",
    "SERVED_THREADS",
    "THREADS_PARAMETER",
    "batched_config",
    "build_export_config",
    "render_config",
    "session_options",
]
