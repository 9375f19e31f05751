"""TritonPythonModel.execute: each request is answered on its own.

A malformed request (missing input, wrong dtype or shape, invalid UTF-8, a failing predict,
a prediction that does not fit the outputs) gets a TritonError naming the tensor or column, with
INVALID_ARG where the request is at fault and INTERNAL otherwise; the other requests in the
batch get their outputs and the instance keeps serving.

A real scikit-learn Pipeline is served through the generated model.py and the fake
``triton_python_backend_utils``; a fake predictor covers what a real model rarely does.
"""

import json
import re

import mlflow.pyfunc
import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
from google.protobuf import json_format
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, DataType, Schema, TensorSpec
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from mlflow_triton._model_py import compose_model_py
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import build_config
from mlflow_triton.runtime.codecs import StructureCodec, tensor_types_from_model_config
from tests.support import fake_pb_utils

TRAINING = pd.DataFrame({"age": [20.0, 30.0, 40.0, 50.0], "city": ["Köln", "Paris", "Köln", "東京"], "n": [1, 2, 3, 4]})
SIGNATURE = ModelSignature(
    inputs=Schema([ColSpec(DataType.double, "age"), ColSpec(DataType.string, "city"), ColSpec(DataType.long, "n")]),
    outputs=Schema([TensorSpec(np.dtype("int64"), (-1,))]),
)
GOOD_A = TRAINING
GOOD_B = pd.DataFrame({"age": [35.0, 60.0], "city": ["東京", "Paris"], "n": [9, 0]})


def json_model_config(signature, flavor):
    config = build_config("model", layout_from_signature(signature, flavor))
    return json.loads(json_format.MessageToJson(config, preserving_proto_field_name=True))


def initialize_args(config, repository):
    return {
        "model_config": json.dumps(config),
        "model_repository": str(repository),
        "model_version": "1",
        "model_instance_kind": "CPU",
        "model_instance_device_id": "0",
    }


def codecs(config, signature, flavor):
    contract = layout_from_signature(signature, flavor).contract
    return (
        StructureCodec(contract.inputs, tensor_types_from_model_config(config, "input")),
        StructureCodec(contract.outputs, tensor_types_from_model_config(config, "output")),
    )


INVALID_ARG = fake_pb_utils.TritonError.INVALID_ARG
INTERNAL = fake_pb_utils.TritonError.INTERNAL


def error_message(response, code=INVALID_ARG):
    """The error message of a failed response, after checking its code."""
    assert response.has_error()
    assert isinstance(response.error(), fake_pb_utils.TritonError)
    assert response.output_tensors() == []
    assert response.error().code() == code, response.error().message()
    return response.error().message()


def assert_raw_outputs(response, expected):
    """The response's output tensors are ``expected``: arrays built in numpy, not decoded by the runtime's codec."""
    got = fake_pb_utils.outputs_of(response)
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        assert (got[name].dtype, got[name].shape) == (want.dtype, want.shape), name
        np.testing.assert_array_equal(got[name], want)


@pytest.fixture(autouse=True)
def triton_log(monkeypatch):
    """What the model writes to Triton's log during the test: ``[(level, message), ...]``."""
    records = []
    monkeypatch.setattr(fake_pb_utils.Logger, "records", records)
    return records


# -- a real scikit-learn Pipeline behind the generated model.py ------------------------------------


@pytest.fixture(scope="module")
def sklearn_serving(tmp_path_factory):
    """(initialized model.py instance, fitted pipeline, input codec, output codec)."""
    pipeline = make_pipeline(
        make_column_transformer((StandardScaler(), ["age", "n"]), (OneHotEncoder(handle_unknown="error"), ["city"])),
        LogisticRegression(),
    ).fit(TRAINING, [0, 1, 0, 1])
    repository = tmp_path_factory.mktemp("repository") / "iris"
    mlflow.sklearn.save_model(
        pipeline,
        repository / "1" / "artifact",
        signature=SIGNATURE,
        serialization_format="cloudpickle",  # skops would add seconds of imports to every run
        pip_requirements=[],
    )
    (repository / "1" / "model.py").write_text(compose_model_py(), encoding="utf-8")
    config = json_model_config(SIGNATURE, "sklearn")
    module = fake_pb_utils.load_model_py(repository / "1" / "model.py", name="served_sklearn_model_py")
    model = module.TritonPythonModel()
    model.initialize(initialize_args(config, repository))
    inputs, outputs = codecs(config, SIGNATURE, "sklearn")
    return model, pipeline, inputs, outputs


