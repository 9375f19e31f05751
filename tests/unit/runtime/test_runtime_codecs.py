"""runtime/codecs.py: the conversions the property tests do not single out."""

import numpy as np
import pandas as pd
import pytest
from mlflow.exceptions import MlflowException
from mlflow.models.utils import _enforce_schema
from mlflow.types import Schema, TensorSpec

from mlflow_triton.runtime.codecs import StructureCodec, TensorMappingError, tensor_types_from_model_config
from mlflow_triton.shared_contract import FieldMapping, StructureMapping


def codec(structure, *fields, dims=None):
    """A codec over ``fields`` given as ``(name, tensor, data_type, content)``."""
    mapping = StructureMapping(structure, tuple(FieldMapping(n, t, c) for n, t, _, c in fields))
    types = {t: (data_type, dims or (-1,)) for _, t, data_type, _ in fields}
    return StructureCodec(mapping, types)


BINARY = codec("tensor", (None, "blob", "TYPE_STRING", "binary"))
TEXT = codec("tensor", (None, "words", "TYPE_STRING", "text"))
COLUMNS = codec(
    "columns",
    ("unit price", "unit_price", "TYPE_FP32", None),
    ("count", "count", "TYPE_INT32", None),
)


def test_tensor_types_from_model_config_reads_dims_when_given_as_strings_or_integers():
    config = {
        "input": [{"name": "a", "data_type": "TYPE_FP32", "dims": ["-1", "3"]}],
        "output": [{"name": "b", "data_type": "TYPE_STRING", "dims": [-1]}, {"name": "c", "data_type": "TYPE_BOOL"}],
    }

    assert tensor_types_from_model_config(config, "input") == {"a": ("TYPE_FP32", (-1, 3))}
    assert tensor_types_from_model_config(config, "output") == {"b": ("TYPE_STRING", (-1,)), "c": ("TYPE_BOOL", ())}


def test_binary_round_trip_keeps_trailing_nul_bytes_when_values_end_in_nul():
    values = np.array([b"ab\x00\x00", b"\x00", b""], dtype=object)

    tensors = BINARY.to_tensors(values)

    assert tensors["blob"].dtype == object
    assert tensors["blob"].tolist() == [b"ab\x00\x00", b"\x00", b""]
    assert BINARY.from_tensors(tensors).tolist() == [b"ab\x00\x00", b"\x00", b""]


def test_text_decoding_returns_str_when_triton_sends_utf8_bytes():
    decoded = TEXT.from_tensors({"words": np.array(["名前".encode(), b"a\x00", b""], dtype=object)})

    assert decoded.dtype == object
    assert decoded.tolist() == ["名前", "a\x00", ""]


def test_text_decoding_accepts_fixed_width_bytes_when_a_client_sends_them():
    decoded = TEXT.from_tensors({"words": np.array([b"ab", b"c"])})

    assert decoded.tolist() == ["ab", "c"]


@pytest.mark.parametrize(
    "prediction",
    [
        [{"unit price": 1.5, "count": 2}, {"unit price": 2.5, "count": 3}],
        {"unit price": [1.5, 2.5], "count": [2, 3]},
        pd.DataFrame({"unit price": [1.5, 2.5], "count": [2, 3]}).to_numpy(dtype=object),
        pd.DataFrame({"count": [2, 3], "unit price": [1.5, 2.5], "extra": ["x", "y"]}),
    ],
    ids=["records", "dict-of-columns", "2d-object-array", "frame-with-extra-column"],
)
def test_columns_codec_splits_the_prediction_into_typed_columns_when_given_common_shapes(prediction):
    tensors = COLUMNS.to_tensors(prediction)

    assert tensors["unit_price"].dtype == np.float32
    assert tensors["count"].dtype == np.int32
    assert tensors["unit_price"].tolist() == [1.5, 2.5]
    assert tensors["count"].tolist() == [2, 3]


@pytest.mark.parametrize(
    ("prediction", "message"),
    [
        (pd.DataFrame({"unit price": [1.5]}), r"^Column `count` is missing; columns: unit price$"),
        (
            np.zeros((2, 3)),
            r"^Cannot split a ndarray of shape \[2, 3\] into columns `unit_price` \(field `unit price`\), `count`$",
        ),
        (
            {"unit price": [1.5, 2.5], "count": [2.5, 3.5]},
            r"^Tensor `count`: cannot convert float values to TYPE_INT32",
        ),
        (
            [{"unit price": 1.5, "count": 2**53 + 1}, {"unit price": 2.5, "count": 3}],
            r"^Tensor `count`: element 0 \(9007199254740993\) does not fit TYPE_INT32",
        ),
        (
            [{"unit price": 1.5, "count": 2}, {"unit price": None, "count": 3}],
            r"^Tensor `unit_price` \(field `unit price`\): element 1 is missing \(None\)",
        ),
        (
            [{"unit price": 1.5, "count": 2}, {"count": 3}],
            r"^Tensor `unit_price` \(field `unit price`\): record 1 has no key `unit price`$",
        ),
        (
            pd.DataFrame({"unit price": pd.array([1.5, None], dtype="Float64"), "count": [2, 3]}),
            r"^Tensor `unit_price` \(field `unit price`\): element 1 is missing \(<NA>\)",
        ),
        (
            pd.DataFrame({"unit price": [1.5, 2.5], "count": pd.array([2, None], dtype="Int64")}),
            r"^Tensor `count`: element 1 is missing \(<NA>\)",
        ),
    ],
    ids=[
        "missing-column",
        "wrong-width",
        "float-for-int",
        "records-int-beyond-int32",
        "records-none",
        "records-missing-key",
        "nullable-float-na",
        "nullable-int-na",
    ],
)
def test_columns_codec_names_the_column_when_the_prediction_does_not_fit(prediction, message):
    with pytest.raises(TensorMappingError, match=message):
        COLUMNS.to_tensors(prediction)


