"""Nested columns (Array, Object, Map) as one JSON text per row, and scalar outputs (mapping version 5).

The runtime's reading and writing of JSON rows (``runtime/nested.py``), the codecs around them, and a
real MLflow pyfunc model behind the generated model.py (fake ``triton_python_backend_utils``): what
``predict`` receives, and a 400 naming the column and the row where MLflow's schema enforcement refuses.
"""

import json
import math

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, DataType, Schema, TensorSpec
from mlflow.types.schema import Array, Object, Property

from mlflow_triton import pyfunc
from mlflow_triton._model_py import compose_model_py
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.runtime.codecs import StructureCodec, tensor_types_from_model_config
from mlflow_triton.runtime.conversions import TensorMappingError
from mlflow_triton.runtime.nested import from_json_texts, to_json_texts
from mlflow_triton.shared_contract import Contract, ContractError, FieldMapping, StructureMapping
from tests.support import fake_pb_utils, tiny_models
from tests.unit.runtime.test_runtime_execute import error_message, initialize_args, json_model_config

FLOATS = {"type": "array", "items": {"type": "float"}}
INTEGERS = {"type": "array", "items": {"type": "integer"}}
RECORD = {
    "type": "object",
    "properties": {"a": {"type": "long", "required": True}, "w": {"type": "float", "required": False}},
}


def texts(*values):
    return [text.encode() for text in values]


# -- runtime/nested.py: reading ------------------------------------------------------------------


def test_from_json_texts_reads_lists_dicts_and_numbers_as_mlflow_serve_builds_them_from_json():
    rows = from_json_texts(texts('["a","b"]', '{"k":[1,2.5,null]}', "null", "NaN"), {"type": "any"}, "`c`")

    assert rows[:3] == [["a", "b"], {"k": [1, 2.5, None]}, None]
    assert math.isnan(rows[3])


def test_from_json_texts_makes_float32_and_int32_where_the_mlflow_type_says_float_or_integer():
    [floats] = from_json_texts(texts("[1.5,-0.25,3,NaN]"), FLOATS, "`v`")
    [integers] = from_json_texts(texts("[7,-2147483648]"), INTEGERS, "`i`")
    [record] = from_json_texts(texts('{"a":5,"w":0.5}'), RECORD, "`r`")

    assert [type(x) for x in floats] == [np.float32] * 4 and floats[:3] == [1.5, -0.25, 3.0]
    assert [type(x) for x in integers] == [np.int32, np.int32]
    assert type(record["a"]) is int and type(record["w"]) is np.float32


@pytest.mark.parametrize(
    ("text", "mlflow_type", "message"),
    [
        ("[1.5,0.1]", FLOATS, "Tensor `v`: row 1 holds a number that does not fit MLflow's float (float32) unchanged"),
        ("[1e39]", FLOATS, "row 1 holds a number that does not fit MLflow's float"),
        ("[1" + "0" * 400 + "]", FLOATS, "row 1 holds a number that does not fit MLflow's float"),
        ("[2147483648]", INTEGERS, "row 1 holds a number that does not fit MLflow's integer (int32) unchanged"),
        ('["a",', FLOATS, "Tensor `v`: row 1 is not valid JSON (Expecting value: line 1 column 6 (char 5))"),
        ("", FLOATS, "Tensor `v`: row 1 is not valid JSON (Expecting value"),
        ("[" * 100000, FLOATS, "Tensor `v`: row 1 is not valid JSON"),
    ],
)
def test_from_json_texts_names_the_row_without_quoting_it_when_a_text_is_not_json_or_a_number_would_change(
    text, mlflow_type, message
):
    with pytest.raises(TensorMappingError) as raised:
        from_json_texts(texts("[1]", text), mlflow_type, "`v`")

    assert message in str(raised.value)
    assert "0.1" not in str(raised.value) and "2147483648" not in str(raised.value)


def test_from_json_texts_leaves_other_mismatches_to_mlflow_when_a_value_has_another_type():
    rows = from_json_texts(texts('["x",1.5]', '{"a":"five"}', '"text"'), FLOATS, "`v`")

    assert rows[0][0] == "x" and type(rows[0][1]) is np.float32
    assert rows[1:] == [{"a": "five"}, "text"]


