"""TritonPythonModel.execute with dynamic batching: join, predict once, split, fall back.

With ``max_batch_size > 0`` the requests of one ``execute`` that share their raw parameters are
joined into one model input and predicted once; the prediction is split back by each request's row
count. A request that cannot be decoded gets its own 400 and the others are still joined; if the
joint prediction raises, every request is predicted alone so one bad request cannot fail the others;
a joint prediction with another number of rows is an OutputError naming the tensor.

Requests here carry the tensors in the shapes Triton's core hands a batched model, each input's
``reshape { shape: [1, *dims] }`` applied (``fake_pb_utils.as_handed``): ``[rows, 1, *dims]``.
"""

import json

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from google.protobuf import json_format
from mlflow.models import Model, ModelSignature
from mlflow.types import ColSpec, DataType, Schema, TensorSpec
from mlflow.types.schema import ParamSchema, ParamSpec

from mlflow_triton._batching import Batching, batched_layout
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import build_config
from mlflow_triton.runtime.codecs import StructureCodec, tensor_types_from_model_config
from tests.support import fake_pb_utils

INVALID_ARG = fake_pb_utils.TritonError.INVALID_ARG
INTERNAL = fake_pb_utils.TritonError.INTERNAL

PRICES = ModelSignature(
    inputs=Schema([ColSpec(DataType.double, "price"), ColSpec(DataType.string, "label")]),
    outputs=Schema([TensorSpec(np.dtype("float64"), (-1,))]),
)
ECHO = ModelSignature(
    inputs=Schema([ColSpec(DataType.double, "price"), ColSpec(DataType.string, "label")]),
    outputs=Schema([ColSpec(DataType.double, "price"), ColSpec(DataType.string, "label")]),
)
DICT_OF_TENSORS = ModelSignature(
    inputs=Schema([TensorSpec(np.dtype("float32"), (-1, 2), "a"), TensorSpec(np.dtype("int64"), (-1,), "b")]),
    outputs=Schema([TensorSpec(np.dtype("float32"), (-1, 2))]),
)


class ScriptedPredictor:
    """Answers with ``respond(model_input)``; remembers every input (and the params) it saw.

    With a ``params_schema`` it has pyfunc's ``metadata``, so the runtime accepts request parameters.
    """

    def __init__(self, respond, params_schema=None):
        self.respond = respond
        self.seen = []
        self.params_seen = []
        if params_schema is not None:
            self.metadata = Model(signature=ModelSignature(inputs=None, params=params_schema))

    def predict(self, model_input, params=None):
        self.seen.append(model_input)
        self.params_seen.append(params)
        return self.respond(model_input)


def serve(monkeypatch, signature, respond, max_batch_size=16, params_schema=None):
    """(model, predictor, input codec, output codec) for a batched config built from ``signature``."""
    fake_pb_utils.install()
    from mlflow_triton.runtime.triton_model import TritonPythonModel

    predictor = ScriptedPredictor(respond, params_schema)
    monkeypatch.setattr(mlflow.pyfunc, "load_model", lambda uri: predictor)
    layout = batched_layout(layout_from_signature(signature, "pyfunc"), Batching(max_batch_size=max_batch_size))
    config = json_format.MessageToDict(build_config("model", layout), preserving_proto_field_name=True)
    model = TritonPythonModel()
    model.initialize(
        {
            "model_config": json.dumps(config),
            "model_repository": "/models/fake",
            "model_version": "1",
            "model_instance_kind": "CPU",
            "model_instance_device_id": "0",
        }
    )
    contract = layout.contract
    inputs = StructureCodec(contract.inputs, tensor_types_from_model_config(config, "input"))
    inputs.model_config = config  # requests_of hands the tensors to the model as Triton's core does
    return model, predictor, inputs, StructureCodec(contract.outputs, tensor_types_from_model_config(config, "output"))


def frame(prices, labels):
    return pd.DataFrame({"price": np.asarray(prices, dtype=np.float64), "label": labels})


