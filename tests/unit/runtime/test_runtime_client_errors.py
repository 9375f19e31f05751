"""MLflow's client errors are the client's: 400 with MLflow's words, as MLflow's scoring server answers them (#42).

MLflow's scoring server answers an ``MlflowException`` raised while predicting with the HTTP status its error code
maps to (``MlflowException.get_http_status_code``): ``INVALID_PARAMETER_VALUE`` and ``BAD_REQUEST`` are 400 — a
generation field a Transformers pipeline does not take (``stream``, ``n``), a value a type-hinted PythonModel's
validation refuses. The runtime answers those with ``INVALID_ARG`` and MLflow's message; every other failure of
the model stays a withheld 500. Text that is not valid Unicode (a lone surrogate, which JSON's ``\\ud800`` escape
can write) is refused naming the tensor and the row, and no message with one can fail an answer.
"""

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pydantic
import pytest
from mlflow.exceptions import MlflowException
from mlflow.models import ModelSignature
from mlflow.protos.databricks_pb2 import BAD_REQUEST, INTERNAL_ERROR, RESOURCE_DOES_NOT_EXIST
from mlflow.types import ColSpec, DataType, Schema
from mlflow.types.schema import Array, Object, Property

from mlflow_triton._model_py import compose_model_py
from mlflow_triton.runtime.conversions import TensorMappingError
from mlflow_triton.runtime.nested import from_json_texts, to_json_texts
from tests.support import fake_pb_utils
from tests.unit.runtime.test_runtime_execute import (
    INTERNAL,
    INVALID_ARG,
    PRICES,
    PRICES_FRAME,
    error_message,
    initialize_args,
    json_model_config,
    serve,
)

LONE_SURROGATE = "\ud800"


def _raise(error):
    def respond(frame):
        raise error

    return respond


def _refused_by_the_pipeline():
    """What MLflow's transformers flavor raises for ``stream: true`` (``_TransformersWrapper._predict``)."""
    try:
        raise ValueError("The following `model_kwargs` are not used by the model: ['stream']")
    except ValueError as cause:
        try:
            raise MlflowException.invalid_parameter_value(
                "The params provided to the `predict` method are not valid for pipeline TextGenerationPipeline."
            ) from cause
        except MlflowException as error:
            return error


def test_execute_answers_invalid_arg_with_mlflows_words_when_mlflow_refuses_a_generation_field(monkeypatch):
    model, _, inputs, _ = serve(monkeypatch, PRICES, _raise(_refused_by_the_pipeline()))

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    assert error_message(response) == (
        "MLflow refused the request (INVALID_PARAMETER_VALUE): The params provided to the `predict` method are not "
        "valid for pipeline TextGenerationPipeline. (ValueError: The following `model_kwargs` are not used by the "
        "model: ['stream'])"
    )


@pytest.mark.parametrize(
    ("error", "code", "quoted"),
    [
        (MlflowException("a request MLflow calls bad", error_code=BAD_REQUEST), INVALID_ARG, True),
        (MlflowException("the model's own state", error_code=INTERNAL_ERROR), INTERNAL, False),
        (MlflowException("a registry lookup", error_code=RESOURCE_DOES_NOT_EXIST), INTERNAL, False),
        (ValueError("an unknown category"), INTERNAL, False),
    ],
    ids=["bad-request", "internal-error", "not-found", "not-mlflows"],
)
def test_execute_answers_400_only_where_mlflow_maps_its_error_code_to_400_and_withholds_the_rest(
    monkeypatch, error, code, quoted
):
    model, _, inputs, _ = serve(monkeypatch, PRICES, _raise(error))

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    assert (str(error) in error_message(response, code)) is quoted


def test_execute_bounds_mlflows_message_when_it_quotes_a_huge_value(monkeypatch):
    model, _, inputs, _ = serve(monkeypatch, PRICES, _raise(MlflowException.invalid_parameter_value("x" * 100_000)))

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    message = error_message(response)
    assert len(message) < 1100 and message.endswith("more characters cut]")


class Item(pydantic.BaseModel):
    n: int = pydantic.Field(ge=0)


class Hinted(mlflow.pyfunc.PythonModel):
    def predict(self, model_input: list[Item], params=None) -> list[int]:
        return [item.n * 2 for item in model_input]


