"""The stdlib-only contract: data model, (de)serialisation and checks against the config."""

import json
import re

import numpy as np
import pytest
from tritonclient.grpc import model_config_pb2

from mlflow_triton.shared_contract import (
    BYTES_TYPE,
    CONTRACT_PARAMETER,
    MAPPING_VERSION,
    NUMPY_TO_TRITON,
    TRITON_TO_NUMPY,
    Contract,
    ContractError,
    FieldMapping,
    MlflowTritonError,
    StructureMapping,
    contract_from_model_config,
    wire_datatype,
)


def _contract(inputs=("a", "b"), outputs=("y",), version=MAPPING_VERSION):
    return Contract(
        flavor="sklearn",
        inputs=StructureMapping("columns", tuple(FieldMapping(f"col {t}", t) for t in inputs)),
        outputs=StructureMapping("tensor", tuple(FieldMapping(None, t) for t in outputs)),
        version=version,
    )


def _model_config(contract_json, inputs=("a", "b"), outputs=("y",), **extra):
    """A dict shaped like Triton's ``args["model_config"]`` after ``json.loads``."""
    config = {
        "name": "model",
        "backend": "python",
        "input": [{"name": n, "data_type": "TYPE_FP64", "dims": ["-1"]} for n in inputs],
        "output": [{"name": n, "data_type": "TYPE_FP64", "dims": ["-1"]} for n in outputs],
        "parameters": {CONTRACT_PARAMETER: {"string_value": contract_json}},
    }
    config.update(extra)
    return config


# --- dtype tables ------------------------------------------------------------------------------


def test_numpy_to_triton_is_exact_inverse_when_compared_with_triton_to_numpy():
    assert len(NUMPY_TO_TRITON) == len(TRITON_TO_NUMPY)
    assert {v: k for k, v in NUMPY_TO_TRITON.items()} == TRITON_TO_NUMPY
    for triton, numpy_name in TRITON_TO_NUMPY.items():
        assert NUMPY_TO_TRITON[numpy_name] == triton


@pytest.mark.parametrize("triton", sorted(TRITON_TO_NUMPY))
def test_triton_to_numpy_names_real_types_when_looked_up_in_triton_and_numpy(triton):
    assert model_config_pb2.DataType.Value(triton)
    assert np.dtype(TRITON_TO_NUMPY[triton]).name == TRITON_TO_NUMPY[triton]


def test_bytes_type_maps_to_object_arrays_when_looked_up():
    assert TRITON_TO_NUMPY[BYTES_TYPE] == "object"


@pytest.mark.parametrize(
    ("config_type", "wire"),
    [("TYPE_FP32", "FP32"), ("TYPE_INT64", "INT64"), ("TYPE_BOOL", "BOOL"), ("TYPE_STRING", "BYTES")],
)
def test_wire_datatype_uses_protocol_name_when_given_config_datatype(config_type, wire):
    assert wire_datatype(config_type) == wire


# --- round trips -------------------------------------------------------------------------------


def test_contract_round_trips_when_serialised_to_dict_and_json():
    contract = Contract(
        flavor="transformers",
        inputs=StructureMapping("tensors", (FieldMapping('text ü "q"', "text", "text"),)),
        outputs=StructureMapping("columns", (FieldMapping(None, "output_0", "binary"),)),
    )

    assert Contract.from_dict(contract.to_dict()) == contract
    assert Contract.from_json(contract.to_json()) == contract


def test_contract_round_trip_keeps_integer_names_when_columns_have_integer_labels():
    contract = Contract(
        flavor="sklearn",
        inputs=StructureMapping("columns", (FieldMapping(0, "_0"), FieldMapping("0", "_0_2"), FieldMapping(1, "_1"))),
        outputs=StructureMapping("tensor", (FieldMapping("scores", "scores"),)),
    )

    restored = Contract.from_json(contract.to_json())

    assert restored == contract
    assert [type(f.name) for f in restored.inputs.fields] == [int, str, int]
    assert restored.outputs.fields[0].name == "scores"


def test_contract_reads_version_one_when_written_by_an_earlier_release():
    data = _contract().to_dict()
    data["version"] = 1

    contract = Contract.from_dict(data)

    assert contract.version == 1
    assert contract.inputs == _contract().inputs


def test_contract_writes_version_two_when_created():
    assert MAPPING_VERSION == 2
    assert json.loads(_contract().to_json())["version"] == 2


