"""Optional input columns a request may leave out (mapping version 5), and records with left-out JSON keys.

MLflow's LLM tasks declare their generation fields (``temperature``, ``max_tokens``, ``stop``, ...) as optional
columns beside the required ``messages`` or ``prompt``; a JSON request to MLflow's scoring server simply leaves
them out, and the model gets no such column. Here the same holds for Triton: the config declares their tensors
``optional: true`` and the runtime builds the frame from the tensors that came.
"""

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, DataType, Schema
from mlflow.types.schema import Array

from mlflow_triton import pyfunc
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.errors import BatchingRefusedError
from mlflow_triton.repository.config import read_config
from mlflow_triton.runtime.codecs import StructureCodec
from mlflow_triton.runtime.conversions import TensorMappingError
from mlflow_triton.shared_contract import Contract, ContractError, FieldMapping, StructureMapping
from tests.support import fake_pb_utils, tiny_models
from tests.unit.runtime.test_runtime_execute import error_message

STOP = Array(DataType.string)
SIGNATURE = ModelSignature(
    inputs=Schema(
        [
            ColSpec(DataType.string, "prompt"),
            ColSpec(DataType.double, "temperature", required=False),
            ColSpec(DataType.long, "max_tokens", required=False),
            ColSpec(STOP, "stop", required=False),
        ]
    ),
    outputs=Schema([ColSpec(DataType.string, "seen")]),
)


class Seen(mlflow.pyfunc.PythonModel):
    """Says which columns predict was given, and their values."""

    def predict(self, context, model_input, params=None):
        return pd.DataFrame({"seen": [repr(sorted(row.items())) for row in model_input.to_dict("records")]})


def _codec(layout):
    return StructureCodec(layout.contract.inputs, {d.name: (d.data_type, d.dims) for d in layout.inputs})


def test_layout_marks_optional_columns_omittable_when_the_contract_is_version_5():
    layout = layout_from_signature(SIGNATURE, "pyfunc")  # `stop` is an Array: version 5

    fields = {f.name: f for f in layout.contract.inputs.fields}
    assert layout.contract.version == 5
    assert {name: f.optional for name, f in fields.items()} == {
        "prompt": False,
        "temperature": True,
        "max_tokens": True,
        "stop": True,
    }
    assert {d.name for d in layout.inputs if d.optional} == {
        "temperature",
        "temperature__missing",
        "max_tokens",
        "stop",
    }


def test_layout_keeps_optional_columns_required_and_the_old_version_when_nothing_else_needs_version_5():
    flat = ModelSignature(
        inputs=Schema([ColSpec(DataType.string, "prompt"), ColSpec(DataType.double, "temperature", required=False)]),
        outputs=Schema([ColSpec(DataType.string, "seen")]),
    )

    layout = layout_from_signature(flat, "pyfunc", example_columns={"prompt", "temperature"})

    assert layout.contract.version == 4  # the mask of version 4, byte for byte as before
    assert not any(f.optional for f in layout.contract.inputs.fields)
    assert not any(d.optional for d in layout.inputs)


def test_layout_makes_an_optional_column_the_example_leaves_out_omittable_even_without_nested_columns():
    flat = ModelSignature(
        inputs=Schema([ColSpec(DataType.string, "prompt"), ColSpec(DataType.long, "max_tokens", required=False)]),
        outputs=Schema([ColSpec(DataType.string, "seen")]),
    )

    layout = layout_from_signature(flat, "pyfunc", example_columns={"prompt"})

    assert layout.contract.version == 5
    assert [f.optional for f in layout.contract.inputs.fields] == [False, True]


def test_codec_builds_the_frame_without_a_column_whose_tensors_a_request_left_out():
    codec = _codec(layout_from_signature(SIGNATURE, "pyfunc"))

    tensors = codec.to_tensors({"prompt": "hi"})
    frame = codec.from_tensors(tensors)

    assert set(tensors) == {"prompt"}
    assert list(frame.columns) == ["prompt"] and frame["prompt"].tolist() == ["hi"]
    with_two = codec.from_tensors(codec.to_tensors(pd.DataFrame({"prompt": ["a", "b"], "max_tokens": [1, 2]})))
    assert list(with_two.columns) == ["prompt", "max_tokens"] and with_two["max_tokens"].tolist() == [1, 2]


def test_codec_refuses_a_mask_sent_without_its_values_and_a_required_column_left_out():
    codec = _codec(layout_from_signature(SIGNATURE, "pyfunc"))
    prompt = np.array([b"hi"], dtype=object)

    with pytest.raises(TensorMappingError, match="Tensor `temperature` is missing"):
        codec.from_tensors({"prompt": prompt, "temperature__missing": np.array([True])})
    with pytest.raises(TensorMappingError, match="Tensor `prompt` is missing"):
        codec.from_tensors({"max_tokens": np.array([2], dtype=np.int64)})