def missing_input(tensors):
    del tensors["city"]


def wrong_dtype(tensors):
    tensors["n"] = tensors["n"].astype(np.int32)


def wrong_shape(tensors):
    tensors["age"] = tensors["age"].reshape(2, 2)


def invalid_utf8(tensors):
    tensors["city"] = np.array([b"ok", b"\xffbad", b"ok", b"ok"], dtype=object)


def numbers_for_text(tensors):
    tensors["city"] = np.array([1.0, 2.0, 3.0, 4.0])


def unequal_lengths(tensors):
    tensors["age"] = tensors["age"][:3]


def unknown_category(tensors):
    tensors["city"] = np.array([b"Paris", b"Atlantis", b"Paris", b"Paris"], dtype=object)


def float_for_long(tensors):
    tensors["n"] = tensors["n"].astype(np.float64)


MALFORMED = {
    missing_input: (r"^Tensor `city` is missing$", INVALID_ARG),
    wrong_dtype: (r"^Tensor `n`: dtype int32 does not match configured TYPE_INT64", INVALID_ARG),
    wrong_shape: (r"^Tensor `age`: shape \[2, 2\] does not match configured dims \[-1\]$", INVALID_ARG),
    invalid_utf8: (r"^Tensor `city`: element 1 is not valid UTF-8 text", INVALID_ARG),
    numbers_for_text: (r"^Tensor `city`: dtype float64 is not BYTES$", INVALID_ARG),
    unequal_lengths: (r"^Column tensors must have equal lengths; got age: 3, city: 4, n: 4$", INVALID_ARG),
    unknown_category: (
        r"^Prediction failed: ValueError; its message may quote the request, so it is only in "
        r"Triton's log \(reference [0-9a-f]{8}\)$",
        INTERNAL,
    ),
}


@pytest.mark.parametrize("malform", MALFORMED, ids=lambda malform: malform.__name__)
def test_execute_answers_only_the_malformed_request_with_an_error_when_a_batch_mixes_requests(sklearn_serving, malform):
    model, pipeline, inputs, _ = sklearn_serving
    bad = inputs.to_tensors(GOOD_A)
    malform(bad)
    batch = [inputs.to_tensors(GOOD_A), bad, inputs.to_tensors(GOOD_B)]

    first, broken, last = model.execute([fake_pb_utils.request_from_arrays(t) for t in batch])

    pattern, code = MALFORMED[malform]
    assert re.search(pattern, error_message(broken, code))
    assert_raw_outputs(first, {"output_0": np.array(pipeline.predict(GOOD_A), dtype=np.int64)})
    assert_raw_outputs(last, {"output_0": np.array(pipeline.predict(GOOD_B), dtype=np.int64)})


def test_execute_answers_the_pipelines_prediction_as_an_int64_tensor_when_the_request_is_built_in_numpy(
    sklearn_serving,
):
    """Request and answer as Triton carries them, written without the runtime's codecs: rank-one columns."""
    model, pipeline, _, _ = sklearn_serving
    request = {
        "age": np.array([35.0, 60.0]),
        "city": np.array(["東京".encode(), b"Paris"], dtype=object),
        "n": np.array([9, 0], dtype=np.int64),
    }

    [response] = model.execute([fake_pb_utils.request_from_arrays(request)])

    assert_raw_outputs(response, {"output_0": np.array(pipeline.predict(GOOD_B), dtype=np.int64)})