def test_contract_json_is_ascii_and_key_sorted_when_names_are_unicode():
    contract = Contract(
        flavor="f",
        inputs=StructureMapping("tensors", (FieldMapping("名前\n", "x"),)),
        outputs=StructureMapping("tensor", (FieldMapping(None, "y"),)),
    )

    text = contract.to_json()

    assert text.isascii()
    assert list(json.loads(text)) == ["flavor", "inputs", "outputs", "version"]
    assert list(json.loads(text)["inputs"]["fields"][0]) == ["content", "name", "tensor"]


def test_contract_is_frozen_when_assigned():
    with pytest.raises(AttributeError, match="cannot assign"):
        _contract().flavor = "other"


def test_structure_mapping_stores_tuple_when_given_list_of_fields():
    mapping = StructureMapping("columns", [FieldMapping("a", "a")])

    assert mapping.fields == (FieldMapping("a", "a"),)


# --- FieldMapping / StructureMapping / Contract validation --------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": 3.0, "tensor": "t"}, "Field name must be a string, an integer or null, got 3.0"),
        ({"name": True, "tensor": "t"}, "Field name must be a string, an integer or null, got True"),
        ({"name": "price", "tensor": ""}, "Field 'price': tensor name must be a non-empty string"),
        ({"name": "price", "tensor": None}, "Field 'price': tensor name must be a non-empty string"),
        (
            {"name": "price", "tensor": "t", "content": "utf16"},
            "Field 'price': content 'utf16' is not supported; supported: text, binary, datetime, json or null",
        ),
    ],
)
def test_field_mapping_raises_when_field_is_malformed(kwargs, message):
    with pytest.raises(ContractError, match=re.escape(message)):
        FieldMapping(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "\ud800\udc00", "tensor": "t"}, "Field '\\ud800\\udc00': name '\\ud800\\udc00' contains surrogate"),
        ({"name": "lone \udcff", "tensor": "t"}, "Field 'lone \\udcff': name 'lone \\udcff' contains surrogate"),
        ({"name": "price", "tensor": "t\ud800"}, "Field 'price': tensor name 't\\ud800' contains surrogate"),
    ],
)
def test_field_mapping_raises_when_text_contains_surrogates(kwargs, message):
    with pytest.raises(ContractError, match=re.escape(message)):
        FieldMapping(**kwargs)


def test_contract_round_trips_when_names_are_astral_characters():
    contract = Contract(
        flavor="f",
        inputs=StructureMapping("tensors", (FieldMapping("\U00010000", "a"), FieldMapping("\U0001f600 x", "b"))),
        outputs=StructureMapping("tensor", (FieldMapping(None, "y"),)),
    )

    assert Contract.from_json(contract.to_json()) == contract


@pytest.mark.parametrize(
    ("structure", "fields", "message"),
    [
        ("frame", [FieldMapping("a", "a")], "Structure 'frame' is not supported; supported: columns, tensor, tensors"),
        ("columns", [], "Structure 'columns' needs at least one field"),
        ("tensor", [FieldMapping(None, "a"), FieldMapping(None, "b")], "maps exactly one tensor, got 2"),
        ("tensors", [FieldMapping("a", "a"), FieldMapping(None, "b")], "needs a name for every field; unnamed: b"),
        ("columns", [FieldMapping("a", "t"), FieldMapping("b", "t")], "Duplicate tensor name 't'"),
        ("columns", [FieldMapping("a", "t"), FieldMapping("a", "u")], "Duplicate field name 'a'"),
    ],
)
def test_structure_mapping_raises_when_structure_is_malformed(structure, fields, message):
    with pytest.raises(ContractError, match=re.escape(message)):
        StructureMapping(structure, fields)


@pytest.mark.parametrize("version", [0, 7, "1", 1.0, True, None])
def test_contract_raises_when_mapping_version_is_unsupported(version):
    message = f"Mapping version {version!r} is not supported; supported: 1, 2, 3, 4, 5, 6"
    with pytest.raises(ContractError, match=re.escape(message)):
        _contract(version=version)


@pytest.mark.parametrize("flavor", ["", None, 3, "sk\ud800learn"])
def test_contract_raises_when_flavor_is_not_non_empty_unicode_text(flavor):
    with pytest.raises(ContractError, match="'flavor' must be a non-empty string of valid Unicode text"):
        Contract(flavor=flavor, inputs=_contract().inputs, outputs=_contract().outputs)


