"""config.pbtxt: build Triton's own ``ModelConfig`` protobuf, then write or parse it.

Building and writing are separate steps (as in PyTriton's generator/parser):
``build_config`` returns the protobuf, ``write_config`` renders it in protobuf
text format (which applies protobuf string escaping to the contract JSON), and
``read_config`` is the exact inverse.
"""

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from mlflow_triton.runtime import RUNTIME_VERSION
from mlflow_triton.shared_contract import CONTRACT_PARAMETER, Contract, ContractError

from ._schema import TensorDeclaration
from .errors import InvalidArgumentError

RUNTIME_VERSION_PARAMETER = "mlflow_triton_runtime_version"
_MAX_BATCH_SIZE_FIELD = model_config_pb2.ModelConfig.DESCRIPTOR.fields_by_name["max_batch_size"]
DEVICE_KINDS = {
    "cpu": model_config_pb2.ModelInstanceGroup.KIND_CPU,
    "gpu": model_config_pb2.ModelInstanceGroup.KIND_GPU,
}


def build_config(model_name, layout, device="cpu"):
    """A ``ModelConfig`` for the Python backend from a ``TensorLayout``."""
    if device not in DEVICE_KINDS:
        raise InvalidArgumentError(f"device {device!r} is not supported; supported: {', '.join(DEVICE_KINDS)}")
    config = model_config_pb2.ModelConfig(name=model_name, backend="python", max_batch_size=0)
    config.input.extend(_tensor_entry(model_config_pb2.ModelInput, d) for d in layout.inputs)
    config.output.extend(_tensor_entry(model_config_pb2.ModelOutput, d) for d in layout.outputs)
    config.instance_group.append(model_config_pb2.ModelInstanceGroup(count=1, kind=DEVICE_KINDS[device]))
    config.parameters[CONTRACT_PARAMETER].string_value = layout.contract.to_json()
    config.parameters[RUNTIME_VERSION_PARAMETER].string_value = RUNTIME_VERSION
    return config


def _tensor_entry(message, declaration):
    return message(
        name=declaration.name,
        data_type=model_config_pb2.DataType.Value(declaration.data_type),
        dims=list(declaration.dims),
    )


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
    """config.pbtxt text -> (ModelConfig, Contract); the contract is checked against the tensors."""
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    if CONTRACT_PARAMETER not in config.parameters:
        raise ContractError(f"config.pbtxt has no '{CONTRACT_PARAMETER}' parameter")
    contract = Contract.from_json(config.parameters[CONTRACT_PARAMETER].string_value)
    contract.check_tensors([t.name for t in config.input], [t.name for t in config.output])
    return config, contract


def write_config(config, path):
    path.write_text(render_config(config), encoding="utf-8")


def read_config(path):
    return parse_config(path.read_text(encoding="utf-8"))


def declarations(config):
    """The config's tensor entries as ``TensorDeclaration`` (inputs, outputs)."""

    def convert(entries):
        return tuple(
            TensorDeclaration(
                name=e.name,
                data_type=model_config_pb2.DataType.Name(e.data_type),
                dims=tuple(int(d) for d in e.dims),
            )
            for e in entries
        )

    return convert(config.input), convert(config.output)