# -- runtime/nested.py: writing ------------------------------------------------------------------


def test_to_json_texts_writes_numpy_values_as_the_python_numbers_they_hold_and_floats_bit_for_bit():
    values = [
        np.array([0.1, 1 / 3, 5e-324, -0.0, np.inf], dtype=np.float64),
        {"score": np.float32(0.1), "n": np.int64(2**62), "ok": np.bool_(True), "tags": ("a", np.str_("b"))},
        [np.nan, None],
        np.array([[1, 2], [3, 4]], dtype=np.int8),
    ]

    written = to_json_texts(values, "`out`")

    back = [json.loads(text) for text in written]
    assert back[0] == [0.1, 1 / 3, 5e-324, -0.0, math.inf] and math.copysign(1, back[0][3]) == -1
    assert back[1] == {"score": float(np.float32(0.1)), "n": 2**62, "ok": True, "tags": ["a", "b"]}
    assert math.isnan(back[2][0]) and back[2][1] is None
    assert back[3] == [[1, 2], [3, 4]]
    assert all(isinstance(text, bytes) for text in written)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([b"raw"], "Tensor `out`: row 1 holds a value of type bytes, which JSON text cannot carry"),
        ({1: "a"}, "Tensor `out`: row 1 holds a dict key of type int, which JSON text cannot carry"),
        ([pd.Timestamp("2024-01-01")], "row 1 holds a value of type Timestamp"),
        (np.array(["2024-01-01"], dtype="datetime64[D]"), "row 1 holds a value of type ndarray"),
    ],
)
def test_to_json_texts_names_the_row_when_a_value_would_not_come_back_from_json(value, message):
    with pytest.raises(TensorMappingError) as raised:
        to_json_texts([[1], value], "`out`")

    assert message in str(raised.value)


# -- the codecs ----------------------------------------------------------------------------------


def _codec(*fields, structure="columns"):
    mapping = StructureMapping(structure, fields)
    types = {
        f.tensor: ("TYPE_STRING" if f.content == "json" else "TYPE_FP64", (1,) if f.scalar else (-1,)) for f in fields
    }
    return StructureCodec(mapping, types)


LONG_LISTS = {"type": "array", "items": {"type": "long"}}
LABELS = FieldMapping("labels", "labels", "json", type={"type": "array", "items": {"type": "string"}})
SCORE = FieldMapping("score", "score", None)


@pytest.mark.parametrize(
    "value",
    [
        pd.DataFrame({"labels": [["a", "b"], ["c", "d"]], "score": [1.0, 2.0]}),
        {"labels": [["a", "b"], ["c", "d"]], "score": [1.0, 2.0]},
        [{"labels": ["a", "b"], "score": 1.0}, {"labels": ["c", "d"], "score": 2.0}],
    ],
)
def test_codec_sends_one_json_text_per_row_when_lists_of_equal_length_fill_a_nested_column(value):
    codec = _codec(LABELS, SCORE)

    tensors = codec.to_tensors(value)

    assert tensors["labels"].tolist() == [b'["a","b"]', b'["c","d"]']
    frame = codec.from_tensors(tensors)
    assert frame["labels"].tolist() == [["a", "b"], ["c", "d"]] and frame["score"].tolist() == [1.0, 2.0]


def test_codec_takes_each_item_as_a_row_when_a_single_nested_column_is_a_list_or_a_2d_array():
    codec = _codec(FieldMapping(None, "output_0", "json", type={"type": "array", "items": {"type": "long"}}))

    assert codec.to_tensors([[1, 2], [3, 4]])["output_0"].tolist() == [b"[1,2]", b"[3,4]"]
    assert codec.to_tensors(np.array([[1, 2], [3, 4]]))["output_0"].tolist() == [b"[1,2]", b"[3,4]"]
    assert codec.to_tensors(pd.Series([[1], None]))["output_0"].tolist() == [b"[1]", b"null"]


