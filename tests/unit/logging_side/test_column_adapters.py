"""Optional and datetime input columns (#22.6, mapping version 4): masks, nanoseconds, MLflow's enforcement.

A frame the runtime rebuilds from tensors must be what MLflow's schema enforcement makes of the
caller's frame, dtype and values; a request that cannot be decoded exactly fails naming the tensor.
"""

import datetime
import json
import re

import mlflow.models
import numpy as np
import pandas as pd
import pytest
from mlflow.models import ModelSignature, infer_signature
from mlflow.models.utils import _enforce_schema
from mlflow.types import ColSpec, Schema

from mlflow_triton import sklearn
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import build_config, declarations, parse_config, render_config
from mlflow_triton.repository.layout import codecs_for
from mlflow_triton.runtime.codecs import StructureCodec, TensorMappingError
from mlflow_triton.runtime.conversions import to_nanoseconds
from mlflow_triton.shared_contract import Contract, ContractError, FieldMapping, StructureMapping
from tests.support import column_models

OUTPUT = np.array([1.0, 2.0, 3.0])


def objects(*items):
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


def input_codec(frame):
    """The input codec logging builds for ``frame`` as an example (MLflow infers the signature)."""
    layout = layout_from_signature(infer_signature(frame, OUTPUT[: len(frame)]), "sklearn")
    return codecs_for(layout)[0], layout


def assert_decoded_like_mlflow(frame):
    """The frame rebuilt from ``frame``'s tensors, after MLflow's enforcement, equals ``frame`` after it."""
    codec, layout = input_codec(frame)
    schema = infer_signature(frame, OUTPUT[: len(frame)]).inputs

    decoded = codec.from_tensors(codec.to_tensors(frame))

    pd.testing.assert_frame_equal(_enforce_schema(decoded, schema), _enforce_schema(frame, schema), check_exact=True)
    return decoded


@pytest.mark.parametrize(
    ("column", "dtype"),
    [
        (pd.Series([1.5, np.nan, -0.0]), "float64"),
        (pd.Series([1.5, np.nan, 2.0], dtype="float32"), "float32"),
        (pd.Series(["a", None, ""]), None),
        (pd.Series(objects(b"\x00", None, b"\xff")), "object"),
        (pd.Series(objects(True, None, False)), "object"),
        (pd.Series(pd.to_datetime(["2020-01-01T00:00:00.000000001", None, "1970-01-01"], format="ISO8601")), None),
    ],
    ids=["double", "float", "string", "binary", "boolean", "datetime"],
)
def test_columns_codec_rebuilds_the_frame_mlflow_enforces_when_an_optional_column_holds_a_missing_value(column, dtype):
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "maybe": column})

    decoded = assert_decoded_like_mlflow(frame)

    assert decoded["maybe"].isna().tolist() == [False, True, False]
    if dtype is not None:
        assert decoded["maybe"].dtype == dtype


def test_columns_codec_sends_placeholders_and_a_mask_when_rows_are_missing():
    frame = pd.DataFrame({"size": [1.5, np.nan], "city": ["a", None], "flag": objects(None, True)})
    codec, _ = input_codec(frame)

    tensors = codec.to_tensors(frame)

    assert {name: array.tolist() for name, array in tensors.items()} == {
        "size": [1.5, 0.0],
        "size__missing": [False, True],
        "city": [b"a", b""],
        "city__missing": [False, True],
        "flag": [False, True],
        "flag__missing": [True, False],
    }


def test_columns_codec_keeps_a_bool_column_bool_when_its_mask_marks_no_row():
    codec, _ = input_codec(pd.DataFrame({"flag": objects(True, None)}))

    decoded = codec.from_tensors({"flag": np.array([True, False]), "flag__missing": np.array([False, False])})

    assert decoded["flag"].dtype == bool