def test_contract_raises_when_tensor_name_is_shared_by_input_and_output():
    with pytest.raises(ContractError, match=re.escape("Duplicate tensor name 'a'")):
        _contract(inputs=("a", "b"), outputs=("a",))


# --- from_dict / from_json ---------------------------------------------------------------------


def _edited(edit):
    data = _contract().to_dict()
    edit(data)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "Contract must be a JSON object, got list"),
        ({}, "Contract has no 'version'"),
        ({"version": 7}, "Mapping version 7 is not supported; supported: 1, 2, 3, 4, 5, 6"),
        ({"version": True}, "Mapping version True is not supported"),
        ({"version": 1.0}, "Mapping version 1.0 is not supported"),
        (_edited(lambda d: d.pop("flavor")), "A contract entry lacks flavor"),
        (_edited(lambda d: d.update(extra=1)), "A contract entry has unknown key(s) extra; allowed:"),
        (_edited(lambda d: d.update(inputs=[])), "A structure entry must be a JSON object, got list"),
        (_edited(lambda d: d["inputs"].update(fields={})), "Structure 'fields' must be a list"),
        (_edited(lambda d: d["inputs"]["fields"][0].pop("content")), "A field entry lacks content"),
        (_edited(lambda d: d["outputs"]["fields"][0].update(dtype="FP32")), "A field entry has unknown key(s) dtype"),
    ],
)
def test_contract_from_dict_raises_when_data_is_malformed(data, message):
    with pytest.raises(ContractError, match=re.escape(message)):
        Contract.from_dict(data)


def test_contract_from_dict_reports_version_first_when_future_version_has_other_keys():
    with pytest.raises(ContractError, match="Mapping version 7 is not supported"):
        Contract.from_dict({"version": 7, "layout": {}})


@pytest.mark.parametrize("text", ["", "{", "not json", None])
def test_contract_from_json_raises_when_text_is_not_json(text):
    with pytest.raises(ContractError, match=f"Parameter '{CONTRACT_PARAMETER}' is not valid JSON"):
        Contract.from_json(text)


# --- check_tensors -----------------------------------------------------------------------------


def test_check_tensors_passes_when_config_and_mapping_declare_same_tensors_in_any_order():
    _contract().check_tensors(["b", "a"], ["y"])


@pytest.mark.parametrize(
    ("inputs", "outputs", "message"),
    [
        (["a", "b", "c"], ["y"], "Config input tensor(s) c have no entry in 'mlflow_contract'; mapped: a, b"),
        (["a", "b"], ["y", "z"], "Config output tensor(s) z have no entry in 'mlflow_contract'; mapped: y"),
        (["a"], ["y"], "'mlflow_contract' maps input tensor(s) b that the config does not declare; declared: a"),
        (["a", "b"], [], "maps output tensor(s) y that the config does not declare; declared: none"),
        (["a", "a", "b"], ["y"], "Duplicate config input name 'a'"),
    ],
)
def test_check_tensors_raises_when_config_and_mapping_disagree(inputs, outputs, message):
    with pytest.raises(ContractError, match=re.escape(message)):
        _contract().check_tensors(inputs, outputs)


# --- contract_from_model_config ----------------------------------------------------------------


def test_contract_from_model_config_returns_contract_when_config_matches():
    contract = _contract()

    assert contract_from_model_config(_model_config(contract.to_json(), max_batch_size=0)) == contract


def test_contract_from_model_config_treats_absent_max_batch_size_as_zero_when_omitted():
    contract = _contract()

    assert contract_from_model_config(_model_config(contract.to_json())) == contract


@pytest.mark.parametrize("parameters", [None, {}, {"other": {"string_value": "{}"}}, {CONTRACT_PARAMETER: {}}])
def test_contract_from_model_config_raises_when_parameter_is_missing(parameters):
    config = _model_config(_contract().to_json(), parameters=parameters)

    with pytest.raises(ContractError, match="Model config has no 'mlflow_contract' parameter"):
        contract_from_model_config(config)


def test_contract_from_model_config_raises_when_mapping_version_is_unsupported():
    data = _contract().to_dict()
    data["version"] = 7
    config = _model_config(json.dumps(data))

    with pytest.raises(
        ContractError, match=re.escape("Mapping version 7 is not supported; supported: 1, 2, 3, 4, 5, 6")
    ):
        contract_from_model_config(config)