def test_codec_restores_a_scalar_as_a_0d_array_and_refuses_an_array_for_it():
    codec = _codec(FieldMapping(None, "output_0", scalar=True), structure="tensor")

    tensors = codec.to_tensors(np.float64(2.5))
    assert tensors["output_0"].shape == (1,)
    restored = codec.from_tensors(tensors)
    assert restored.shape == () and restored == 2.5
    with pytest.raises(TensorMappingError, match=r"^Tensor `output_0`: a scalar \(shape \[\]\), got shape \[2\]"):
        codec.to_tensors(np.array([1.0, 2.0]))


# -- the contract --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (dict(content="json"), "content 'json' goes with a 'type'"),
        (dict(content="text", type=FLOATS), "a 'type' only with content 'json'"),
        (dict(content="json", type={"type": "float"}), "content 'json' goes with a 'type'"),
        (dict(content="json", type=FLOATS, missing="c__missing"), "a JSON field marks a missing row as null"),
        (dict(scalar="yes"), "'scalar' must be true or absent"),
    ],
)
def test_field_mapping_raises_when_json_content_or_scalar_is_malformed(field, message):
    with pytest.raises(ContractError, match=message):
        FieldMapping("c", "c", **field)


def test_contract_needs_version_5_and_the_right_structure_for_json_fields_and_scalars():
    nested = StructureMapping("columns", (FieldMapping("c", "c", "json", type=FLOATS),))
    scalar = StructureMapping("tensor", (FieldMapping(None, "s", scalar=True),))

    with pytest.raises(ContractError, match="json content, scalars and optional fields need version 5; used by: c"):
        Contract("pyfunc", nested, scalar, version=4)
    with pytest.raises(ContractError, match="datetime and json content are for 'columns' only"):
        StructureMapping("tensor", (FieldMapping("c", "c", "json", type=FLOATS),))
    with pytest.raises(ContractError, match="'scalar' is for 'tensor' only; used by: s"):
        StructureMapping("columns", (FieldMapping(None, "s", scalar=True),))
    contract = Contract("pyfunc", nested, scalar, version=5)
    assert Contract.from_json(contract.to_json()) == contract


def test_layout_writes_no_version_5_when_nothing_is_nested():
    signature = ModelSignature(Schema([ColSpec("double", "x")]), Schema([ColSpec("double", "y")]))

    assert layout_from_signature(signature, "pyfunc").contract.to_json().count('"version":2') == 1


# -- a real pyfunc model behind the generated model.py -------------------------------------------


class Nested(mlflow.pyfunc.PythonModel):
    """Reads every nested column the way a user's model would: lists, dicts, float32 elements."""

    def predict(self, context, model_input, params=None):
        return pd.DataFrame(
            {
                "total": [float(sum(v)) for v in model_input["vec"]],
                "kinds": [sorted({type(x).__name__ for x in v}) for v in model_input["vec"]],
                "echo": list(model_input["rec"]),
            }
        )


NESTED_SIGNATURE = ModelSignature(
    inputs=Schema([ColSpec(Array(DataType.float), "vec"), ColSpec(Object([Property("a", DataType.long)]), "rec")]),
    outputs=Schema(
        [
            ColSpec(DataType.double, "total"),
            ColSpec(Array(DataType.string), "kinds"),
            ColSpec(Object([Property("a", DataType.long)]), "echo"),
        ]
    ),
)
NESTED_FRAME = pd.DataFrame({"vec": [[1.5, 2.0], [0.25]], "rec": [{"a": 1}, {"a": 2}]})


@pytest.fixture(scope="module")
def nested_serving(tmp_path_factory):
    """(initialized model.py instance, input codec, output codec, the pyfunc model)."""
    repository = tmp_path_factory.mktemp("repository") / "nested"
    mlflow.pyfunc.save_model(
        repository / "1" / "artifact", python_model=Nested(), signature=NESTED_SIGNATURE, pip_requirements=[]
    )
    (repository / "1" / "model.py").write_text(compose_model_py(), encoding="utf-8")
    config = json_model_config(NESTED_SIGNATURE, "pyfunc")
    module = fake_pb_utils.load_model_py(repository / "1" / "model.py", name="served_nested_model_py")
    model = module.TritonPythonModel()
    model.initialize(initialize_args(config, repository))
    layout = layout_from_signature(NESTED_SIGNATURE, "pyfunc")
    inputs, outputs = (
        StructureCodec(mapping, {d.name: (d.data_type, d.dims) for d in declarations})
        for mapping, declarations in (
            (layout.contract.inputs, layout.inputs),
            (layout.contract.outputs, layout.outputs),
        )
    )
    return model, inputs, outputs, mlflow.pyfunc.load_model(str(repository / "1" / "artifact"))


