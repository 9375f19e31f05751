"""config.pbtxt: ``build_config`` (protobuf), ``render_config`` / ``parse_config`` (text)."""

import re

import numpy as np
import pytest
from google.protobuf import json_format, text_format
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema, TensorSpec
from tritonclient.grpc import model_config_pb2

from mlflow_triton._batching import Batching, batched_layout
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.errors import InvalidArgumentError
from mlflow_triton.repository.config import (
    RUNTIME_VERSION_PARAMETER,
    build_config,
    declarations,
    parse_config,
    read_config,
    render_config,
    write_config,
)
from mlflow_triton.runtime import RUNTIME_VERSION
from mlflow_triton.shared_contract import CONTRACT_PARAMETER, Contract, ContractError, contract_from_model_config

# "" is left out: the mapping rejects it (MLflow takes it for an unnamed field).
HOSTILE = ["a b", "a_b", "a-b", '"quoted"', "back\\slash", "{braces}", "new\nline", "{}", "1st", "ünï", "名前"]


def _layout(inputs=None, outputs=None):
    inputs = inputs or Schema([ColSpec("double", "x"), ColSpec("string", "name")])
    outputs = outputs or Schema([TensorSpec(np.dtype("float32"), (-1, 3))])
    return layout_from_signature(ModelSignature(inputs=inputs, outputs=outputs), "sklearn")


def test_build_config_declares_python_backend_without_batching_when_built():
    config = build_config("model", _layout())

    assert config.name == "model"
    assert config.backend == "python"
    assert config.max_batch_size == 0


def test_render_config_states_max_batch_size_zero_when_batching_is_off():
    text = render_config(build_config("model", _layout()))

    assert text.splitlines()[:2] == ['name: "model"', "max_batch_size: 0"]
    assert text.count("max_batch_size") == 1


def test_render_config_writes_max_batch_size_once_in_field_order_when_batching_is_on():
    config = build_config("model", batched_layout(_layout(), Batching(max_batch_size=8)))

    text = render_config(config)

    assert text.splitlines()[:2] == ['name: "model"', "max_batch_size: 8"]
    assert text.count("max_batch_size:") == 1
    assert parse_config(text)[0] == config


def test_render_config_matches_protobuf_text_format_apart_from_the_zero_line_when_rendered():
    config = build_config("model", _layout(), device="gpu")

    assert render_config(config).replace("max_batch_size: 0\n", "") == text_format.MessageToString(config)


def test_build_config_declares_layout_tensors_when_built():
    layout = _layout()

    config = build_config("model", layout)

    assert [(t.name, model_config_pb2.DataType.Name(t.data_type), list(t.dims)) for t in config.input] == [
        ("x", "TYPE_FP64", [-1]),
        ("name", "TYPE_STRING", [-1]),
    ]
    assert [(t.name, model_config_pb2.DataType.Name(t.data_type), list(t.dims)) for t in config.output] == [
        ("output_0", "TYPE_FP32", [-1, 3]),
    ]
    assert declarations(config) == (layout.inputs, layout.outputs)


def test_build_config_stores_contract_and_runtime_version_when_built():
    layout = _layout()

    config = build_config("model", layout)

    assert Contract.from_json(config.parameters[CONTRACT_PARAMETER].string_value) == layout.contract
    assert config.parameters[RUNTIME_VERSION_PARAMETER].string_value == RUNTIME_VERSION


@pytest.mark.parametrize(
    ("device", "kind"),
    [("cpu", model_config_pb2.ModelInstanceGroup.KIND_CPU), ("gpu", model_config_pb2.ModelInstanceGroup.KIND_GPU)],
)
def test_build_config_sets_instance_kind_when_device_is_supported(device, kind):
    config = build_config("model", _layout(), device=device)

    assert [(g.count, g.kind) for g in config.instance_group] == [(1, kind)]


@pytest.mark.parametrize("device", ["tpu", "GPU", "cuda:0", None])
def test_build_config_raises_naming_allowed_devices_when_device_is_unknown(device):
    with pytest.raises(
        InvalidArgumentError, match=re.escape(f"device {device!r} is not supported; supported: cpu, gpu")
    ):
        build_config("model", _layout(), device=device)


def test_parse_config_inverts_render_config_when_names_are_hostile():
    layout = _layout(
        inputs=Schema([ColSpec("string", n) for n in HOSTILE]),
        outputs=Schema([TensorSpec(np.dtype(bytes), (-1,), n) for n in HOSTILE]),
    )
    config = build_config("model", layout, device="gpu")

    text = render_config(config)
    parsed, contract = parse_config(text)

    assert text.isascii()
    assert parsed == config
    assert contract == layout.contract
    assert [f.name for f in contract.inputs.fields] == HOSTILE
    assert [f.name for f in contract.outputs.fields] == HOSTILE


def test_read_config_inverts_write_config_when_written_to_disk(tmp_path):
    config = build_config("model", _layout())
    path = tmp_path / "config.pbtxt"

    write_config(config, path)

    assert read_config(path) == (config, _layout().contract)


