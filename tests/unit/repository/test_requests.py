"""``_requests``: request.json, or request.bin + request.headers, read back with tritonclient's decoders."""

import json

import numpy as np
import pytest

from mlflow_triton.repository.request_files import (
    BINARY_HEADERS,
    BINARY_REQUEST,
    JSON_HEADER_LENGTH,
    JSON_REQUEST,
    binary_request,
    json_keeps,
    json_request,
    needs_binary,
    triton_json_double,
    triton_passes,
    wire_parameters,
    write_request,
)
from tests.unit.conftest import arrays_from_binary_request, arrays_from_json_request, read_headers_file


def _bytes(*items):
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


TENSORS = {
    "price": np.array([1.5, -2.25, 0.0]),
    "count": np.array([1, 2, 3], dtype=np.int32),
    "flag": np.array([True, False, True]),
    "name": _bytes("Zürich".encode(), b"Oslo", b""),
    "image": np.arange(12, dtype=np.float32).reshape(3, 2, 2),
}
DATATYPES = {
    "price": "TYPE_FP64",
    "count": "TYPE_INT32",
    "flag": "TYPE_BOOL",
    "name": "TYPE_STRING",
    "image": "TYPE_FP32",
}
CONTENTS = {"name": "text"}
OUTPUTS = {"label": "TYPE_STRING", "probabilities": "TYPE_FP64"}


def _assert_same_arrays(actual, expected):
    assert list(actual) == list(expected)
    for name, array in expected.items():
        assert actual[name].shape == array.shape, name
        if array.dtype == object:
            assert actual[name].tolist() == array.tolist(), name
        else:
            assert actual[name].dtype == array.dtype, name
            np.testing.assert_array_equal(actual[name], array)


# -- needs_binary ------------------------------------------------------------------------------


def test_needs_binary_is_false_when_values_are_finite_numbers_and_text():
    assert needs_binary(TENSORS, CONTENTS) is False


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_needs_binary_is_true_when_a_float_tensor_holds_a_non_finite_value(value, dtype):
    tensors = {**TENSORS, "price": np.array([1.0, value], dtype=dtype)}

    assert needs_binary(tensors, CONTENTS) is True


def test_needs_binary_is_true_when_a_tensor_is_fp16_because_triton_refuses_fp16_in_json():
    tensors = {**TENSORS, "half": np.array([[0.5, 1.0]], dtype=np.float16)}

    assert needs_binary(tensors, CONTENTS) is True


def test_needs_binary_is_true_when_an_output_is_fp16_because_triton_sends_fp16_only_as_binary():
    assert needs_binary(TENSORS, CONTENTS, {"label": "TYPE_STRING", "half": "TYPE_FP16"}) is True
    assert needs_binary(TENSORS, CONTENTS, OUTPUTS) is False


def test_needs_binary_is_true_when_an_output_carries_binary_bytes_because_triton_writes_them_into_json_as_is():
    assert needs_binary(TENSORS, CONTENTS, OUTPUTS, {"label": "binary"}) is True
    assert needs_binary(TENSORS, CONTENTS, OUTPUTS, {"label": "text"}) is False


def test_needs_binary_is_true_when_a_bytes_tensor_carries_binary_content():
    assert needs_binary({"blob": _bytes(b"\x00\xff")}, {"blob": "binary"}) is True


# Read back by the real Triton 2.51 in tests/e2e/test_fidelity_generated.py (found by the fidelity campaign).
MISREAD_FLOAT64 = -1.8585403758418125e-246


def test_needs_binary_is_true_when_triton_would_read_a_float64_from_json_as_another_number():
    tensors = {**TENSORS, "price": np.array([1.5, MISREAD_FLOAT64])}

    assert needs_binary(tensors, CONTENTS) is True


def test_needs_binary_is_false_when_the_float_that_triton_would_misread_is_float32():
    tensors = {**TENSORS, "price": np.array([1.5, 0.1, 3.4028234663852886e38], dtype=np.float32)}

    assert needs_binary(tensors, CONTENTS) is False