def _frame_of(response, outputs):
    assert not response.has_error(), response.error().message()
    return outputs.from_tensors({t.name(): t.as_numpy() for t in response.output_tensors()})


def test_execute_answers_like_pyfunc_predict_when_nested_columns_arrive_as_json_rows(nested_serving):
    model, inputs, outputs, pyfunc_model = nested_serving
    example = pd.DataFrame(
        {"vec": [[np.float32(1.5), np.float32(2.0)], [np.float32(0.25)]], "rec": [{"a": 1}, {"a": 2}]}
    )

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(example))])

    answered = _frame_of(response, outputs)
    expected = outputs.from_tensors(outputs.to_tensors(pyfunc_model.predict(example)))
    pd.testing.assert_frame_equal(answered, expected)
    assert answered["kinds"].tolist() == [["float"], ["float"]]  # MLflow hands predict Python floats
    assert answered["echo"].tolist() == [{"a": 1}, {"a": 2}]


def _request(**columns):
    arrays = {name: np.array([text.encode() for text in values], dtype=object) for name, values in columns.items()}
    return fake_pb_utils.request_from_arrays(arrays)


@pytest.mark.parametrize(
    ("vec", "rec", "message"),
    [
        (
            ["[1.5]", '["x"]'],
            ['{"a":1}', '{"a":2}'],
            "The request does not match the model's input schema: column `vec`, row 1: ",
        ),
        (["[1.5]", "[2]"], ['{"a":1}', "{}"], "column `rec`, row 1: Missing required properties: {'a'}"),
        (
            ["[1.5]", "[2]"],
            ['{"a":1}', '{"a":1,"b":2}'],
            "column `rec`, row 1: Invalid properties not defined in the schema",
        ),
        (["[1.5]", '"1.5"'], ['{"a":1}', '{"a":2}'], "column `vec`, row 1: "),
        (["[1.5]", "[1.5"], ['{"a":1}', '{"a":2}'], "Tensor `vec`: row 1 is not valid JSON (Expecting"),
        (["[1.5]", "[0.1]"], ['{"a":1}', '{"a":2}'], "Tensor `vec`: row 1 holds a number that does not fit"),
    ],
)
def test_execute_answers_invalid_arg_naming_the_column_and_row_when_a_nested_row_is_refused(
    nested_serving, vec, rec, message
):
    model, _, _, _ = nested_serving

    [response] = model.execute([_request(vec=vec, rec=rec)])

    assert message in error_message(response)


