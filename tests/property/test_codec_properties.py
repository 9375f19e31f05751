"""Codec round trips over arbitrary schemas and data, with MLflow's schema enforcement as the oracle.

The codecs are built the way Triton builds them: signature -> layout -> ``build_config`` ->
the JSON model config ``initialize()`` receives (dims as strings from protobuf's JSON form,
or as integers as real Triton passes them) -> ``tensor_types_from_model_config``.

A round trip proves the two directions symmetric, not right: the output tensors themselves are also
compared with the tests' own encoder of a prediction (``tests/support/fidelity/expectations.py``:
numpy from the value and the declared tensor types, no runtime code).
"""

import json
from unittest import mock

import mlflow.pyfunc
import numpy as np
import pandas as pd
from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st
from mlflow.models import ModelSignature
from mlflow.models.utils import _enforce_schema
from mlflow.types import ColSpec, DataType, Schema

from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import build_config, declarations
from mlflow_triton.runtime.codecs import StructureCodec, tensor_types_from_model_config
from mlflow_triton.shared_contract import BYTES_TYPE, TRITON_TO_NUMPY
from tests.property.strategies import (
    NUMERIC_TENSOR_DTYPES,
    column_frames,
    named_tensor_dicts,
    schema_values,
    single_tensors,
)
from tests.support import fake_pb_utils
from tests.support.fidelity.expectations import Answer, expected_answer

# What MLflow's enforcement accepts for tensors: numeric dtypes and ``object`` (text).
# ``bytes`` tensor specs are left out: MLflow wants ``|S`` arrays, the runtime decodes BYTES
# to object arrays (see test_runtime_codecs.py for that known gap).
ENFORCEABLE_TENSOR_DTYPES = NUMERIC_TENSOR_DTYPES + (np.dtype(object),)
enforceable_values = st.one_of(
    column_frames(),
    single_tensors(ENFORCEABLE_TENSOR_DTYPES),
    named_tensor_dicts(ENFORCEABLE_TENSOR_DTYPES),
)
OTHER_SIDE = Schema([ColSpec(DataType.double, "other")])


def model_config(signature, integer_dims):
    """The JSON model config Triton hands to ``initialize()``, as a dict."""
    config = build_config("model", layout_from_signature(signature, "sklearn"))
    data = json.loads(json_format.MessageToJson(config, preserving_proto_field_name=True))
    if integer_dims:
        for entry in data.get("input", []) + data.get("output", []):
            entry["dims"] = [int(d) for d in entry.get("dims", [])]
    return data


def codec_for(schema, side, integer_dims):
    signature = (
        ModelSignature(inputs=schema, outputs=OTHER_SIDE)
        if side == "input"
        else (ModelSignature(inputs=OTHER_SIDE, outputs=schema))
    )
    config = model_config(signature, integer_dims)
    contract = layout_from_signature(signature, "sklearn").contract
    mapping = contract.inputs if side == "input" else contract.outputs
    return StructureCodec(mapping, tensor_types_from_model_config(config, side))


def independently_encoded(signature, prediction):
    """``{tensor: array}`` the outputs of ``signature`` must carry for ``prediction``, built without the runtime."""
    layout = layout_from_signature(signature, "sklearn")
    _, outputs = declarations(build_config("model", layout))
    answer = expected_answer(layout.contract, outputs, prediction=prediction)
    assert isinstance(answer, Answer), answer
    return answer.outputs


def assert_same_tensors(actual, expected):
    assert sorted(actual) == sorted(expected)
    for name, array in expected.items():
        assert_same_array(actual[name], array)


def assert_tensors_fit_config(codec, tensors):
    """Every tensor has its configured dtype and shape; BYTES hold ``bytes`` only."""
    assert set(tensors) == {spec.tensor for spec in codec.specs}
    for spec in codec.specs:
        array = tensors[spec.tensor]
        assert array.dtype == np.dtype(TRITON_TO_NUMPY[spec.data_type])
        assert len(array.shape) == len(spec.dims)
        assert all(d == -1 or d == s for d, s in zip(spec.dims, array.shape))
        if spec.data_type == BYTES_TYPE:
            assert all(type(item) is bytes for item in array.ravel())


def assert_same_array(actual, expected):
    assert isinstance(actual, np.ndarray)
    assert (actual.dtype, actual.shape) == (expected.dtype, expected.shape)
    if expected.dtype == object:
        assert [type(v) for v in actual.ravel()] == [type(v) for v in expected.ravel()]
        assert actual.tolist() == expected.tolist()
    else:
        assert actual.tobytes() == expected.tobytes()