def test_execute_answers_a_schema_error_without_the_request_data_when_mlflow_refuses_the_decoded_input(
    monkeypatch, sklearn_serving
):
    model, *_ = sklearn_serving
    monkeypatch.setattr(model.inputs.specs[2], "dtype", np.dtype("float64"))  # as if config.pbtxt said TYPE_FP64
    tensors = model.inputs.to_tensors(GOOD_A.assign(city=["SECRET-abc", "Paris", "Köln", "東京"]))

    [response] = model.execute([fake_pb_utils.request_from_arrays(tensors)])

    assert error_message(response, INVALID_ARG) == (
        "The request does not match the model's input schema: Incompatible input types for column n. "
        "Can not safely convert float64 to int64."
    )


def test_execute_keeps_the_model_error_text_out_of_the_response_and_in_the_log_when_predict_raises(
    sklearn_serving, triton_log
):
    model, *_ = sklearn_serving
    tensors = model.inputs.to_tensors(GOOD_A.assign(city=["SECRET-TOKEN-abc123", "Paris", "Köln", "東京"]))

    [response] = model.execute([fake_pb_utils.request_from_arrays(tensors)])

    message = error_message(response, INTERNAL)
    assert "SECRET" not in message
    reference = re.search(r"reference ([0-9a-f]{8})", message).group(1)
    [(level, logged)] = triton_log
    assert level == "error"
    assert logged.startswith(f"mlflow-triton [{reference}] Prediction failed: ValueError: Found unknown categories")
    assert "SECRET-TOKEN-abc123" in logged


def test_execute_keeps_serving_when_an_earlier_batch_failed_entirely(sklearn_serving):
    model, pipeline, inputs, outputs = sklearn_serving
    bad = inputs.to_tensors(GOOD_A)
    unknown_category(bad)
    failed = model.execute([fake_pb_utils.request_from_arrays(bad)] * 3)

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(GOOD_B))])

    assert all(r.has_error() for r in failed)
    prediction = fake_pb_utils.outputs_of(response)
    assert list(prediction) == ["output_0"]
    assert prediction["output_0"].dtype == np.int64
    np.testing.assert_array_equal(prediction["output_0"], pipeline.predict(GOOD_B))


def test_execute_returns_no_responses_when_the_batch_is_empty(sklearn_serving):
    model, *_ = sklearn_serving

    assert model.execute([]) == []


# -- a fake predictor for the edge cases -----------------------------------------------------------


class ScriptedPredictor:
    """Answers with ``respond(model_input)``; remembers every input it saw."""

    def __init__(self, respond):
        self.respond = respond
        self.seen = []

    def predict(self, model_input):
        self.seen.append(model_input)
        return self.respond(model_input)


def serve(monkeypatch, signature, respond, flavor="pyfunc"):
    fake_pb_utils.install()
    from mlflow_triton.runtime.triton_model import TritonPythonModel

    predictor = ScriptedPredictor(respond)
    monkeypatch.setattr(mlflow.pyfunc, "load_model", lambda uri: predictor)
    config = json_model_config(signature, flavor)
    model = TritonPythonModel()
    model.initialize(initialize_args(config, "/models/fake"))
    inputs, outputs = codecs(config, signature, flavor)
    return model, predictor, inputs, outputs


PRICES = ModelSignature(
    inputs=Schema([ColSpec(DataType.double, "unit price"), ColSpec(DataType.string, "label")]),
    outputs=Schema([TensorSpec(np.dtype("int64"), (-1,))]),
)
PRICES_FRAME = pd.DataFrame({"unit price": [1.5, 2.5], "label": ["a", "b"]})


def test_execute_names_the_field_and_its_tensor_when_an_input_with_a_sanitized_name_is_missing(monkeypatch):
    model, predictor, inputs, _ = serve(monkeypatch, PRICES, lambda frame: np.arange(len(frame)))
    tensors = inputs.to_tensors(PRICES_FRAME)
    del tensors["unit_price"]

    [response] = model.execute([fake_pb_utils.request_from_arrays(tensors)])

    assert error_message(response) == "Tensor `unit_price` (field `unit price`) is missing"
    assert predictor.seen == []


