"""MLflow signature -> contract + Triton tensor declarations: every rule and every rejection."""

import re

import numpy as np
import pytest
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, DataType, Schema, TensorSpec
from mlflow.types.schema import AnyType, Array, Map, Object, ParamSchema, ParamSpec, Property

from mlflow_triton._schema import (
    COLUMN_TYPES,
    TensorDeclaration,
    layout_from_signature,
)
from mlflow_triton.errors import MlflowTritonError, UnsupportedSchemaError
from mlflow_triton.shared_contract import ContractError, FieldMapping

OUT = Schema([TensorSpec(np.dtype("float64"), (-1,))])
IN = Schema([ColSpec("double", "x")])


def _layout(inputs=IN, outputs=OUT):
    return layout_from_signature(ModelSignature(inputs=inputs, outputs=outputs), "sklearn")


# --- the type tables ---------------------------------------------------------------------------


@pytest.mark.parametrize("member", list(DataType), ids=lambda m: m.name)
def test_column_types_cover_data_type_member_when_enumerating_mlflow_types(member):
    assert member in COLUMN_TYPES, f"{member.name}: every MLflow column type maps to a tensor"


# --- column rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column_type", "data_type", "content"),
    [
        ("boolean", "TYPE_BOOL", None),
        ("integer", "TYPE_INT32", None),
        ("long", "TYPE_INT64", None),
        ("float", "TYPE_FP32", None),
        ("double", "TYPE_FP64", None),
        ("string", "TYPE_STRING", "text"),
        ("binary", "TYPE_STRING", "binary"),
        ("datetime", "TYPE_INT64", "datetime"),
    ],
)
def test_layout_maps_column_to_rank_one_tensor_when_column_type_is_supported(column_type, data_type, content):
    layout = _layout(inputs=Schema([ColSpec(column_type, "price")]))

    assert layout.contract.inputs.structure == "columns"
    assert layout.contract.inputs.fields == (FieldMapping("price", "price", content),)
    assert layout.inputs == (TensorDeclaration("price", data_type, (-1,)),)


def test_layout_keeps_column_order_and_names_when_schema_has_several_columns():
    layout = _layout(inputs=Schema([ColSpec("long", "b"), ColSpec("string", "a"), ColSpec("double", "c")]))

    assert [f.name for f in layout.contract.inputs.fields] == ["b", "a", "c"]
    assert [d.name for d in layout.inputs] == ["b", "a", "c"]


def test_layout_uses_positional_default_names_when_columns_are_unnamed():
    layout = _layout(inputs=Schema([ColSpec("long"), ColSpec("double")]))

    assert layout.contract.inputs.structure == "columns"
    assert layout.contract.inputs.fields == (FieldMapping(None, "input_0"), FieldMapping(None, "input_1"))


def test_layout_suffixes_tensor_names_when_column_names_sanitize_alike():
    layout = _layout(inputs=Schema([ColSpec("long", n) for n in ("a b", "a_b", "a-b")]))

    assert [(f.name, f.tensor) for f in layout.contract.inputs.fields] == [
        ("a b", "a_b"),
        ("a_b", "a_b_2"),
        ("a-b", "a_b_3"),
    ]


def test_layout_gives_inputs_and_outputs_distinct_tensors_when_they_share_a_name():
    layout = _layout(inputs=Schema([ColSpec("double", "y")]), outputs=Schema([ColSpec("double", "y")]))

    assert layout.contract.inputs.fields == (FieldMapping("y", "y"),)
    assert layout.contract.outputs.fields == (FieldMapping("y", "y_2"),)


# --- tensor rules ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(-1,), (1,), (-1, 3), (2, 3), (4, -1, 8), (-1, -1), (1, 1, 1, 1)])
def test_layout_keeps_declared_shape_when_tensor_schema_has_dimensions(shape):
    layout = _layout(inputs=Schema([TensorSpec(np.dtype("float32"), shape)]))

    assert layout.inputs[0].dims == shape


@pytest.mark.parametrize(
    ("dtype", "data_type", "content"),
    [
        (np.dtype("bool"), "TYPE_BOOL", None),
        (np.dtype("uint8"), "TYPE_UINT8", None),
        (np.dtype("uint16"), "TYPE_UINT16", None),
        (np.dtype("uint32"), "TYPE_UINT32", None),
        (np.dtype("uint64"), "TYPE_UINT64", None),
        (np.dtype("int8"), "TYPE_INT8", None),
        (np.dtype("int16"), "TYPE_INT16", None),
        (np.dtype("int32"), "TYPE_INT32", None),
        (np.dtype("int64"), "TYPE_INT64", None),
        (np.dtype("float16"), "TYPE_FP16", None),
        (np.dtype("float32"), "TYPE_FP32", None),
        (np.dtype("float64"), "TYPE_FP64", None),
        (np.dtype(str), "TYPE_STRING", "text"),
        (np.dtype(object), "TYPE_STRING", "text"),
        (np.dtype(bytes), "TYPE_STRING", "binary"),
    ],
    ids=str,
)
def test_layout_maps_tensor_dtype_one_to_one_when_dtype_is_supported(dtype, data_type, content):
    layout = _layout(outputs=Schema([TensorSpec(dtype, (-1, 2), "scores")]))

    assert layout.contract.outputs.fields == (FieldMapping("scores", "scores", content),)
    assert layout.outputs == (TensorDeclaration("scores", data_type, (-1, 2)),)


