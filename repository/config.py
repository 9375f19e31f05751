"""config.pbtxt: build Triton's own ``ModelConfig`` protobuf, then write or parse it.

Building and writing are separate steps (as in PyTriton's generator/parser):
``build_config`` returns the protobuf, ``write_config`` renders it in protobuf
text format (which applies protobuf string escaping to the contract JSON), and
``read_config`` is the exact inverse. Reading goes through the runtime's own
readers, on the JSON form Triton hands the Python backend
(:func:`as_model_config_json`): the contract and ``max_batch_size`` check of
``shared_contract.contract_from_model_config`` and the batched-dims rule of
``runtime.codecs.tensor_types_from_model_config`` exist once, for both forms.
"""

import pathlib

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from mlflow_triton.errors import InvalidArgumentError
from mlflow_triton.runtime import RUNTIME_VERSION
from mlflow_triton.runtime.codecs import tensor_types_from_model_config
from mlflow_triton.shared_contract import CONTRACT_PARAMETER, ContractError, contract_from_model_config

from .layout import TensorDeclaration

RUNTIME_VERSION_PARAMETER = "mlflow_triton_runtime_version"
#: The parameter naming a packed environment the model carries (``mlflow-triton pack`` writes it).
ENV_PATH_PARAMETER = "EXECUTION_ENV_PATH"
_MAX_BATCH_SIZE_FIELD = model_config_pb2.ModelConfig.DESCRIPTOR.fields_by_name["max_batch_size"]
DEVICE_KINDS = {
    "cpu": model_config_pb2.ModelInstanceGroup.KIND_CPU,
    "gpu": model_config_pb2.ModelInstanceGroup.KIND_GPU,
}


def decoupled_config(config, model_name):
    """A copy of ``config`` named ``model_name`` and decoupled (``model_transaction_policy { decoupled: true }``):
    a streaming model, which Triton serves over gRPC streams and HTTP ``generate_stream`` only."""
    streaming = model_config_pb2.ModelConfig()
    streaming.CopyFrom(config)
    streaming.name = model_name
    streaming.model_transaction_policy.decoupled = True
    return streaming


def build_config(model_name, layout, device="cpu", max_queue_delay_microseconds=None):
    """A ``ModelConfig`` for the Python backend from a ``TensorLayout``.

    A batched contract (``max_batch_size > 0``) gets ``dynamic_batching`` and dims without the batch
    axis (``[1]`` for a rank-one tensor, sent and answered as ``[rows, 1]``). Each input also gets
    ``reshape { shape: [1, *dims] }`` (:func:`_row_axis_reshape`), never an empty one; a rank-one output
    keeps ``reshape { shape: [] }`` (Triton applies an output's reshape itself).
    ``max_queue_delay_microseconds`` goes into ``dynamic_batching``.
    """
    if device not in DEVICE_KINDS:
        raise InvalidArgumentError(f"device {device!r} is not supported; supported: {', '.join(DEVICE_KINDS)}")
    max_batch_size = layout.contract.max_batch_size
    config = model_config_pb2.ModelConfig(name=model_name, backend="python", max_batch_size=max_batch_size)
    batched = max_batch_size > 0
    config.input.extend(_tensor_entry(model_config_pb2.ModelInput, d, batched) for d in layout.inputs)
    config.output.extend(_tensor_entry(model_config_pb2.ModelOutput, d, batched) for d in layout.outputs)
    if batched:
        config.dynamic_batching.SetInParent()
        if max_queue_delay_microseconds is not None:
            config.dynamic_batching.max_queue_delay_microseconds = max_queue_delay_microseconds
    config.instance_group.append(model_config_pb2.ModelInstanceGroup(count=1, kind=DEVICE_KINDS[device]))
    config.parameters[CONTRACT_PARAMETER].string_value = layout.contract.to_json()
    config.parameters[RUNTIME_VERSION_PARAMETER].string_value = RUNTIME_VERSION
    return config