def test_codec_reads_no_missing_row_when_an_optional_columns_values_come_without_their_mask():
    # docs/logging.md: "send only those you set"; the mask of an optional column is optional too (#42)
    codec = _codec(layout_from_signature(SIGNATURE, "pyfunc"))
    prompt = np.array([b"hi", b"ho"], dtype=object)

    frame = codec.from_tensors({"prompt": prompt, "temperature": np.array([0.5, 0.25])})

    assert frame["temperature"].tolist() == [0.5, 0.25]
    pd.testing.assert_frame_equal(
        frame,
        codec.from_tensors(codec.to_tensors(pd.DataFrame({"prompt": ["hi", "ho"], "temperature": [0.5, 0.25]}))),
    )


def test_codec_still_needs_the_mask_of_a_required_column_with_missing_values():
    flat = ModelSignature(
        inputs=Schema([ColSpec(DataType.string, "prompt"), ColSpec(DataType.double, "temperature", required=False)]),
        outputs=Schema([ColSpec(DataType.string, "seen")]),
    )
    codec = _codec(layout_from_signature(flat, "pyfunc", example_columns={"prompt", "temperature"}))  # version 4

    with pytest.raises(TensorMappingError, match=r"Tensor `temperature__missing` \(missing-value mask of"):
        codec.from_tensors({"prompt": np.array([b"hi"], dtype=object), "temperature": np.array([0.5])})


def test_contract_keeps_optional_to_version_5_input_columns():
    optional = StructureMapping("columns", (FieldMapping("t", "t", optional=True),))
    plain = StructureMapping("columns", (FieldMapping("y", "y"),))

    with pytest.raises(ContractError, match="optional fields need version 5; used by: t"):
        Contract("pyfunc", optional, plain, version=4)
    with pytest.raises(ContractError, match="'optional' marks input fields only; output: t"):
        Contract("pyfunc", plain, optional, version=5)
    with pytest.raises(
        ContractError, match=r"'optional' is for 'columns' \(and the mlflow protocol's 'tensors'\) only"
    ):
        StructureMapping("tensor", (FieldMapping(None, "t", optional=True),))
    with pytest.raises(ContractError, match="'optional' must be true or absent"):
        FieldMapping("t", "t", optional="yes")
    contract = Contract("pyfunc", optional, plain, version=5)
    assert Contract.from_json(contract.to_json()) == contract


def test_records_that_leave_out_a_json_key_answer_null_for_it_and_other_keys_stay_required():
    answer = StructureMapping(
        "columns",
        (
            FieldMapping("id", "id", "text"),
            FieldMapping("extra", "extra", "json", type={"type": "map", "values": {"type": "any"}}),
        ),
    )
    codec = StructureCodec(answer, {"id": ("TYPE_STRING", (-1,)), "extra": ("TYPE_STRING", (-1,))})

    tensors = codec.to_tensors([{"id": "a"}, {"id": "b", "extra": {"k": 1}}])

    assert tensors["extra"].tolist() == [b"null", b'{"k":1}']
    with pytest.raises(TensorMappingError, match="record 1 has no key `id`"):
        codec.to_tensors([{"id": "a"}, {"extra": {}}])


def test_save_model_writes_optional_inputs_into_the_config_and_ships_only_what_the_example_holds(tmp_path):
    pyfunc.save_model(Seen(), tmp_path / "m", input_example={"prompt": "hi"}, signature=SIGNATURE)
    [repository] = (tmp_path / "m" / "model_repository").iterdir()

    config, _ = read_config(repository / "config.pbtxt")

    assert {entry.name: entry.optional for entry in config.input} == {
        "prompt": False,
        "temperature": True,
        "max_tokens": True,
        "stop": True,
        "temperature__missing": True,
    }
    assert set(tiny_models.request_arrays(repository)) == {"prompt"}
    outputs = tiny_models.serve_request(repository)
    assert outputs["seen"].tolist() == [b"[('prompt', 'hi')]"]


def test_execute_hands_predict_only_the_columns_a_request_sent(tmp_path):
    pyfunc.save_model(Seen(), tmp_path / "m", input_example={"prompt": "hi"}, signature=SIGNATURE)
    [repository] = (tmp_path / "m" / "model_repository").iterdir()
    model = tiny_models.initialized_model_py(repository)
    arrays = {
        "prompt": np.array([b"hi"], dtype=object),
        "max_tokens": np.array([3], dtype=np.int64),
        "stop": np.array([b'["x"]'], dtype=object),
    }

    [response] = model.execute([fake_pb_utils.request_from_arrays(arrays)])
    [mask_only] = model.execute(
        [fake_pb_utils.request_from_arrays({"prompt": arrays["prompt"], "temperature__missing": np.array([True])})]
    )

    assert fake_pb_utils.outputs_of(response)["seen"].tolist() == [
        b"[('max_tokens', 3), ('prompt', 'hi'), ('stop', ['x'])]"
    ]
    assert "Tensor `temperature` is missing" in error_message(mask_only)


def test_save_model_refuses_batching_when_a_request_may_leave_a_column_out_and_writes_nothing(tmp_path):
    with pytest.raises(BatchingRefusedError, match="input column `temperature` may be left out of a request"):
        pyfunc.save_model(Seen(), tmp_path / "m", input_example={"prompt": "hi"}, signature=SIGNATURE, max_batch_size=4)

    assert not (tmp_path / "m").exists()