def test_layout_uses_tensors_structure_when_tensors_are_named():
    inputs = Schema(
        [TensorSpec(np.dtype("float32"), (-1, 4), "pixel values"), TensorSpec(np.dtype("int64"), (-1,), "ids")]
    )

    layout = _layout(inputs=inputs)

    assert layout.contract.inputs.structure == "tensors"
    assert layout.contract.inputs.fields == (FieldMapping("pixel values", "pixel_values"), FieldMapping("ids", "ids"))


@pytest.mark.parametrize("side", ["inputs", "outputs"])
def test_layout_uses_tensor_structure_keeping_the_name_when_single_tensor_is_named(side):
    schema = Schema([TensorSpec(np.dtype("int64"), (-1, -1), "input ids")])

    layout = _layout(**{side: schema})

    mapping = getattr(layout.contract, side)
    assert mapping.structure == "tensor"
    assert mapping.fields == (FieldMapping("input ids", "input_ids"),)
    assert getattr(layout, side) == (TensorDeclaration("input_ids", "TYPE_INT64", (-1, -1)),)


# --- names -------------------------------------------------------------------------------------


def test_layout_keeps_integer_labels_and_prefixes_tensor_names_when_columns_have_default_labels():
    layout = _layout(inputs=Schema([ColSpec("double", 0), ColSpec("double", 1), ColSpec("string", "1")]))

    assert layout.contract.inputs.fields == (
        FieldMapping(0, "_0"),
        FieldMapping(1, "_1"),
        FieldMapping("1", "_1_2", "text"),
    )
    assert [type(f.name) for f in layout.contract.inputs.fields] == [int, int, str]


def test_layout_records_numpy_integer_labels_as_plain_integers_when_columns_carry_them():
    layout = _layout(outputs=Schema([ColSpec("double", np.int64(3))]))

    assert layout.contract.outputs.fields == (FieldMapping(3, "_3"),)
    assert type(layout.contract.outputs.fields[0].name) is int


def test_layout_raises_when_the_integer_label_0_is_not_the_first_input_column():
    with pytest.raises(
        UnsupportedSchemaError, match=re.escape("Column 0 of the input schema: the label 0 at position 1")
    ):
        _layout(inputs=Schema([ColSpec("double", 5), ColSpec("double", 0)]))


def test_layout_keeps_the_integer_label_0_anywhere_when_it_names_an_output_column():
    layout = _layout(outputs=Schema([ColSpec("double", 5), ColSpec("double", 0)]))

    assert [f.name for f in layout.contract.outputs.fields] == [5, 0]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (Schema([ColSpec("double", "")]), "Column '' of the input schema: an empty name cannot be served"),
        (Schema([TensorSpec(np.dtype("float32"), (-1,), "")]), "Tensor '' of the input schema: an empty name"),
        (Schema([ColSpec("double", 1.5)]), "Column 1.5 of the input schema: a float label is not supported"),
        (Schema([ColSpec("double", True)]), "Column True of the input schema: a bool label is not supported"),
    ],
    ids=["empty-column", "empty-tensor", "float-label", "bool-label"],
)
def test_layout_raises_naming_the_field_when_its_name_cannot_be_served(schema, message):
    with pytest.raises(UnsupportedSchemaError, match=re.escape(message)):
        _layout(inputs=schema)


@pytest.mark.parametrize(("side", "default"), [("inputs", "input_0"), ("outputs", "output_0")])
def test_layout_uses_tensor_structure_with_stable_default_name_when_single_tensor_is_unnamed(side, default):
    schema = Schema([TensorSpec(np.dtype("float32"), (-1, 3))])

    layout = _layout(**{side: schema})

    mapping = getattr(layout.contract, side)
    assert mapping.structure == "tensor"
    assert mapping.fields == (FieldMapping(None, default),)
    assert getattr(layout, side) == (TensorDeclaration(default, "TYPE_FP32", (-1, 3)),)
    assert _layout(**{side: schema}) == layout


