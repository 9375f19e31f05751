"""Properties of the contract and of signature -> config.pbtxt over arbitrary, hostile signatures."""

import json
import re

import pytest
from google.protobuf import json_format
from hypothesis import given
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema

from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import build_config, declarations, parse_config, render_config
from mlflow_triton.shared_contract import BYTES_TYPE, Contract, ContractError, FieldMapping, contract_from_model_config
from tests.property.strategies import contracts, names_with_surrogates, signatures

TENSOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _specs(schema):
    return schema.inputs


@given(contracts())
def test_contract_round_trip_is_identity_when_serialised_through_dict_and_json(contract):
    as_json = json.dumps(contract.to_dict())

    assert Contract.from_dict(json.loads(as_json)) == contract
    assert Contract.from_dict(contract.to_dict()) == contract
    assert Contract.from_json(contract.to_json()) == contract


@given(contracts())
def test_contract_json_is_ascii_and_stable_when_serialised_twice(contract):
    text = contract.to_json()

    assert text.isascii()
    assert Contract.from_json(text).to_json() == text


@given(signatures)
def test_config_round_trip_is_identity_when_rendered_and_parsed(signature):
    layout = layout_from_signature(signature, "sklearn")
    config = build_config("model", layout)

    text = render_config(config)
    parsed, contract = parse_config(text)

    assert contract == layout.contract
    assert parsed == config
    assert declarations(parsed) == (layout.inputs, layout.outputs)


@given(signatures)
def test_contract_from_model_config_returns_layout_contract_when_config_is_triton_json(signature):
    layout = layout_from_signature(signature, "sklearn")
    parsed, _ = parse_config(render_config(build_config("model", layout)))

    as_triton_json = json_format.MessageToDict(parsed, preserving_proto_field_name=True)

    assert contract_from_model_config(as_triton_json) == layout.contract


@given(signatures)
def test_tensor_names_are_unique_and_safe_when_mapped_from_any_signature(signature):
    layout = layout_from_signature(signature, "sklearn")
    tensors = [d.name for d in layout.inputs + layout.outputs]

    assert len(tensors) == len(set(tensors))
    assert all(TENSOR_NAME.fullmatch(name) for name in tensors), tensors
    assert tensors == list(layout.contract.inputs.tensor_names + layout.contract.outputs.tensor_names)


@given(signatures)
def test_original_names_are_preserved_exactly_when_mapped_from_any_signature(signature):
    contract = layout_from_signature(signature, "sklearn").contract

    assert [f.name for f in contract.inputs.fields] == [s.name for s in _specs(signature.inputs)]
    assert [f.name for f in contract.outputs.fields] == [s.name for s in _specs(signature.outputs)]


@given(signatures)
def test_structure_and_declarations_follow_schema_when_mapped_from_any_signature(signature):
    layout = layout_from_signature(signature, "sklearn")

    for schema, mapping, declared in (
        (signature.inputs, layout.contract.inputs, layout.inputs),
        (signature.outputs, layout.contract.outputs, layout.outputs),
    ):
        specs = _specs(schema)
        if isinstance(specs[0], ColSpec):
            assert mapping.structure == "columns"
            assert all(d.dims == (-1,) for d in declared)
        else:
            assert mapping.structure == ("tensor" if len(specs) == 1 else "tensors")
            assert [d.dims for d in declared] == [tuple(s.shape) for s in specs]
        assert all((d.data_type == BYTES_TYPE) == (f.content is not None) for d, f in zip(declared, mapping.fields))


@given(signatures)
def test_layout_is_deterministic_when_same_signature_is_mapped_twice(signature):
    assert layout_from_signature(signature, "sklearn") == layout_from_signature(signature, "sklearn")


@given(names_with_surrogates)
def test_field_mapping_raises_naming_field_when_name_contains_surrogates(name):
    with pytest.raises(ContractError, match=re.escape(f"Field {name!r}: name {name!r} contains surrogate code points")):
        FieldMapping(name, "tensor")


@given(names_with_surrogates)
def test_layout_raises_naming_field_when_column_name_contains_surrogates(name):
    signature = ModelSignature(inputs=Schema([ColSpec("double", name)]), outputs=Schema([ColSpec("double", "y")]))

    with pytest.raises(ContractError, match=re.escape(f"Field {name!r}: name {name!r}")):
        layout_from_signature(signature, "sklearn")