@pytest.mark.parametrize(
    "text, expected",
    [
        ("-1.8585403758418125e-246", -1.8585403758418123e-246),  # RapidJSON's normal precision: the neighbour
        ("123456789012345.67", 123456789012345.69),  # fraction digits beyond 2**53 are added in double arithmetic
        ("0.1", 0.1),
        ("-0.0", -0.0),
        ("100.0", 100.0),
        ("1e+16", 1e16),
        ("5e-324", 5e-324),  # below 1e-308: two divisions
        ("1.7976931348623157e+308", 1.7976931348623157e308),
    ],
)
def test_triton_json_double_reads_like_rapidjson_at_normal_precision_when_given_a_json_number(text, expected):
    assert repr(triton_json_double(text)) == repr(expected)


def test_json_keeps_is_true_when_float64_values_are_short_decimals():
    assert json_keeps(np.array([5.1, 3.5, -0.25, 1e-3, 2.0**60])) is True


def test_json_keeps_is_false_when_triton_would_misread_one_float64():
    assert json_keeps(np.array([0.5, MISREAD_FLOAT64])) is False


def test_needs_binary_is_false_when_a_bytes_tensor_carries_text_content():
    assert needs_binary({"name": _bytes(b"caf\xc3\xa9")}, {"name": "text"}) is False


# -- request.json --------------------------------------------------------------------------------


def test_json_request_lists_every_input_with_its_concrete_shape_and_every_output_when_values_are_finite():
    body = json_request(TENSORS, DATATYPES, OUTPUTS)

    assert [(i["name"], i["datatype"], i["shape"]) for i in body["inputs"]] == [
        ("price", "FP64", [3]),
        ("count", "INT32", [3]),
        ("flag", "BOOL", [3]),
        ("name", "BYTES", [3]),
        ("image", "FP32", [3, 2, 2]),
    ]
    assert body["outputs"] == [{"name": "label"}, {"name": "probabilities"}]


def test_json_request_flattens_row_major_and_decodes_text_when_values_are_finite():
    inputs = {i["name"]: i["data"] for i in json_request(TENSORS, DATATYPES, OUTPUTS)["inputs"]}

    assert inputs["image"] == list(range(12))
    assert inputs["name"] == ["Zürich", "Oslo", ""]
    assert inputs["flag"] == [True, False, True]


def test_json_request_reads_back_to_the_same_tensors_when_decoded_by_datatype_and_shape():
    body = json.loads(json.dumps(json_request(TENSORS, DATATYPES, OUTPUTS)))

    _assert_same_arrays(arrays_from_json_request(body), TENSORS)


def test_write_request_writes_only_utf8_request_json_when_values_are_finite(tmp_path):
    written = write_request(tmp_path, TENSORS, DATATYPES, CONTENTS, OUTPUTS)

    assert written == [JSON_REQUEST]
    assert sorted(p.name for p in tmp_path.iterdir()) == [JSON_REQUEST]
    text = (tmp_path / JSON_REQUEST).read_text(encoding="utf-8")
    assert "Zürich" in text
    assert json.loads(text) == json_request(TENSORS, DATATYPES, OUTPUTS)


# -- request.bin + request.headers ---------------------------------------------------------------


def test_binary_request_reads_back_to_the_same_tensors_when_parsed_with_tritonclient():
    tensors = {**TENSORS, "price": np.array([np.nan, np.inf, -np.inf]), "blob": _bytes(b"a\x00", b"\x00", b"\xff")}
    datatypes = {**DATATYPES, "blob": "TYPE_STRING"}

    body, headers = binary_request(tensors, datatypes, OUTPUTS)

    prefix, arrays = arrays_from_binary_request(body, headers)
    _assert_same_arrays(arrays, tensors)
    assert [(i["name"], i["datatype"], i["shape"]) for i in prefix["inputs"]] == [
        (name, datatypes[name].removeprefix("TYPE_").replace("STRING", "BYTES"), list(array.shape))
        for name, array in tensors.items()
    ]