def _tensor_entry(message, declaration, batched=False):
    entry = message(
        name=declaration.name,
        data_type=model_config_pb2.DataType.Value(declaration.data_type),
        dims=list(declaration.dims[1:] if batched else declaration.dims) or [1],
    )
    if batched and message is model_config_pb2.ModelInput:
        entry.reshape.shape.extend(_row_axis_reshape(declaration.dims[1:]))
    elif batched and len(declaration.dims) == 1:
        entry.reshape.SetInParent()  # an output's reshape { shape: [] }: the model answers [rows]
    if declaration.optional:
        entry.optional = True  # a request may leave it out (inputs only: the contract refuses optional outputs)
    return entry


def _row_axis_reshape(row_dims):
    """An input's reshape in a batched config: ``[1, *row_dims]``, the model sees ``[rows, 1, *row_dims]``.

    Why (Triton 2.51; docs/batching.md, "Requests without rows"): core's ``Normalize`` (core
    ``src/infer_request.cc``) strips the batch axis and applies the reshape to what is left. An empty reshape
    leaves the Python backend a request of shape ``[]`` when it claims 0 rows, whose first dimension it reads
    through a null pointer (python_backend ``src/python_be.cc``, ``CheckIncomingRequests``) and the server dies.
    With ``[1, ...]`` a request that claims 0 rows is either refused by core (its byte size) or reaches the model
    one axis short, counted as one row as the dynamic batcher counts it, and the runtime answers it with a 400.
    """
    return [1, *row_dims]


def render_config(config):
    """config.pbtxt text. ``max_batch_size: 0`` is written explicitly (protobuf text format
    drops zero scalars), so a reader sees "no batching"; fields keep their canonical order."""
    if config.max_batch_size != 0:
        return text_format.MessageToString(config)
    head, tail = model_config_pb2.ModelConfig(), model_config_pb2.ModelConfig()
    head.CopyFrom(config)
    tail.CopyFrom(config)
    for field in config.DESCRIPTOR.fields:
        (tail if field.number < _MAX_BATCH_SIZE_FIELD.number else head).ClearField(field.name)
    return text_format.MessageToString(head) + "max_batch_size: 0\n" + text_format.MessageToString(tail)


def parse_config(text):
    """config.pbtxt text -> (ModelConfig, Contract); the contract is checked against the tensors and
    ``max_batch_size`` as the runtime checks them when Triton loads the model."""
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    try:
        return config, contract_from_model_config(as_model_config_json(config))
    except ContractError as error:  # the runtime's words, and which file they are about
        raise ContractError(f"config.pbtxt: {error}") from None


def read_model_config(path):
    """config.pbtxt -> ModelConfig, without reading a contract (an export-onnx network carries none)."""
    return text_format.Parse(pathlib.Path(path).read_text(encoding="utf-8"), model_config_pb2.ModelConfig())


def as_model_config_json(config):
    """The ``ModelConfig`` as the JSON dict Triton gives the Python backend (``args["model_config"]``)."""
    return json_format.MessageToDict(config, preserving_proto_field_name=True)


def write_config(config, path):
    path.write_text(render_config(config), encoding="utf-8")


def read_config(path):
    return parse_config(path.read_text(encoding="utf-8"))


def wire_arrays(config, side, arrays):
    """Logged-form arrays (``side``: ``"input"`` or ``"output"``) in the shapes a client sends and Triton answers:
    a batched rank-one tensor (reshaped to ``[]``, or, an input, to ``[1]``) ``[rows]`` becomes ``[rows, 1]``;
    others as they are."""
    reshaped = {
        entry.name for entry in getattr(config, side) if entry.HasField("reshape") and len(entry.reshape.shape) <= 1
    }
    return {name: array.reshape(-1, 1) if name in reshaped else array for name, array in arrays.items()}


def declarations(config):
    """The config's tensor entries as ``TensorDeclaration`` (inputs, outputs), in the logged shapes: with
    ``max_batch_size > 0`` the batch axis ``-1`` first, then the ``reshape`` or the dims, as the runtime reads them."""
    as_json = as_model_config_json(config)

    def convert(side, entries):
        types = tensor_types_from_model_config(as_json, side)
        return tuple(
            TensorDeclaration(
                name=e.name, data_type=types[e.name][0], dims=types[e.name][1], optional=getattr(e, "optional", False)
            )
            for e in entries
        )

    return convert("input", config.input), convert("output", config.output)