def test_contract_from_model_config_reads_contract_when_config_is_triton_json():
    layout = _layout(inputs=Schema([ColSpec("long", n) for n in HOSTILE]))
    config = build_config("model", layout)
    as_triton_json = json_format.MessageToDict(config, preserving_proto_field_name=True)

    assert contract_from_model_config(as_triton_json) == layout.contract


def test_parse_config_raises_when_contract_parameter_is_missing():
    config = build_config("model", _layout())
    del config.parameters[CONTRACT_PARAMETER]

    with pytest.raises(ContractError, match="config.pbtxt: Model config has no 'mlflow_contract' parameter"):
        parse_config(render_config(config))


def test_parse_config_raises_when_config_tensor_is_renamed():
    config = build_config("model", _layout())
    config.input[0].name = "renamed"

    with pytest.raises(
        ContractError, match=re.escape("Config input tensor(s) renamed have no entry in 'mlflow_contract'")
    ):
        parse_config(render_config(config))


def test_parse_config_raises_when_contract_version_is_unsupported():
    config = build_config("model", _layout())
    text = render_config(config).replace('\\"version\\":2', '\\"version\\":7')

    with pytest.raises(ContractError, match="Mapping version 7 is not supported"):
        parse_config(text)


# -- dynamic batching ------------------------------------------------------------------------------


def _batched_config(max_queue_delay_microseconds=None):
    layout = batched_layout(_layout(), Batching(max_batch_size=16))
    return build_config("model", layout, max_queue_delay_microseconds=max_queue_delay_microseconds)


def test_build_config_leaves_the_batch_axis_out_of_dims_when_batching_is_on():
    config = _batched_config()

    assert config.max_batch_size == 16
    # each input reshaped to [1, *dims], never to [] (a 0-row request then stops Triton 2.51: docs/batching.md)
    assert [(t.name, list(t.dims), list(t.reshape.shape)) for t in config.input] == [
        ("x", [1], [1]),
        ("name", [1], [1]),
    ]
    assert [(t.name, list(t.dims), t.HasField("reshape")) for t in config.output] == [("output_0", [3], False)]


def test_build_config_reshapes_a_rank_k_input_to_a_row_axis_and_declarations_read_it_back_as_logged():

    signature = ModelSignature(
        inputs=Schema([TensorSpec(np.dtype("float32"), (-1, -1, 4), "x")]),
        outputs=Schema([TensorSpec(np.dtype("float32"), (-1,))]),
    )
    layout = batched_layout(layout_from_signature(signature, "pytorch"), Batching(max_batch_size=8))
    config = build_config("model", layout)

    assert [(t.name, list(t.dims), list(t.reshape.shape)) for t in config.input] == [("x", [-1, 4], [1, -1, 4])]
    assert [(t.name, list(t.dims), list(t.reshape.shape)) for t in config.output] == [("output_0", [1], [])]
    inputs, outputs = declarations(config)
    assert [(d.name, d.dims) for d in inputs] == [("x", (-1, -1, 4))]
    assert [(d.name, d.dims) for d in outputs] == [("output_0", (-1,))]
    assert parse_config(render_config(config))[0] == config  # core accepts it: tests/e2e load it


def test_build_config_writes_dynamic_batching_with_the_queue_delay_when_given():
    config = _batched_config(max_queue_delay_microseconds=500)

    assert config.HasField("dynamic_batching")
    assert config.dynamic_batching.max_queue_delay_microseconds == 500
    assert "dynamic_batching {\n  max_queue_delay_microseconds: 500\n}" in render_config(config)


def test_build_config_writes_no_dynamic_batching_when_batching_is_off():
    config = build_config("model", _layout())

    assert not config.HasField("dynamic_batching")
    assert all(not t.HasField("reshape") for t in [*config.input, *config.output])


def test_declarations_restore_the_logged_dims_when_the_config_is_batched():
    layout = batched_layout(_layout(), Batching(max_batch_size=16))
    config, contract = parse_config(render_config(build_config("model", layout)))

    assert declarations(config) == (layout.inputs, layout.outputs)
    assert contract == layout.contract
    assert contract.version == 3 and contract.max_batch_size == 16


def test_contract_from_model_config_accepts_the_batched_config_it_records():
    config = json_format.MessageToDict(_batched_config(), preserving_proto_field_name=True)

    assert contract_from_model_config(config).max_batch_size == 16


def test_contract_from_model_config_raises_when_max_batch_size_differs_from_the_contract():
    config = json_format.MessageToDict(_batched_config(), preserving_proto_field_name=True)
    config["max_batch_size"] = 8

    with pytest.raises(ContractError, match="max_batch_size must be 16 as 'mlflow_contract' records .*got 8"):
        contract_from_model_config(config)


def test_parse_config_raises_when_max_batch_size_differs_from_the_contract():
    text = render_config(_batched_config()).replace("max_batch_size: 16", "max_batch_size: 4")

    with pytest.raises(
        ContractError, match="config.pbtxt: max_batch_size must be 16 as 'mlflow_contract' records .*got 4"
    ):
        parse_config(text)