class Kinds(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return pd.DataFrame({"kind": [f"{type(v).__name__} {np.asarray(v).dtype}" for v in model_input["vec"]]})


@pytest.mark.parametrize(
    "cells", [[np.array([1.5, 2.0]), np.array([0.25])], [[1.5, 2.0], [0.25]]], ids=["ndarrays", "lists"]
)
def test_a_nested_row_reaches_predict_as_a_list_as_mlflow_reads_the_saved_example_back(tmp_path, cells):
    from mlflow.models import Model

    from mlflow_triton import pyfunc as triton_pyfunc
    from tests.support import tiny_models

    triton_pyfunc.save_model(Kinds(), tmp_path / "kinds", input_example=pd.DataFrame({"vec": cells}))

    [repository] = (tmp_path / "kinds" / "model_repository").iterdir()
    config = tiny_models.triton_model_config(repository)
    contract = Contract.from_json(config["parameters"]["mlflow_contract"]["string_value"])
    inputs = StructureCodec(contract.inputs, tensor_types_from_model_config(config, "input"))
    served = inputs.from_tensors(tiny_models.request_arrays(repository))  # the shipped request, as the runtime reads it
    pyfunc_model = mlflow.pyfunc.load_model(str(tmp_path / "kinds"))
    saved = Model.load(str(tmp_path / "kinds")).load_input_example(str(tmp_path / "kinds"))
    assert pyfunc_model.predict(served)["kind"].tolist() == ["list float64", "list float64"]
    assert pyfunc_model.predict(saved)["kind"].tolist() == ["list float64", "list float64"]


def test_mapping_a_scalar_output_keeps_the_tensor_signature_apart_from_columns():
    signature = ModelSignature(
        Schema([TensorSpec(np.dtype("float32"), (-1, 2))]), Schema([TensorSpec(np.dtype("float32"), ())])
    )

    layout = layout_from_signature(signature, "pytorch")

    assert layout.contract.outputs.structure == "tensor" and layout.contract.outputs.fields[0].scalar
    assert [(d.data_type, d.dims) for d in layout.outputs] == [("TYPE_FP32", (1,))]


class Total(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return np.asarray(model_input["x"].sum())


def test_save_model_refuses_batching_naming_the_scalar_output_and_writes_nothing(tmp_path):
    from mlflow_triton import pyfunc as triton_pyfunc
    from mlflow_triton.errors import BatchingRefusedError

    with pytest.raises(BatchingRefusedError, match="output tensor `output_0` is a scalar prediction"):
        triton_pyfunc.save_model(
            Total(), tmp_path / "total", input_example=pd.DataFrame({"x": [1.0, 2.0, 3.0]}), max_batch_size=8
        )

    assert list(tmp_path.iterdir()) == []


class Describe(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return f"This was the input: {model_input.iloc[0, 0]}"


def test_save_model_maps_a_text_prediction_as_one_text_element(tmp_path):
    from mlflow_triton import pyfunc as triton_pyfunc
    from mlflow_triton.local._compare import output_codec

    triton_pyfunc.save_model(Describe(), tmp_path / "describe", input_example="asdf")

    [repository] = (tmp_path / "describe" / "model_repository").iterdir()
    codec = output_codec(repository)
    [field] = codec.mapping.fields
    assert field.scalar and field.content == "text"
    assert codec.to_tensors("This was the input: asdf")["output_0"].tolist() == [b"This was the input: asdf"]


class Summary(mlflow.pyfunc.PythonModel):
    """Answers a dict of lists: MLflow reads it as one row, an ``Array(double)`` and an ``Array(Array(long))``."""

    def predict(self, context, model_input, params=None):
        return {"sizes": [float(len(model_input)), 2.0, 3.0], "pairs": [[1, 2], [3]]}


def test_codec_reads_a_dict_whose_nested_column_holds_one_value_of_its_type_as_one_row_as_mlflow_does():
    double_lists = FieldMapping("sizes", "sizes", "json", type={"type": "array", "items": {"type": "double"}})
    codec = _codec(double_lists, FieldMapping("pairs", "pairs", "json", type={"type": "array", "items": LONG_LISTS}))

    tensors = codec.to_tensors({"sizes": [1.0, 2.0, 3.0], "pairs": [[1, 2], [3]]})

    assert {name: array.tolist() for name, array in tensors.items()} == {
        "sizes": [b"[1.0,2.0,3.0]"],
        "pairs": [b"[[1,2],[3]]"],
    }
    assert codec.to_tensors({"sizes": [[1.0], [2.0, 3.0]], "pairs": [[[1]], []]})["sizes"].tolist() == [
        b"[1.0]",
        b"[2.0,3.0]",
    ]  # a list of lists for Array(double): a column of rows, as before


def test_save_model_answers_a_dict_of_lists_prediction_like_pyfunc_predict_as_one_row(tmp_path):
    pyfunc.save_model(Summary(), tmp_path / "m", input_example=pd.DataFrame({"x": [1.0, 2.0]}))
    [repository] = (tmp_path / "m" / "model_repository").iterdir()
    expected = mlflow.pyfunc.load_model(str(tmp_path / "m")).predict(pd.DataFrame({"x": [1.0, 2.0]}))

    outputs = tiny_models.serve_request(repository)

    assert {name: [json.loads(text) for text in array.tolist()] for name, array in outputs.items()} == {
        name: [value] for name, value in expected.items()
    }