def test_execute_writes_a_nul_of_an_error_message_as_an_escape_so_triton_carries_all_of_it(monkeypatch):
    # Triton carries the message as a C string: before, it ended at the column name's U+0000, without the row
    named = ModelSignature(
        inputs=Schema([ColSpec(DataType.double, "a\x00b"), ColSpec(DataType.string, "label")]),
        outputs=PRICES.outputs,
    )
    model, predictor, inputs, _ = serve(monkeypatch, named, lambda frame: np.arange(len(frame)))
    tensors = inputs.to_tensors(pd.DataFrame({"a\x00b": [1.5], "label": ["a"]}))
    [tensor] = [name for name in tensors if name != "label"]
    del tensors[tensor]

    [response] = model.execute([fake_pb_utils.request_from_arrays(tensors)])

    assert error_message(response) == f"Tensor `{tensor}` (field `a\\x00b`) is missing"
    assert predictor.seen == []


def test_execute_hands_predict_a_frame_with_the_original_column_names_when_inputs_are_columns(monkeypatch):
    model, predictor, inputs, _ = serve(monkeypatch, PRICES, lambda frame: np.arange(len(frame)))

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    [frame] = predictor.seen
    pd.testing.assert_frame_equal(frame, PRICES_FRAME)
    assert_raw_outputs(response, {"output_0": np.array([0, 1], dtype=np.int64)})


def test_execute_answers_other_requests_when_predict_raises_for_one(monkeypatch):
    def respond(frame):
        if "boom" in frame["label"].tolist():
            raise RuntimeError("exploded on purpose")
        return np.arange(len(frame))

    model, _, inputs, _ = serve(monkeypatch, PRICES, respond)
    boom = PRICES_FRAME.assign(label=["boom", "b"])
    requests = [fake_pb_utils.request_from_arrays(inputs.to_tensors(f)) for f in (PRICES_FRAME, boom, PRICES_FRAME)]

    first, broken, last = model.execute(requests)

    assert error_message(broken, INTERNAL).startswith("Prediction failed: RuntimeError; its message may quote")
    for response in (first, last):
        assert_raw_outputs(response, {"output_0": np.array([0, 1], dtype=np.int64)})


OUTPUT_MISFIT = r"^The prediction does not fit the configured outputs: "


@pytest.mark.parametrize(
    ("prediction", "message"),
    [
        (np.array([0.5, 1.5]), r"Tensor `output_0`: cannot convert float64 values to TYPE_INT64 \(int64\)$"),
        (["x", "y"], r"Tensor `output_0`: element 0 is a str, not a number \(TYPE_INT64 expected\)$"),
        (
            np.zeros((2, 2), dtype=np.int64),
            r"Tensor `output_0`: shape \[2, 2\] does not match configured dims \[-1\]$",
        ),
        (
            np.array([1, 2**63], dtype=np.uint64),
            r"Tensor `output_0`: element 1 \(9223372036854775808\) does not fit TYPE_INT64 \(int64\) unchanged$",
        ),
    ],
    ids=["float-for-int", "text-for-int", "wrong-rank", "uint64-beyond-int64"],
)
def test_execute_names_the_output_tensor_with_an_internal_error_when_the_prediction_does_not_fit(
    monkeypatch, prediction, message
):
    model, _, inputs, _ = serve(monkeypatch, PRICES, lambda frame: prediction)

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    assert re.search(OUTPUT_MISFIT + message, error_message(response, INTERNAL))


SCORES = ModelSignature(
    inputs=Schema([TensorSpec(np.dtype("float32"), (-1, 3), "pixels")]),
    outputs=Schema([TensorSpec(np.dtype("float32"), (-1,), "scores"), TensorSpec(np.dtype(object), (-1,), "label")]),
)
PIXELS = {"pixels": np.arange(6, dtype=np.float32).reshape(2, 3)}