def test_columns_codec_keeps_nullable_columns_when_they_hold_no_missing_value():
    prediction = pd.DataFrame(
        {"unit price": pd.array([1.5, 2.5], dtype="Float64"), "count": pd.array([2, 3], dtype="Int64")}
    )

    tensors = COLUMNS.to_tensors(prediction)

    assert tensors["unit_price"].tolist() == [1.5, 2.5]
    assert tensors["count"].tolist() == [2, 3]


@pytest.mark.parametrize(
    "empty", [[], np.array([]), pd.Series([], dtype=object, name="count")], ids=["list", "float-array", "series"]
)
def test_columns_codec_encodes_zero_rows_when_the_prediction_is_empty(empty):
    only_count = codec("columns", ("count", "count", "TYPE_INT32", None))

    tensors = only_count.to_tensors(empty)

    assert tensors["count"].dtype == np.int32
    assert tensors["count"].shape == (0,)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (None, r"^Tensor `words`: element 1 is missing \(None\); BYTES values cannot be null$"),
        (float("nan"), r"^Tensor `words`: element 1 is missing \(nan\)"),
        (pd.NA, r"^Tensor `words`: element 1 is missing \(<NA>\)"),
        ("\udc80", r"^Tensor `words`: element 1 cannot be encoded as UTF-8 \(surrogates not allowed at position 0\)$"),
    ],
    ids=["none", "nan", "pd-na", "lone-surrogate"],
)
def test_text_encoding_names_the_element_when_it_has_no_utf8_form(item, message):
    values = np.array(["fine", item], dtype=object)

    with pytest.raises(TensorMappingError, match=message):
        TEXT.to_tensors(values)


def test_tensor_codec_casts_within_a_kind_when_the_prediction_is_wider():
    narrow = codec("tensor", (None, "scores", "TYPE_FP32", None))

    encoded = narrow.to_tensors(np.array([0.25, 0.5]))

    assert encoded["scores"].dtype == np.float32


@pytest.mark.parametrize("dtype", [np.dtype(str), np.dtype(bytes)], ids=["str", "bytes"])
def test_layout_rejects_input_tensor_when_mlflow_would_refuse_the_decoded_object_array(dtype):
    """Triton delivers BYTES as object arrays; MLflow's enforcement refuses them for a `str`/`bytes`
    TensorSpec, so such inputs are rejected at logging time instead of failing every request."""
    from mlflow.models import ModelSignature

    from mlflow_triton._schema import layout_from_signature
    from mlflow_triton.errors import UnsupportedSchemaError

    content = "binary" if dtype.kind == "S" else "text"
    decoded = codec("tensor", (None, "words", "TYPE_STRING", content)).from_tensors(
        {"words": np.array([b"a", b"b"], dtype=object)}
    )
    with pytest.raises(MlflowException, match="does not match expected dtype"):
        _enforce_schema(decoded, Schema([TensorSpec(dtype, (-1,))]))
    signature = ModelSignature(inputs=Schema([TensorSpec(dtype, (-1,))]), outputs=Schema([TensorSpec(dtype, (-1,))]))
    with pytest.raises(UnsupportedSchemaError, match="fixed-width"):
        layout_from_signature(signature, "sklearn")


@pytest.mark.parametrize(
    "prediction",
    [
        pd.DataFrame({"unit price": [1.5], "count": [2], "discount": [0.1]}),
        {"unit price": [1.5], "count": [2], "discount": [0.1]},
        [{"unit price": 1.5, "count": 2}, {"unit price": 2.5, "count": 3, "discount": 0.1}],
    ],
    ids=["frame", "dict-of-columns", "records"],
)
def test_a_prediction_with_a_column_no_output_carries_is_refused_naming_it_while_an_input_may_hold_more(prediction):
    mapping, types = COLUMNS.mapping, {spec.tensor: (spec.data_type, spec.dims) for spec in COLUMNS.specs}

    with pytest.raises(TensorMappingError, match=r"^The prediction holds `discount`, which no output tensor carries"):
        StructureCodec(mapping, types, prediction=True).to_tensors(prediction)
    assert set(COLUMNS.to_tensors(prediction)) == {"unit_price", "count"}  # an input: MLflow ignores extra columns


def test_an_unnamed_columns_prediction_wider_than_its_outputs_is_refused_naming_the_extra_column():
    unnamed = StructureMapping("columns", (FieldMapping(None, "output_0", None),))
    frame = pd.DataFrame({"yhat": [1.0], "lower": [0.5]})

    with pytest.raises(TensorMappingError, match=r"^The prediction holds `lower`, which no output tensor carries"):
        StructureCodec(unnamed, {"output_0": ("TYPE_FP64", (-1,))}, prediction=True).to_tensors(frame)