def test_columns_codec_ignores_the_value_sent_in_a_row_its_mask_marks_missing():
    codec, _ = input_codec(pd.DataFrame({"size": [1.5, np.nan]}))

    decoded = codec.from_tensors({"size": np.array([1.5, 7.0]), "size__missing": np.array([False, True])})

    assert decoded["size"].isna().tolist() == [False, True]


def test_columns_codec_keeps_nan_sent_in_a_float_column_when_its_mask_marks_no_row():
    codec, _ = input_codec(pd.DataFrame({"size": [1.5, np.nan]}))

    decoded = codec.from_tensors({"size": np.array([np.nan, 2.0]), "size__missing": np.array([False, False])})

    assert decoded["size"].isna().tolist() == [True, False]


def test_columns_codec_raises_naming_the_mask_when_a_request_lacks_it():
    codec, _ = input_codec(pd.DataFrame({"size": [1.5, np.nan]}))

    with pytest.raises(TensorMappingError, match=re.escape("Tensor `size__missing` (missing-value mask of `size`) is")):
        codec.from_tensors({"size": np.array([1.5, 2.0])})


def test_columns_codec_raises_naming_the_mask_when_its_length_differs_from_the_column():
    codec, _ = input_codec(pd.DataFrame({"size": [1.5, np.nan]}))

    with pytest.raises(TensorMappingError, match=re.escape("Tensor `size__missing` (missing-value mask of `size`)")):
        codec.from_tensors({"size": np.array([1.5, 2.0]), "size__missing": np.array([False])})


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_columns_codec_rebuilds_datetime64_ns_when_a_required_datetime_column_has_any_unit(unit):
    when = pd.to_datetime(["2020-01-01T00:00:01", "1969-12-31T23:59:59"]).as_unit(unit)
    frame = pd.DataFrame({"when": when})

    decoded = assert_decoded_like_mlflow(frame)

    assert decoded["when"].dtype == "datetime64[ns]"


def test_columns_codec_sends_int64_nanoseconds_and_nat_as_int64_min_when_a_datetime_column_is_required():
    frame = pd.DataFrame({"when": pd.to_datetime(["1970-01-01T00:00:00.000000001", "2020-01-01"], format="ISO8601")})
    codec, layout = input_codec(frame)

    tensors = codec.to_tensors(frame)
    with_nat = codec.from_tensors({"when": np.array([-(2**63), 5])})

    assert layout.contract.inputs.fields == (FieldMapping("when", "when", "datetime"),)
    assert tensors["when"].tolist() == [1, 1_577_836_800_000_000_000]
    assert with_nat["when"].isna().tolist() == [True, False]
    assert with_nat["when"][1] == pd.Timestamp(5, unit="ns")


def test_columns_codec_reads_datetime_objects_when_the_example_is_a_list_of_records():
    frame = pd.DataFrame({"when": pd.to_datetime(["2020-01-01", "2021-01-01"])})
    codec, _ = input_codec(frame)
    records = [{"when": datetime.datetime(2020, 1, 1)}, {"when": pd.Timestamp("2021-01-01")}]

    assert codec.to_tensors(records)["when"].tolist() == codec.to_tensors(frame)["when"].tolist()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            np.array(["2020-01-01", "3000-01-01"], dtype="datetime64[us]"),
            "element 1 (3000-01-01T00:00:00.000000) lies outside datetime64[ns]'s range",
        ),
        (objects(pd.Timestamp("2020-01-01", tz="UTC")), "element 0 is timezone-aware (UTC); MLflow's schema"),
        (objects("2020-01-01"), "element 0 is a str, not a datetime"),
        (objects(datetime.datetime(3000, 1, 1)), "element 0 lies outside datetime64[ns]'s range"),
        (np.array([1, 2]), "cannot convert int64 values to datetimes"),
    ],
    ids=["out-of-range-us", "tz-aware", "text", "out-of-range-object", "numbers"],
)
def test_to_nanoseconds_raises_naming_the_element_when_a_time_cannot_travel_exactly(values, message):
    with pytest.raises(TensorMappingError, match=re.escape(f"Tensor `when`: {message}")):
        to_nanoseconds(values, "`when`")