def test_layout_records_flavor_when_mapped():
    layout = layout_from_signature(ModelSignature(inputs=IN, outputs=OUT), "pytorch")

    assert layout.contract.flavor == "pytorch"


# --- rejections --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            Schema([ColSpec(Array("binary"), "blobs")]),
            "Column `blobs` of the input schema: a nested value holding binary values is not mapped (each row "
            "travels as JSON text, which carries no binary)",
        ),
        (
            Schema([ColSpec(Object([Property("at", "datetime")]), "record")]),
            "Column `record` of the input schema: a nested value holding datetime values is not mapped",
        ),
        (
            Schema([ColSpec(Map(Array("binary")), "lookup")]),
            "Column `lookup` of the input schema: a nested value holding binary values",
        ),
        (
            Schema([ColSpec(AnyType(), "anything")]),
            "Column `anything` of the input schema: AnyType columns are not mapped; supported: boolean, integer",
        ),
        (
            Schema([TensorSpec(np.dtype("float32"), (), "scalar")]),
            "Tensor `scalar` of the input schema: scalar input tensors (shape ()) are not mapped",
        ),
        (
            Schema([TensorSpec(np.dtype("complex128"), (-1,), "z")]),
            "Tensor `z` of the input schema: dtype complex128 has no Triton datatype; supported: bool, float16,",
        ),
        (
            Schema([TensorSpec(np.dtype("datetime64[ns]"), (-1,), "stamp")]),
            "Tensor `stamp` of the input schema: dtype datetime64[ns] has no Triton datatype",
        ),
        (
            Schema([TensorSpec(np.dtype("float32"), (-1, 0), "empty")]),
            "Tensor `empty` of the input schema: shape (-1, 0) has dimension(s) 0; Triton allows",
        ),
        (
            Schema([TensorSpec(np.dtype("float32"), (-2,), "neg")]),
            "Tensor `neg` of the input schema: shape (-2,) has dimension(s) -2",
        ),
        (
            Schema([TensorSpec(np.dtype("float32"), (None, 3), "unknown")]),
            "Tensor `unknown` of the input schema: shape (None, 3) has dimension(s) None",
        ),
    ],
)
def test_layout_raises_naming_field_when_input_is_unsupported(inputs, message):
    with pytest.raises(UnsupportedSchemaError, match=re.escape(message)):
        _layout(inputs=inputs)


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (Schema([ColSpec("datetime", "label")]), "Column `label` of the output schema: datetime output columns are"),
        (
            Schema([ColSpec("long", "count", required=False)]),
            "Column `count` of the output schema: an optional long output column is not mapped",
        ),
    ],
)
def test_layout_raises_naming_output_side_when_output_column_is_unsupported(outputs, message):
    with pytest.raises(UnsupportedSchemaError, match=re.escape(message)):
        _layout(outputs=outputs)


def test_layout_gives_an_optional_output_column_a_missing_value_mask_as_an_input_column_gets():
    layout = _layout(outputs=Schema([ColSpec("double", "score", required=False), ColSpec("string", "label")]))

    assert [(f.name, f.tensor, f.missing) for f in layout.contract.outputs.fields] == [
        ("score", "score", "score__missing"),
        ("label", "label", None),
    ]
    assert [(d.name, d.data_type, d.dims) for d in layout.outputs] == [
        ("score", "TYPE_FP64", (-1,)),
        ("label", "TYPE_STRING", (-1,)),
        ("score__missing", "TYPE_BOOL", (-1,)),
    ]
    assert layout.contract.version == 4


# --- column adapters: missing-value masks and datetimes (mapping version 4) --------------------


@pytest.mark.parametrize(
    ("column_type", "data_type", "content"),
    [
        ("boolean", "TYPE_BOOL", None),
        ("float", "TYPE_FP32", None),
        ("double", "TYPE_FP64", None),
        ("string", "TYPE_STRING", "text"),
        ("binary", "TYPE_STRING", "binary"),
        ("datetime", "TYPE_INT64", "datetime"),
    ],
)
def test_layout_adds_a_bool_missing_mask_when_an_input_column_is_optional(column_type, data_type, content):
    layout = _layout(inputs=Schema([ColSpec("double", "x"), ColSpec(column_type, "maybe", required=False)]))

    assert layout.contract.version == 4
    assert layout.contract.inputs.fields[1] == FieldMapping("maybe", "maybe", content, missing="maybe__missing")
    assert layout.inputs == (
        TensorDeclaration("x", "TYPE_FP64", (-1,)),
        TensorDeclaration("maybe", data_type, (-1,)),
        TensorDeclaration("maybe__missing", "TYPE_BOOL", (-1,)),
    )