def requests_of(codec, *frames, parameters="{}"):
    return [request_of(codec, codec.to_tensors(f), parameters) for f in frames]


def request_of(codec, tensors, parameters="{}"):
    return fake_pb_utils.request_from_arrays(tensors, parameters, getattr(codec, "model_config", None))


def error_of(response, code):
    assert response.has_error()
    assert response.output_tensors() == []
    assert response.error().code() == code, response.error().message()
    return response.error().message()


def doubled(model_input):
    return model_input["price"].to_numpy() * 2


ONE, THREE, TWO = frame([1.0], ["a"]), frame([2.0, 3.0, 4.0], ["b", "c", "d"]), frame([5.0, 6.0], ["e", "f"])


def test_execute_predicts_once_and_splits_by_row_counts_when_requests_are_batched(monkeypatch):
    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, doubled)

    answers = model.execute(requests_of(inputs, ONE, THREE, TWO))

    [joined] = predictor.seen
    pd.testing.assert_frame_equal(joined, pd.concat([ONE, THREE, TWO], ignore_index=True))
    for answer, alone in zip(answers, (ONE, THREE, TWO)):
        np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(answer)), doubled(alone))


def test_execute_predicts_alone_without_joining_when_batching_is_on_and_one_request_came(monkeypatch):
    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, doubled)

    [answer] = model.execute(requests_of(inputs, THREE))

    pd.testing.assert_frame_equal(predictor.seen[0], THREE)
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(answer)), doubled(THREE))


def test_execute_answers_the_others_when_one_request_of_a_batch_makes_predict_raise(monkeypatch):
    def respond(model_input):
        if "boom" in model_input["label"].tolist():
            raise RuntimeError("exploded on purpose")
        return doubled(model_input)

    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, respond)
    boom = frame([7.0], ["boom"])

    first, broken, last = model.execute(requests_of(inputs, ONE, boom, TWO))

    assert error_of(broken, INTERNAL).startswith("Prediction failed: RuntimeError; its message may quote")
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(first)), doubled(ONE))
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(last)), doubled(TWO))
    assert [len(seen) for seen in predictor.seen] == [4, 1, 1, 2]  # the joint attempt, then each alone


def test_execute_answers_400_to_an_undecodable_request_and_joins_the_others_when_batched(monkeypatch):
    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, doubled)
    good_one, bad, good_two = requests_of(inputs, ONE, THREE, TWO)
    bad = request_of(inputs, {"price": np.array([1.0, 2.0])})  # no label tensor

    first, broken, last = model.execute([good_one, bad, good_two])

    assert error_of(broken, INVALID_ARG) == "Tensor `label` is missing"
    assert [len(seen) for seen in predictor.seen] == [3]
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(first)), doubled(ONE))
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(last)), doubled(TWO))


def test_execute_fails_each_joined_request_with_its_own_row_count_when_every_prediction_has_another_row_count(
    monkeypatch,
):
    model, predictor, inputs, _ = serve(monkeypatch, PRICES, lambda model_input: doubled(model_input)[:-1])

    one, three = model.execute(requests_of(inputs, ONE, THREE))

    assert [len(seen) for seen in predictor.seen] == [4, 1, 3]  # the joint attempt, then each alone
    for answer, rows in ((one, 1), (three, 3)):
        assert error_of(answer, INTERNAL) == (
            f"Output tensor `output_0` has {rows - 1} row(s) for {rows} input row(s); a batched model must answer "
            "one row per input row"
        )


def test_execute_answers_the_innocent_requests_when_one_request_makes_the_joint_prediction_lose_a_row(monkeypatch):
    def respond(model_input):  # a model that drops a row it cannot predict, instead of raising
        answer = doubled(model_input)
        return answer[(model_input["label"] != "bad").to_numpy()]

    model, _, inputs, outputs = serve(monkeypatch, PRICES, respond)
    bad = frame([7.0, 8.0], ["bad", "g"])

    first, broken, last = model.execute(requests_of(inputs, ONE, bad, TWO))

    assert error_of(broken, INTERNAL).startswith("Output tensor `output_0` has 1 row(s) for 2 input row(s)")
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(first)), doubled(ONE))
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(last)), doubled(TWO))