def test_columns_codec_raises_naming_the_column_when_the_example_is_timezone_aware():
    frame = pd.DataFrame({"when": pd.to_datetime(["2020-01-01"]).tz_localize("UTC")})
    codec, _ = input_codec(frame)

    with pytest.raises(TensorMappingError, match=re.escape("Tensor `when`: element 0 is timezone-aware")):
        codec.to_tensors(frame)


def test_columns_codec_raises_naming_the_element_when_an_optional_integer_column_misses_a_value():
    frame = pd.DataFrame({"count": pd.array([1, None], dtype="Int64")})
    codec, layout = input_codec(frame)

    assert layout.contract.inputs.fields == (FieldMapping("count", "count", None),)
    with pytest.raises(TensorMappingError, match=re.escape("Tensor `count`: element 1 is missing (<NA>)")):
        codec.to_tensors(frame)


# --- the contract and the config ---------------------------------------------------------------


def contract_with(field, version=4):
    outputs = StructureMapping("tensor", (FieldMapping(None, "out"),))
    return Contract("sklearn", StructureMapping("columns", (field,)), outputs, version=version)


def test_contract_round_trips_a_mask_and_datetime_content_when_version_is_4():
    contract = contract_with(FieldMapping("when", "when", "datetime", missing="when__missing"))

    assert Contract.from_json(contract.to_json()) == contract
    assert contract.inputs.tensor_names == ("when", "when__missing")


@pytest.mark.parametrize(
    "field",
    [FieldMapping("size", "size", missing="size__missing"), FieldMapping("when", "when", "datetime")],
    ids=["mask", "datetime"],
)
@pytest.mark.parametrize("version", [1, 2])
def test_contract_raises_when_an_older_version_carries_a_column_adapter(field, version):
    with pytest.raises(ContractError, match="missing-value masks and datetime content need version 4"):
        contract_with(field, version=version)


def test_contract_from_json_raises_when_a_version_2_field_has_a_missing_key():
    data = contract_with(FieldMapping("size", "size", missing="size__missing")).to_dict()
    data["version"] = 2
    del data["max_batch_size"]

    with pytest.raises(ContractError, match="Mapping version 2: missing-value masks and datetime content need"):
        Contract.from_json(json.dumps(data))


def test_structure_mapping_raises_when_a_tensor_structure_carries_a_mask():
    with pytest.raises(ContractError, match="are for 'columns' only; used by: x"):
        StructureMapping("tensor", (FieldMapping(None, "x", missing="x__missing"),))


def test_structure_mapping_raises_when_a_mask_reuses_a_tensor_name():
    with pytest.raises(ContractError, match="Duplicate tensor name 'b'"):
        StructureMapping("columns", (FieldMapping("a", "a", missing="b"), FieldMapping("b", "b")))


def test_config_declares_the_mask_and_parses_back_when_a_column_is_optional():
    layout = layout_from_signature(infer_signature(pd.DataFrame({"size": [1.5, np.nan]}), OUTPUT[:2]), "sklearn")

    config, contract = parse_config(render_config(build_config("model", layout)))

    assert contract == layout.contract
    assert declarations(config)[0] == layout.inputs


def test_codec_raises_when_a_mask_serves_an_integer_column():
    mapping = StructureMapping("columns", (FieldMapping("n", "n", missing="n__missing"),))

    with pytest.raises(TensorMappingError, match="a missing-value mask needs a bool, float, datetime or BYTES column"):
        StructureCodec(mapping, {"n": ("TYPE_INT64", (-1,)), "n__missing": ("TYPE_BOOL", (-1,))})


def test_codec_raises_when_datetime_content_is_not_int64():
    mapping = StructureMapping("columns", (FieldMapping("t", "t", "datetime"),))

    with pytest.raises(TensorMappingError, match="has content 'datetime' but datatype TYPE_FP64"):
        StructureCodec(mapping, {"t": ("TYPE_FP64", (-1,))})


