"""Optional and datetime input columns round trip as MLflow's schema enforcement sees them (#22.6).

Frames with missing values (None, NaN, NaT) in optional columns and datetime columns of any unit are
encoded into tensors (values with placeholders, ``<tensor>__missing`` masks, INT64 nanoseconds), decoded
by the runtime's codec -- alone and inside ``TritonPythonModel`` with a fake backend -- and compared after
MLflow's own ``_enforce_schema`` with what it makes of the caller's frame.
"""

import numpy as np
import pandas as pd
from hypothesis import given
from mlflow.models import ModelSignature
from mlflow.models.utils import _enforce_schema
from mlflow.types import Schema, TensorSpec

from mlflow_triton._schema import layout_from_signature
from mlflow_triton.runtime.codecs import StructureCodec, tensor_types_from_model_config
from tests.property.strategies import adapted_column_frames
from tests.property.test_codec_properties import codec_for, model_config, runtime_model_serving
from tests.support import fake_pb_utils

ROW_COUNT_OUTPUT = Schema([TensorSpec(np.dtype("int64"), (-1,))])


def assert_enforced_alike(actual, expected, schema):
    pd.testing.assert_frame_equal(_enforce_schema(actual, schema), _enforce_schema(expected, schema), check_exact=True)


@given(adapted_column_frames())
def test_columns_codec_rebuilds_what_mlflow_enforces_when_columns_are_optional_or_datetime(schema_frame):
    schema, frame = schema_frame
    codec = codec_for(schema, "input", integer_dims=True)

    tensors = codec.to_tensors(frame)
    decoded = codec.from_tensors(tensors)

    assert all(tensors[f.missing].dtype == np.bool_ for f in codec.mapping.fields if f.missing)
    assert_enforced_alike(decoded, frame, schema)


class RowCounter:
    """Remembers its input and predicts one int per row."""

    def __init__(self):
        self.seen = []

    def predict(self, model_input):
        self.seen.append(model_input)
        return np.arange(len(model_input), dtype=np.int64)


@given(adapted_column_frames())
def test_triton_python_model_hands_predict_what_mlflow_enforces_when_columns_are_optional_or_datetime(schema_frame):
    schema, frame = schema_frame
    signature = ModelSignature(inputs=schema, outputs=ROW_COUNT_OUTPUT)
    config = model_config(signature, integer_dims=True)
    layout = layout_from_signature(signature, "sklearn")
    inputs = StructureCodec(layout.contract.inputs, tensor_types_from_model_config(config, "input"))
    predictor = RowCounter()
    model = runtime_model_serving(config, predictor)

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(frame))])

    [model_input] = predictor.seen
    assert_enforced_alike(model_input, frame, schema)
    [output] = layout.contract.outputs.tensor_names  # output_0, or output_0_2 beside an input column so named
    assert fake_pb_utils.outputs_of(response)[output].tolist() == list(range(len(frame)))