def test_execute_fails_naming_the_tensor_when_a_lone_batched_request_gets_another_row_count(monkeypatch):
    model, _, inputs, _ = serve(monkeypatch, PRICES, lambda model_input: np.zeros(len(model_input) + 1))

    [answer] = model.execute(requests_of(inputs, TWO))

    assert error_of(answer, INTERNAL).startswith("Output tensor `output_0` has 3 row(s) for 2 input row(s)")


def test_execute_keeps_text_and_nan_exact_when_requests_are_joined(monkeypatch):
    model, predictor, inputs, outputs = serve(monkeypatch, ECHO, lambda model_input: model_input.copy())
    texts = frame([np.nan, -0.0, 1e-310], ["", "東京 ", "a\x00b"])
    more = frame([np.inf, np.nan], ["Zürich", "\U0001f600"])

    answers = model.execute(requests_of(inputs, texts, more))

    assert len(predictor.seen) == 1
    for answer, sent in zip(answers, (texts, more)):
        echoed = outputs.from_tensors(fake_pb_utils.outputs_of(answer))
        assert echoed["label"].tolist() == sent["label"].tolist()
        assert echoed["price"].to_numpy().tobytes() == sent["price"].to_numpy().tobytes()


def test_execute_joins_only_requests_with_equal_parameters_when_batched(monkeypatch):
    schema = ParamSchema([ParamSpec("threshold", "double", 0.0)])
    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, doubled, params_schema=schema)
    plain = requests_of(inputs, ONE, TWO)
    tuned = requests_of(inputs, THREE, ONE, parameters='{"threshold": 0.5}')

    answers = model.execute([plain[0], tuned[0], plain[1], tuned[1]])

    assert sorted(len(seen) for seen in predictor.seen) == [3, 4]
    assert sorted(predictor.params_seen, key=str) == [None, {"threshold": 0.5}]
    for answer, sent in zip(answers, (ONE, THREE, TWO, ONE)):
        np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(answer)), doubled(sent))


def test_execute_joins_only_requests_with_the_same_mlflow_params_and_passes_each_double_exactly_when_batched(
    monkeypatch,
):
    """Neighbouring doubles (5/11 and what Triton's JSON reader makes of it) are two groups, each predicted exactly."""
    schema = ParamSchema([ParamSpec("threshold", "double", 0.0)])
    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, doubled, params_schema=schema)
    exact, neighbour = ({"mlflow_params": json.dumps({"threshold": value})} for value in (5 / 11, 0.4545454545454546))
    first = requests_of(inputs, ONE, TWO, parameters=json.dumps(exact))
    second = requests_of(inputs, THREE, parameters=json.dumps(neighbour))

    answers = model.execute([first[0], second[0], first[1]])

    assert [len(seen) for seen in predictor.seen] == [1 + 2, 3]  # ONE and TWO joined, THREE alone
    assert sorted(repr(params["threshold"]) for params in predictor.params_seen) == [
        "0.45454545454545453",
        "0.4545454545454546",
    ]
    for answer, sent in zip(answers, (ONE, THREE, TWO)):
        np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(answer)), doubled(sent))


def test_execute_predicts_an_empty_request_alone_when_it_comes_in_a_batch(monkeypatch):
    def respond(model_input):
        if len(model_input) == 0:
            raise ValueError("Found array with 0 sample(s)")
        return doubled(model_input)

    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, respond)

    first, empty, last = model.execute(requests_of(inputs, ONE, frame([], []), TWO))

    assert error_of(empty, INVALID_ARG).startswith("Tensor `price` is empty and the model cannot predict")
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(first)), doubled(ONE))
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(last)), doubled(TWO))
    assert sorted(len(seen) for seen in predictor.seen) == [0, 3]