def test_layout_keeps_the_frame_mlflow_enforces_when_the_signature_is_explicit_and_optional():
    schema = Schema([ColSpec("string", "city", required=False), ColSpec("datetime", "when", required=False)])
    frame = pd.DataFrame({"city": ["a", None], "when": pd.to_datetime([None, "2020-01-01"])})
    layout = layout_from_signature(ModelSignature(schema, Schema([ColSpec("double")])), "sklearn")
    codec = codecs_for(layout)[0]

    decoded = codec.from_tensors(codec.to_tensors(frame))

    pd.testing.assert_frame_equal(_enforce_schema(decoded, schema), _enforce_schema(frame, schema), check_exact=True)


@pytest.mark.parametrize(
    ("values", "nanoseconds"),
    [
        (np.array([-9_223_372_036], dtype="datetime64[s]"), -9_223_372_036_000_000_000),
        (np.array([9_223_372_036_854_775], dtype="datetime64[us]"), 9_223_372_036_854_775_000),
        (np.array(["2020-02"], dtype="datetime64[M]"), 1_580_515_200_000_000_000),
        (np.array(["NaT", 1], dtype="datetime64[D]"), -(2**63)),
    ],
    ids=["lowest-second", "highest-microsecond", "month", "nat"],
)
def test_to_nanoseconds_converts_exactly_when_a_time_lies_at_the_ends_of_the_range(values, nanoseconds):
    assert to_nanoseconds(values, "`when`")[0] == nanoseconds


# --- logging: the shipped request --------------------------------------------------------------


def test_save_model_ships_masks_and_nanoseconds_in_request_json_when_the_example_has_nan_none_and_nat(tmp_path):
    sklearn.save_model(
        column_models.pipeline(),
        tmp_path / "package",
        input_example=column_models.example_frame(),
        triton_model_name="columns",
        serialization_format="cloudpickle",
    )
    repository = tmp_path / "package" / "model_repository" / "columns"

    request = json.loads((repository / "request.json").read_text(encoding="utf-8"))
    validation = json.loads((repository / "validation.json").read_text(encoding="utf-8"))

    assert {entry["name"]: (entry["datatype"], entry["data"]) for entry in request["inputs"]} == {
        "size": ("FP64", [1.5, 0.0, 2.5]),
        "size__missing": ("BOOL", [False, True, False]),
        "city": ("BYTES", ["a", "", "b"]),
        "city__missing": ("BOOL", [False, True, False]),
        "when": ("INT64", [1_583_064_000_000_000_000, 0, 1_612_137_607_000_000_000]),
        "when__missing": ("BOOL", [False, True, False]),
    }
    assert validation["mapping_version"] == 4
    assert not (repository / "request.bin").exists()


def test_input_request_marks_json_nulls_in_the_masks_when_check_reads_a_user_file(tmp_path):
    from mlflow_triton.local.user_input import input_request, load_user_input

    package = tmp_path / "package"
    sklearn.save_model(
        column_models.pipeline(),
        package,
        input_example=column_models.example_frame(),
        triton_model_name="columns",
        serialization_format="cloudpickle",
    )
    user_file = tmp_path / "input.json"
    rows = [[None, None, "2020-01-01T00:00:00.5"], [1.0, "a", None]]
    user_file.write_text(json.dumps({"dataframe_split": {"columns": ["size", "city", "when"], "data": rows}}))
    mlmodel = mlflow.models.Model.load(str(package / "MLmodel"))

    request = input_request(load_user_input(user_file, mlmodel), package / "model_repository" / "columns", tmp_path)

    body = json.loads(request.body_path.read_text(encoding="utf-8"))
    assert {entry["name"]: entry["data"] for entry in body["inputs"]} == {
        "size": [0.0, 1.0],
        "size__missing": [True, False],
        "city": ["", "a"],
        "city__missing": [True, False],
        "when": [1_577_836_800_500_000_000, 0],
        "when__missing": [False, True],
    }