def test_execute_answers_invalid_arg_with_mlflows_words_when_a_type_hint_refuses_a_value(tmp_path):
    repository = tmp_path / "hinted"
    mlflow.pyfunc.save_model(
        repository / "1" / "artifact", python_model=Hinted(), input_example=[{"n": 1}], pip_requirements=[]
    )
    signature = mlflow.pyfunc.load_model(str(repository / "1" / "artifact")).metadata.signature
    (repository / "1" / "model.py").write_text(compose_model_py(), encoding="utf-8")
    module = fake_pb_utils.load_model_py(repository / "1" / "model.py", name="served_hinted_model_py")
    model = module.TritonPythonModel()
    model.initialize(initialize_args(json_model_config(signature, "pyfunc"), repository))
    rows = {"input_0": np.array([b'{"n": 2}', b'{"n": -3}'], dtype=object)}

    [response] = model.execute([fake_pb_utils.request_from_arrays(rows)])

    message = error_message(response)
    assert message.startswith("MLflow refused the request (INVALID_PARAMETER_VALUE): Failed to validate data")
    assert "greater than or equal to 0" in message


# -- text that is not valid Unicode ---------------------------------------------------------------

OBJECT = {"type": "object", "properties": {"name": {"type": "string", "required": True}}}


@pytest.mark.parametrize(
    "text", ['{"name": "\\ud800"}', '{"\\udfff": "a"}', '{"name": "ok", "more": ["a", ["\\ud83d"]]}']
)
def test_from_json_texts_refuses_naming_the_row_when_a_row_holds_a_lone_surrogate(text):
    with pytest.raises(
        TensorMappingError, match=r"^Tensor `rec`: row 1 holds text that is not valid Unicode \(a lone surrogate"
    ):
        from_json_texts(np.array([b'{"name": "a"}', text.encode()], dtype=object), OBJECT, "`rec`")


def test_from_json_texts_reads_a_surrogate_pair_as_the_character_it_writes():
    assert from_json_texts(np.array([b'{"name": "\\ud83d\\ude00"}'], dtype=object), OBJECT, "`rec`") == [
        {"name": "\N{GRINNING FACE}"}
    ]


def test_to_json_texts_refuses_naming_the_row_when_a_prediction_holds_a_lone_surrogate():
    with pytest.raises(TensorMappingError, match=r"^Tensor `out`: row 1 holds text that is not valid Unicode"):
        to_json_texts([{"name": "a"}, {"name": LONE_SURROGATE}], "`out`")


NAMED = ModelSignature(
    inputs=Schema([ColSpec(Object([Property("name", DataType.string)]), "rec")]),
    outputs=Schema([ColSpec(Array(DataType.string), "names")]),
)


def test_execute_answers_invalid_arg_naming_tensor_and_row_when_a_nested_row_holds_a_lone_surrogate(monkeypatch):
    model, predictor, _, _ = serve(monkeypatch, NAMED, lambda frame: pd.DataFrame({"names": [["a"]] * len(frame)}))
    rows = {"rec": np.array([b'{"name": "a"}', b'{"name": "\\ud800"}'], dtype=object)}

    [response] = model.execute([fake_pb_utils.request_from_arrays(rows)])

    assert error_message(response).startswith("Tensor `rec`: row 1 holds text that is not valid Unicode")
    assert predictor.seen == []


def test_execute_answers_internal_naming_tensor_and_row_when_a_prediction_holds_a_lone_surrogate(monkeypatch):
    model, _, inputs, _ = serve(monkeypatch, NAMED, lambda frame: pd.DataFrame({"names": [["a"], [LONE_SURROGATE]]}))
    rows = {"rec": np.array([b'{"name": "a"}', b'{"name": "b"}'], dtype=object)}

    [response] = model.execute([fake_pb_utils.request_from_arrays(rows)])

    assert "Tensor `names`: row 1 holds text that is not valid Unicode" in error_message(response, INTERNAL)


@pytest.mark.parametrize(
    "error",
    [ValueError(f"unknown category {LONE_SURROGATE}"), MlflowException.invalid_parameter_value(LONE_SURROGATE)],
    ids=["withheld", "mlflows-words"],
)
def test_execute_answers_and_logs_with_an_escape_when_an_error_message_holds_a_lone_surrogate(monkeypatch, error):
    triton_log = []
    monkeypatch.setattr(fake_pb_utils.Logger, "records", triton_log)
    model, _, inputs, _ = serve(monkeypatch, PRICES, _raise(error))

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    assert response.has_error() and "runtime failed" not in response.error().message()
    assert "\\ud800" in (response.error().message() + "".join(text for _, text in triton_log))