def assert_same_value(actual, expected):
    if isinstance(expected, pd.DataFrame):
        pd.testing.assert_frame_equal(actual, expected, check_exact=True)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict)
        assert list(actual) == list(expected)
        for key, array in expected.items():
            assert_same_array(actual[key], array)
    else:
        assert_same_array(actual, expected)


@given(schema_values, st.booleans())
def test_structure_codec_round_trip_is_identity_when_inputs_are_encoded_and_decoded(schema_value, integer_dims):
    schema, value = schema_value
    codec = codec_for(schema, "input", integer_dims)

    tensors = codec.to_tensors(value)
    decoded = codec.from_tensors(tensors)

    assert_tensors_fit_config(codec, tensors)
    assert_same_value(decoded, value)


@given(enforceable_values, st.booleans())
def test_mlflow_schema_enforcement_accepts_decoded_inputs_when_they_satisfy_the_signature(schema_value, integer_dims):
    schema, value = schema_value
    codec = codec_for(schema, "input", integer_dims)

    decoded = codec.from_tensors(codec.to_tensors(value))

    enforced = _enforce_schema(decoded, schema)
    if isinstance(value, np.ndarray) and schema.has_input_names():
        value = {schema.input_names()[0]: value}  # MLflow keys the only named tensor by its name
    assert_same_value(enforced, value)


@given(schema_values, st.booleans())
def test_structure_codec_returns_the_prediction_when_outputs_are_encoded_and_decoded(schema_value, integer_dims):
    schema, prediction = schema_value
    codec = codec_for(schema, "output", integer_dims)

    tensors = codec.to_tensors(prediction)

    assert_tensors_fit_config(codec, tensors)
    assert_same_tensors(tensors, independently_encoded(ModelSignature(inputs=OTHER_SIDE, outputs=schema), prediction))
    assert_same_value(codec.from_tensors(tensors), prediction)


@given(column_frames(max_columns=1), st.sampled_from(("ndarray", "list", "series")))
def test_structure_codec_returns_a_one_column_frame_when_the_prediction_is_a_bare_sequence(schema_value, form):
    schema, frame = schema_value
    codec = codec_for(schema, "output", integer_dims=False)
    column = frame.iloc[:, 0]
    prediction = {"ndarray": column.to_numpy(), "list": column.tolist(), "series": column}[form]

    decoded = codec.from_tensors(codec.to_tensors(prediction))

    assert_same_value(decoded, frame)


class EchoPredictor:
    """Returns its input unchanged and remembers it."""

    def __init__(self):
        self.seen = []

    def predict(self, model_input):
        self.seen.append(model_input)
        return model_input


@given(enforceable_values)
def test_triton_python_model_answers_with_the_request_when_the_predictor_echoes_its_input(schema_value):
    schema, value = schema_value
    signature = ModelSignature(inputs=schema, outputs=schema)
    config = model_config(signature, integer_dims=True)
    layout = layout_from_signature(signature, "sklearn")
    types = tensor_types_from_model_config(config, "input")
    inputs = StructureCodec(layout.contract.inputs, types)
    outputs = StructureCodec(layout.contract.outputs, tensor_types_from_model_config(config, "output"))
    predictor = EchoPredictor()
    model = runtime_model_serving(config, predictor)

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(value))])

    [model_input] = predictor.seen
    _enforce_schema(model_input, schema)
    assert_same_value(model_input, value)
    assert_same_tensors(fake_pb_utils.outputs_of(response), independently_encoded(signature, value))
    assert_same_value(outputs.from_tensors(fake_pb_utils.outputs_of(response)), value)


def triton_python_model_class():
    fake_pb_utils.install()
    from mlflow_triton.runtime.triton_model import TritonPythonModel

    return TritonPythonModel


def runtime_model_serving(config, predictor):
    """The runtime's TritonPythonModel, initialized (fake pb_utils) for ``config`` and serving ``predictor``."""
    model = triton_python_model_class()()
    with mock.patch.object(mlflow.pyfunc, "load_model", return_value=predictor):
        model.initialize(
            {
                "model_config": json.dumps(config),
                "model_repository": "/nonexistent/model",
                "model_version": "1",
                "model_instance_kind": "CPU",
                "model_instance_device_id": "0",
            }
        )
    return model