@pytest.mark.parametrize(
    ("prediction", "message"),
    [
        ({"scores": np.ones(2, dtype=np.float32)}, r"Tensor `label`: key `label` is missing$"),
        (np.ones(2, dtype=np.float32), r"Expected a dict of named tensors, got ndarray$"),
        (
            {"scores": np.ones(2, dtype=np.float32), "label": ["ok", None]},
            r"Tensor `label`: element 1 is missing \(None\); BYTES values cannot be null$",
        ),
        (
            {"scores": np.ones(2, dtype=np.float32), "label": ["ok", "\ud800"]},
            r"Tensor `label`: element 1 cannot be encoded as UTF-8 \(surrogates not allowed at position 0\)$",
        ),
        (
            {"scores": np.ones(2, dtype=np.float32), "label": [b"ok", b"\xff"]},
            r"Tensor `label`: element 1 is not valid UTF-8 text \(invalid start byte at byte 0\)$",
        ),
        (
            {"scores": np.ones(2, dtype=np.float32), "label": ["a", "b"], "debug": [1, 2]},
            r"The prediction holds `debug`, which no output tensor carries \(outputs: .*\); MLflow's server would "
            r"return it, so this answer is refused rather than sent without it",
        ),
    ],
    ids=["missing-key", "not-a-dict", "null-text", "lone-surrogate", "invalid-utf8-bytes", "unmapped-key"],
)
def test_execute_names_the_output_tensor_when_a_dict_prediction_does_not_fit(monkeypatch, prediction, message):
    model, _, inputs, _ = serve(monkeypatch, SCORES, lambda tensors: prediction)

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PIXELS))])

    assert re.search(OUTPUT_MISFIT + message, error_message(response, INTERNAL))


def test_execute_hands_predict_an_ndarray_when_the_single_input_tensor_is_named(monkeypatch):
    model, predictor, inputs, _ = serve(
        monkeypatch, SCORES, lambda pixels: {"scores": pixels.sum(axis=1), "label": ["a"] * len(pixels)}
    )

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PIXELS["pixels"]))])

    [seen] = predictor.seen
    assert isinstance(seen, np.ndarray)
    np.testing.assert_array_equal(seen, PIXELS["pixels"])
    assert fake_pb_utils.outputs_of(response)["label"].tolist() == [b"a", b"a"]


def test_execute_encodes_text_outputs_as_utf8_bytes_when_predictions_are_named_tensors(monkeypatch):
    labels = ["", "a\x00", "名前", "🎉"]

    def respond(pixels):
        rows = len(pixels)
        return {"scores": pixels.sum(axis=1), "label": np.array(labels[:rows], dtype=object)}

    model, predictor, inputs, _ = serve(monkeypatch, SCORES, respond)
    pixels = {"pixels": np.arange(12, dtype=np.float32).reshape(4, 3)}

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(pixels))])

    outputs = fake_pb_utils.outputs_of(response)
    assert outputs["label"].dtype == object
    assert outputs["label"].tolist() == [label.encode("utf-8") for label in labels]
    np.testing.assert_array_equal(outputs["scores"], np.array([3, 12, 21, 30], dtype=np.float32))
    assert isinstance(predictor.seen[0], np.ndarray)


# -- error codes, the error-text policy and older backends -------------------------------------------


def test_execute_answers_without_a_code_when_the_backend_triton_error_has_none(monkeypatch):
    model, _, inputs, _ = serve(monkeypatch, PRICES, lambda frame: np.arange(len(frame)))
    monkeypatch.setattr(fake_pb_utils, "TritonError", fake_pb_utils.LegacyTritonError)
    tensors = inputs.to_tensors(PRICES_FRAME)
    del tensors["unit_price"]

    [response] = model.execute([fake_pb_utils.request_from_arrays(tensors)])

    assert isinstance(response.error(), fake_pb_utils.LegacyTritonError)
    assert response.error().message() == "Tensor `unit_price` (field `unit price`) is missing"


def test_execute_writes_the_model_error_to_stderr_when_the_backend_has_no_logger(monkeypatch, capsys):
    def respond(frame):
        raise RuntimeError("exploded on purpose")

    model, _, inputs, _ = serve(monkeypatch, PRICES, respond)
    monkeypatch.delattr(fake_pb_utils, "Logger")

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    reference = re.search(r"reference ([0-9a-f]{8})", error_message(response, INTERNAL)).group(1)
    assert (
        f"mlflow-triton [{reference}] Prediction failed: RuntimeError: exploded on purpose" in capsys.readouterr().err
    )