@pytest.mark.parametrize("max_batch_size", [1, 8, -1])
def test_contract_from_model_config_raises_when_max_batch_size_is_not_zero(max_batch_size):
    config = _model_config(_contract().to_json(), max_batch_size=max_batch_size)

    with pytest.raises(
        ContractError,
        match=re.escape(f"max_batch_size must be 0 (shapes carry their own batch dimension), got {max_batch_size}"),
    ):
        contract_from_model_config(config)


def test_contract_from_model_config_raises_when_config_tensor_has_no_mapping():
    config = _model_config(_contract().to_json(), inputs=("a", "b", "extra"))

    with pytest.raises(ContractError, match=re.escape("Config input tensor(s) extra have no entry")):
        contract_from_model_config(config)


def test_contract_from_model_config_raises_when_mapping_has_no_config_tensor():
    config = _model_config(_contract().to_json(), outputs=())

    with pytest.raises(ContractError, match=re.escape("maps output tensor(s) y that the config does not declare")):
        contract_from_model_config(config)


def test_contract_from_model_config_raises_when_config_declares_tensor_name_twice():
    config = _model_config(_contract().to_json(), outputs=("y", "y"))

    with pytest.raises(ContractError, match=re.escape("Duplicate config output name 'y'")):
        contract_from_model_config(config)


def test_contract_from_model_config_raises_when_mapping_repeats_tensor_name():
    data = _contract().to_dict()
    data["outputs"]["fields"][0]["tensor"] = "a"
    config = _model_config(json.dumps(data), outputs=("a",))

    with pytest.raises(ContractError, match=re.escape("Duplicate tensor name 'a'")):
        contract_from_model_config(config)


def test_contract_from_model_config_raises_when_contract_is_not_json():
    config = _model_config("{not json")

    with pytest.raises(ContractError, match="'mlflow_contract' is not valid JSON"):
        contract_from_model_config(config)


def test_contract_error_is_in_error_family_when_raised():
    assert issubclass(ContractError, MlflowTritonError)
    assert issubclass(ContractError, ValueError)


# --- version 3: max_batch_size ----------------------------------------------------------------------


def _batched(max_batch_size=16):
    base = _contract()
    return Contract(
        flavor=base.flavor, inputs=base.inputs, outputs=base.outputs, version=3, max_batch_size=max_batch_size
    )


def test_contract_round_trips_max_batch_size_when_batched():
    contract = _batched()

    assert json.loads(contract.to_json())["max_batch_size"] == 16
    assert Contract.from_json(contract.to_json()) == contract


def test_contract_writes_no_max_batch_size_key_when_unbatched():
    assert "max_batch_size" not in json.loads(_contract().to_json())


@pytest.mark.parametrize(("version", "max_batch_size"), [(2, 8), (1, 8), (3, 0)])
def test_contract_raises_when_version_and_max_batch_size_disagree(version, max_batch_size):
    with pytest.raises(
        ContractError,
        match=re.escape(f"Mapping version {version} with max_batch_size {max_batch_size}: batched contracts"),
    ):
        Contract(
            flavor="sklearn",
            inputs=_contract().inputs,
            outputs=_contract().outputs,
            version=version,
            max_batch_size=max_batch_size,
        )


@pytest.mark.parametrize("value", [-1, True, 1.5, "8"])
def test_contract_raises_when_max_batch_size_is_not_a_count(value):
    with pytest.raises(
        ContractError, match=re.escape(f"Contract 'max_batch_size' must be an integer >= 0, got {value!r}")
    ):
        Contract(
            flavor="sklearn", inputs=_contract().inputs, outputs=_contract().outputs, version=3, max_batch_size=value
        )


def test_contract_from_dict_raises_when_a_version_2_contract_carries_max_batch_size():
    data = _contract().to_dict()
    data["max_batch_size"] = 8

    with pytest.raises(ContractError, match=re.escape("A contract entry has unknown key(s) max_batch_size")):
        Contract.from_dict(data)


def test_contract_from_model_config_accepts_the_batched_config_when_max_batch_size_matches():
    contract = _batched()

    assert contract_from_model_config(_model_config(contract.to_json(), max_batch_size=16)) == contract