def test_execute_joins_dicts_of_tensors_along_the_first_axis_when_batched(monkeypatch):
    model, predictor, inputs, outputs = serve(
        monkeypatch, DICT_OF_TENSORS, lambda tensors: tensors["a"] * tensors["b"][:, None].astype(np.float32)
    )
    first = {"a": np.arange(2, dtype=np.float32).reshape(1, 2), "b": np.array([3])}
    second = {"a": np.arange(6, dtype=np.float32).reshape(3, 2), "b": np.array([1, 2, 3])}

    answers = model.execute([request_of(inputs, inputs.to_tensors(t)) for t in (first, second)])

    [joined] = predictor.seen
    np.testing.assert_array_equal(joined["b"], [3, 1, 2, 3])
    for answer, sent in zip(answers, (first, second)):
        expected = sent["a"] * sent["b"][:, None]
        np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(answer)), expected)


def test_execute_answers_400_when_a_batched_request_has_tensors_of_different_row_counts(monkeypatch):
    model, predictor, inputs, _ = serve(monkeypatch, DICT_OF_TENSORS, lambda tensors: tensors["a"])
    uneven = {"a": np.zeros((2, 2), dtype=np.float32), "b": np.array([1, 2, 3])}

    [answer] = model.execute([request_of(inputs, uneven)])

    assert error_of(answer, INVALID_ARG) == (
        "Batched input tensors must have the same number of rows (first axis); got a: 2, b: 3"
    )
    assert predictor.seen == []


@pytest.mark.parametrize("requests", [1, 3])
def test_execute_predicts_each_request_alone_when_batching_is_off(monkeypatch, requests):
    model, predictor, inputs, _ = serve(monkeypatch, PRICES, doubled, max_batch_size=0)

    model.execute(requests_of(inputs, *[TWO] * requests))

    assert [len(seen) for seen in predictor.seen] == [2] * requests


def test_execute_refuses_every_request_of_a_group_whose_parameters_are_unknown_and_answers_the_others(monkeypatch):
    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, doubled)
    plain = requests_of(inputs, ONE, TWO)
    tuned = requests_of(inputs, THREE, ONE, parameters='{"threshold": 0.5}')

    answers = model.execute([plain[0], tuned[0], plain[1], tuned[1]])

    for refused in (answers[1], answers[3]):
        assert error_of(refused, INVALID_ARG).startswith("Request parameter(s) `threshold`: this model takes no ")
    for answer, sent in ((answers[0], ONE), (answers[2], TWO)):
        np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(answer)), doubled(sent))
    assert [len(seen) for seen in predictor.seen] == [3]


# -- the joined model input: built once, exactly the requests' own frames concatenated ----------------------------

MISSING = ModelSignature(
    inputs=Schema(
        [
            ColSpec(DataType.double, "price"),
            ColSpec(DataType.string, "label", required=False),
            ColSpec(DataType.boolean, "member", required=False),
        ]
    ),
    outputs=Schema([TensorSpec(np.dtype("float64"), (-1,))]),
)


def own_frames_concatenated(codec, frames):
    """What the runtime joined before 2.9.0: each request's own frame (decoded from the tensors sent), then
    ``pd.concat``."""
    return pd.concat([codec.from_tensors(codec.to_tensors(f)) for f in frames], ignore_index=True)


def test_joined_requests_are_built_into_one_frame_without_a_frame_per_request_and_pd_concat(monkeypatch):
    model, predictor, inputs, _ = serve(monkeypatch, PRICES, doubled)
    requests = requests_of(inputs, ONE, THREE, TWO)
    expected = own_frames_concatenated(inputs, (ONE, THREE, TWO))
    concatenated = []
    concat = pd.concat
    monkeypatch.setattr(pd, "concat", lambda *args, **kwargs: concatenated.append(args) or concat(*args, **kwargs))

    model.execute(requests)

    [seen] = predictor.seen
    pd.testing.assert_frame_equal(seen, expected)
    assert concatenated == []