def test_execute_caps_what_it_logs_and_answers_when_the_model_error_quotes_a_huge_value(monkeypatch, triton_log):
    from mlflow_triton.runtime.triton_model import MAX_LOGGED_LENGTH, MAX_MESSAGE_LENGTH

    def respond(frame):
        raise ValueError(f"unknown label {frame['label'][0]!r}")

    model, _, inputs, _ = serve(monkeypatch, PRICES, respond)
    huge = PRICES_FRAME.assign(label=["x" * 5_000_000, "b"])

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(huge))])

    message = error_message(response, INTERNAL)
    assert len(message) <= MAX_MESSAGE_LENGTH and "xxx" not in message
    [(_, logged)] = triton_log
    assert "more characters cut" in logged
    assert len(logged) < 2 * MAX_LOGGED_LENGTH + 200


def test_execute_refuses_an_empty_request_as_the_client_error_when_the_model_fails_on_it(monkeypatch):
    texts = ModelSignature(inputs=Schema([ColSpec(DataType.string)]), outputs=Schema([ColSpec(DataType.string)]))
    model, predictor, inputs, _ = serve(monkeypatch, texts, lambda frame: [][0], flavor="transformers")

    [response] = model.execute(
        [fake_pb_utils.request_from_arrays(inputs.to_tensors(pd.DataFrame({0: []}, dtype=object)))]
    )

    assert error_message(response, INVALID_ARG) == (
        "Tensor `input_0` is empty and the model cannot predict an empty request (IndexError); "
        "send at least one element"
    )
    assert len(predictor.seen) == 1


def test_execute_answers_an_internal_error_when_the_model_fails_on_a_request_with_rows(monkeypatch):
    texts = ModelSignature(inputs=Schema([ColSpec(DataType.string)]), outputs=Schema([ColSpec(DataType.string)]))
    model, _, inputs, _ = serve(monkeypatch, texts, lambda frame: [][0], flavor="transformers")

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(pd.DataFrame({0: ["a"]})))])

    assert error_message(response, INTERNAL).startswith("Prediction failed: IndexError; its message may quote")


def test_execute_answers_an_empty_request_when_the_model_predicts_it(monkeypatch):
    model, predictor, inputs, _ = serve(monkeypatch, PRICES, lambda frame: np.arange(len(frame)))

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME.iloc[:0]))])

    assert_raw_outputs(response, {"output_0": np.zeros(0, dtype=np.int64)})
    assert len(predictor.seen) == 1


def test_execute_answers_an_internal_error_naming_the_tensors_when_dict_prediction_columns_differ_in_length(
    monkeypatch,
):
    table = ModelSignature(
        inputs=PRICES.inputs, outputs=Schema([ColSpec(DataType.double, "a"), ColSpec(DataType.long, "b")])
    )
    model, _, inputs, _ = serve(monkeypatch, table, lambda frame: {"a": [1.0, 2.0], "b": [1, 2, 3]})

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    assert error_message(response, INTERNAL) == (
        "The prediction does not fit the configured outputs: Column values must have equal lengths; got a: 2, b: 3"
    )


INTEGER_LABELS = ModelSignature(
    inputs=Schema([ColSpec(DataType.double, 0), ColSpec(DataType.double, 1)]),
    outputs=Schema([ColSpec(DataType.double, 0), ColSpec(DataType.double, 1)]),
)


def test_execute_rebuilds_integer_column_labels_when_the_signature_has_them(monkeypatch):
    example = pd.DataFrame(np.arange(6.0).reshape(3, 2))
    model, predictor, inputs, outputs = serve(monkeypatch, INTEGER_LABELS, lambda frame: frame * 2)

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(example))])

    [frame] = predictor.seen
    assert list(frame.columns) == [0, 1] and frame.columns.equals(example.columns)
    pd.testing.assert_frame_equal(frame, example, check_column_type=False)
    answer = outputs.from_tensors(fake_pb_utils.outputs_of(response))
    pd.testing.assert_frame_equal(answer, example * 2, check_column_type=False)
    assert_raw_outputs(response, {"_0_2": np.array([0.0, 4.0, 8.0]), "_1_2": np.array([2.0, 6.0, 10.0])})