def test_binary_request_asks_for_every_output_as_binary_when_built():
    body, headers = binary_request({"price": np.array([np.nan])}, {"price": "TYPE_FP64"}, OUTPUTS)

    prefix, _ = arrays_from_binary_request(body, headers)
    assert prefix["outputs"] == [
        {"name": "label", "parameters": {"binary_data": True}},
        {"name": "probabilities", "parameters": {"binary_data": True}},
    ]


def test_binary_request_declares_octet_stream_and_the_json_prefix_length_when_built():
    body, headers = binary_request({"price": np.array([np.nan, 1.0])}, {"price": "TYPE_FP64"}, OUTPUTS)

    _, prefix_end = json.JSONDecoder().raw_decode(body.decode("latin-1"))
    assert headers == {"Content-Type": "application/octet-stream", JSON_HEADER_LENGTH: str(prefix_end)}
    assert len(body) == prefix_end + 16


def test_write_request_writes_body_and_headers_only_when_an_input_is_not_finite(tmp_path):
    tensors = {**TENSORS, "price": np.array([1.0, np.nan, 3.0])}

    written = write_request(tmp_path, tensors, DATATYPES, CONTENTS, OUTPUTS)

    assert written == [BINARY_REQUEST, BINARY_HEADERS]
    assert sorted(p.name for p in tmp_path.iterdir()) == [BINARY_REQUEST, BINARY_HEADERS]
    headers = read_headers_file(tmp_path / BINARY_HEADERS)
    _, arrays = arrays_from_binary_request((tmp_path / BINARY_REQUEST).read_bytes(), headers)
    _assert_same_arrays(arrays, tensors)


def test_write_request_keeps_trailing_nul_bytes_when_a_column_is_binary(tmp_path):
    tensors = {"blob": _bytes(b"ab\x00\x00", b"\x00", b"")}

    write_request(tmp_path, tensors, {"blob": "TYPE_STRING"}, {"blob": "binary"}, {"out": "TYPE_INT64"})

    headers = read_headers_file(tmp_path / BINARY_HEADERS)
    _, arrays = arrays_from_binary_request((tmp_path / BINARY_REQUEST).read_bytes(), headers)
    assert arrays["blob"].tolist() == [b"ab\x00\x00", b"\x00", b""]


# -- #31.2: an example's params as request parameters Triton passes unchanged ------------------------


def test_wire_parameters_sends_scalars_as_they_are_and_lists_as_json_text_when_triton_passes_every_value():
    assert wire_parameters({"scale": 0.25, "tag": "a", "count": 3, "stop": ["."]}) == {
        "scale": 0.25,
        "tag": "a",
        "count": 3,
        "stop": '["."]',
    }


@pytest.mark.parametrize("changed", [{"threshold": 5 / 11}, {"tag": "ab\x00cd"}, {"count": 2**63}])
def test_wire_parameters_sends_every_param_as_json_text_in_mlflow_params_when_triton_would_change_one(changed):
    params = {"stop": ["."], **changed}

    wire = wire_parameters(params)

    assert list(wire) == ["mlflow_params"]
    decoded = json.loads(wire["mlflow_params"])
    assert repr(decoded) == repr(params)
    assert "\x00" not in wire["mlflow_params"]  # Triton cuts a string there: JSON text writes it as \u0000


def test_triton_passes_is_false_for_a_double_that_triton_reads_as_its_neighbour_from_json():
    assert triton_json_double(repr(5 / 11)) == 0.4545454545454546 != 5 / 11
    assert not triton_passes(5 / 11) and triton_passes(0.5)
    assert triton_passes(float("nan")) and triton_passes(float("-inf"))  # Triton 2.51 passes NaN and Infinity as sent