def _masked(prices, labels, members):
    return pd.DataFrame(
        {"price": np.asarray(prices, dtype=np.float64), "label": pd.Series(labels, dtype=object), "member": members}
    )


@pytest.mark.parametrize(
    "frames",
    [
        # every label of the second request missing: pandas 3 types its own frame's column object, the first's str
        (_masked([1.0, 2.0], ["a", "b"], [True, False]), _masked([3.0], [None], [True])),
        (_masked([1.0, 2.0], ["a", None], [True, False]), _masked([3.0], ["c"], [False])),
        (_masked([1.0], [None], [True]), _masked([3.0, 4.0], [None, None], [False, True])),
        # a missing bool makes an object column in one request, a bool column in the other
        (_masked([1.0, 2.0], ["a", "b"], [True, None]), _masked([3.0], ["c"], [False])),
        (_masked([1.0, 2.0], ["a", "b"], [True, False]), _masked([3.0], ["c"], [False])),
    ],
    ids=["text-all-missing-in-one", "text-missing-in-one", "text-all-missing", "bool-missing-in-one", "none-missing"],
)
def test_a_joined_frame_is_exactly_the_requests_own_frames_concatenated(monkeypatch, frames):
    model, predictor, inputs, _ = serve(monkeypatch, MISSING, doubled)
    requests = requests_of(inputs, *frames)
    expected = own_frames_concatenated(inputs, frames)

    model.execute(requests)

    [seen] = predictor.seen
    pd.testing.assert_frame_equal(seen, expected)
    for column in expected.columns:  # None stays None, NaN stays NaN
        assert [type(value) for value in seen[column]] == [type(value) for value in expected[column]]


@pytest.mark.parametrize(
    "short",
    [
        {"price": np.array([9.0]), "label": np.array([b"z"], dtype=object)},  # [0, 1] carrying a row: seen as [1]
        {"price": np.zeros((1, 0)), "label": np.zeros((1, 0), dtype=object)},  # [1, 0]: seen without its row axis
    ],
    ids=["claimed-0-rows-with-a-row-of-bytes", "rank-one-too-short"],
)
def test_execute_answers_400_naming_the_tensor_to_a_request_without_its_row_axis_and_joins_the_others(
    monkeypatch, short
):
    """Triton hands a request that declares 0 rows but carries elements without its batch axis (``[1]`` for a
    ``reshape [1]`` column); the batcher counted it as one row, the runtime refuses it alone."""
    model, predictor, inputs, outputs = serve(monkeypatch, PRICES, doubled)
    first, last = requests_of(inputs, ONE, TWO)

    answers = model.execute([first, fake_pb_utils.request_from_arrays(short), last])

    assert error_of(answers[1], INVALID_ARG) == (
        "Tensor `price` must be sent as [rows, 1] with at least one row and the elements of that many rows (a "
        "request declaring 0 rows is refused)"
    )
    assert [len(seen) for seen in predictor.seen] == [3]
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(answers[0])), doubled(ONE))
    np.testing.assert_array_equal(outputs.from_tensors(fake_pb_utils.outputs_of(answers[2])), doubled(TWO))


def test_execute_answers_400_to_a_rank_k_tensor_without_its_row_axis(monkeypatch):
    model, predictor, inputs, _ = serve(monkeypatch, DICT_OF_TENSORS, lambda tensors: tensors["a"])

    [answer] = model.execute(
        [fake_pb_utils.request_from_arrays({"a": np.zeros((1, 2), dtype=np.float32), "b": np.array([[1]])})]
    )

    assert error_of(answer, INVALID_ARG).startswith("Tensor `a` must be sent as [rows, 2] with at least one row")
    assert predictor.seen == []