@pytest.mark.parametrize("column_type", ["integer", "long"])
def test_layout_maps_an_optional_integer_column_without_a_mask_when_mlflow_refuses_missing_integers(column_type):
    layout = _layout(inputs=Schema([ColSpec(column_type, "count", required=False)]))

    assert layout.contract.inputs.fields == (FieldMapping("count", "count", None),)
    assert layout.contract.version == 2


def test_layout_suffixes_the_mask_name_when_a_column_already_has_it():
    layout = _layout(inputs=Schema([ColSpec("string", "a", required=False), ColSpec("double", "a__missing")]))

    assert layout.contract.inputs.fields[0].missing == "a__missing_2"
    assert [d.name for d in layout.inputs] == ["a", "a__missing", "a__missing_2"]


def test_layout_writes_mapping_version_2_when_no_column_needs_an_adapter():
    assert _layout().contract.version == 2


def test_layout_maps_an_output_tensor_of_shape_empty_as_a_one_element_scalar_with_version_5():
    layout = _layout(outputs=Schema([TensorSpec(np.dtype("float64"), ())]))

    assert layout.contract.outputs.fields == (FieldMapping(name=None, tensor="output_0", scalar=True),)
    assert layout.outputs == (TensorDeclaration("output_0", "TYPE_FP64", (1,)),)
    assert layout.contract.version == 5


def test_layout_raises_naming_the_tensor_when_a_scalar_stands_beside_other_output_tensors():
    outputs = Schema([TensorSpec(np.dtype("float64"), (), "total"), TensorSpec(np.dtype("float64"), (-1,), "parts")])

    with pytest.raises(UnsupportedSchemaError, match=re.escape("Tensor `total` of the output schema: a scalar")):
        _layout(outputs=outputs)


@pytest.mark.parametrize(
    ("column", "mlflow_type"),
    [
        (ColSpec(Array("string"), "candidate_labels"), {"type": "array", "items": {"type": "string"}}),
        (
            ColSpec(Object([Property("a", "long"), Property("b", Array("double"), required=False)]), "record"),
            {
                "type": "object",
                "properties": {
                    "a": {"type": "long", "required": True},
                    "b": {"type": "array", "items": {"type": "double"}, "required": False},
                },
            },
        ),
        (
            ColSpec(Map(Array("float")), "lookup", required=False),
            {"type": "map", "values": {"type": "array", "items": {"type": "float"}}},
        ),
    ],
)
def test_layout_maps_a_nested_column_as_json_text_with_its_mlflow_type_and_no_mask(column, mlflow_type):
    layout = _layout(inputs=Schema([column, ColSpec("double", "x")]), outputs=Schema([column]))

    [nested, _] = layout.contract.inputs.fields
    # an optional column of a version 5 contract may be left out of a request
    assert nested == FieldMapping(
        name=column.name, tensor=column.name, content="json", type=mlflow_type, optional=not column.required
    )
    assert layout.contract.outputs.fields[0].content == "json"
    assert [d.data_type for d in layout.inputs] == ["TYPE_STRING", "TYPE_FP64"]  # no __missing mask
    assert layout.contract.version == 5


@pytest.mark.parametrize(
    ("inputs", "outputs", "params", "side"),
    [
        (None, OUT, None, "input"),
        (IN, None, None, "output"),
        (None, None, ParamSchema([ParamSpec("temperature", "double", 0.5)]), "input"),
    ],
)
def test_layout_raises_when_signature_lacks_schema(inputs, outputs, params, side):
    signature = ModelSignature(inputs=inputs, outputs=outputs, params=params)

    with pytest.raises(
        UnsupportedSchemaError,
        match=f"The signature has no {side} schema; .* pass infer_signature\\(example, model's prediction of it\\)",
    ):
        layout_from_signature(signature, "sklearn")


def test_layout_raises_when_signature_is_none():
    with pytest.raises(UnsupportedSchemaError, match="The model has no signature"):
        layout_from_signature(None, "sklearn")


def test_layout_raises_naming_column_when_column_names_repeat():
    with pytest.raises(ContractError, match=re.escape("Duplicate field name 'x'")):
        _layout(inputs=Schema([ColSpec("double", "x"), ColSpec("long", "x")]))


def test_unsupported_schema_error_is_in_error_family_when_raised():
    assert issubclass(UnsupportedSchemaError, MlflowTritonError)
    assert issubclass(UnsupportedSchemaError, ValueError)


@pytest.mark.parametrize("dtype", [np.dtype(str), np.dtype(bytes)], ids=str)
def test_layout_rejects_fixed_width_input_tensor_when_dtype_is_str_or_bytes(dtype):
    inputs = Schema([TensorSpec(dtype, (-1,), "text")])

    with pytest.raises(UnsupportedSchemaError, match=r"Tensor `text` of the input schema: fixed-width .* object-dtype"):
        _layout(inputs=inputs)
