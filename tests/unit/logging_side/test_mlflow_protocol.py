"""MLflow's serving protocol as a repository kind (``protocol="mlflow"``): contract, runtime, logging, check's rule.

The runtime is the generated model.py driven through the fake ``pb_utils``; the bodies and answers it is held to
are written here by hand from what ``mlflow models serve`` documents (``{"predictions": ...}``, MLflow's error JSON),
not computed by the code under test. The real server: tests/e2e/test_mlflow_protocol_triton.py.
"""

import datetime
import json
import pathlib
import re
import time
import uuid

import mlflow
import mlflow.pyfunc
import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
from google.protobuf import json_format
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INTERNAL_ERROR
from mlflow.pyfunc import ChatModel
from mlflow.types.agent import ChatAgentMessage, ChatAgentResponse
from mlflow.types.llm import ChatChoice, ChatCompletionResponse, ChatMessage
from sklearn.linear_model import LogisticRegression

import mlflow_triton
from mlflow_triton import cli
from mlflow_triton._model_py import compose_model_py
from mlflow_triton._protocol import protocol_layout
from mlflow_triton.errors import InvalidArgumentError
from mlflow_triton.export._errors import UnsupportedModelError
from mlflow_triton.export._source import read_logged_model
from mlflow_triton.local._compare import (
    MLFLOW_BODY,
    compare,
    load_input_example,
    predict_outputs,
    volatile_outputs,
)
from mlflow_triton.local.errors import InputFileError
from mlflow_triton.local.user_input import body_request
from mlflow_triton.repository.config import build_config, render_config
from mlflow_triton.runtime.protocol import SERVING_ENVIRONMENT_VARIABLE, MlflowProtocol, response_array
from mlflow_triton.shared_contract import (
    MAPPING_VERSION,
    Contract,
    ContractError,
    FieldMapping,
    StructureMapping,
    mlflow_protocol_contract,
)
from tests.support import fake_pb_utils
from tests.unit.runtime.test_runtime_execute import error_message, initialize_args, triton_log  # noqa: F401 (fixture)

X = pd.DataFrame({"length": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "width": [0.5, 0.1, 0.9, 0.3, 0.7, 0.2]})
Y = np.array([0, 0, 0, 1, 1, 1])


class EchoChat(ChatModel):
    """A chat model that answers the last message in capitals; MLflow fills ``id``-less answers' ``created``."""

    def predict(self, context, messages, params):
        reply = messages[-1].content.upper()
        return ChatCompletionResponse(
            choices=[ChatChoice(index=0, message=ChatMessage(role="assistant", content=reply))]
        )


class Years(mlflow.pyfunc.PythonModel):
    """A type-hinted model: MLflow turns ISO text into datetimes only in its serving environment."""

    def predict(self, model_input: list[datetime.datetime], params=None) -> list[int]:
        return [moment.year for moment in model_input]


@pytest.fixture(scope="module", autouse=True)
def serving_variable_restored():
    """The served model.py marks the process as MLflow's server marks its own; this test process gets it back."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(SERVING_ENVIRONMENT_VARIABLE, raising=False)
        yield


# -- the contract ------------------------------------------------------------------------------------------------


def test_an_mlflow_protocol_contract_is_version_6_and_reads_back_equal():
    contract = mlflow_protocol_contract("sklearn")
    data = json.loads(contract.to_json())
    assert (data["version"], data["protocol"], data["max_batch_size"]) == (6, "mlflow", 0)
    assert [f["tensor"] for f in data["inputs"]["fields"]] == ["request", "content_type"]
    assert data["inputs"]["fields"][1]["optional"] is True
    assert Contract.from_json(contract.to_json()) == contract


def test_a_typed_contract_is_still_written_as_before_without_a_protocol_key():
    typed = Contract(
        "sklearn",
        StructureMapping("tensor", (FieldMapping(None, "input_0"),)),
        StructureMapping("tensor", (FieldMapping(None, "output_0"),)),
    )
    assert typed.version == MAPPING_VERSION
    assert "protocol" not in typed.to_json()


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d.pop("protocol"), "lacks protocol"),
        (lambda d: d.update(protocol="grpc"), "supported: tensors, mlflow"),
        (lambda d: d.update(max_batch_size=4), "max_batch_size must be 0"),
        (lambda d: d["outputs"]["fields"][0].update(tensor="answer"), "maps exactly the text tensors"),
        (lambda d: d.update(version=5), "unknown key(s) protocol"),
    ],
)
def test_a_malformed_mlflow_protocol_contract_is_refused_naming_what(change, says):
    data = json.loads(mlflow_protocol_contract("sklearn").to_json())
    change(data)
    with pytest.raises(ContractError, match=re.escape(says)):
        Contract.from_dict(data)


def test_optional_stays_refused_for_typed_tensors():
    with pytest.raises(ContractError, match="'optional' marks 'columns' input fields only"):
        Contract(
            "sklearn",
            StructureMapping("tensors", (FieldMapping("a", "a", optional=True),)),
            StructureMapping("tensor", (FieldMapping(None, "out"),)),
            version=5,
        )


def test_the_config_declares_bytes_request_optional_content_type_and_no_batching():
    text = render_config(build_config("clf", protocol_layout("sklearn")))
    assert "max_batch_size: 0" in text
    assert text.count("TYPE_STRING") == 3
    assert "optional: true" in text


# -- the runtime, through the generated model.py -------------------------------------------------------------------


def serve(tmp_path, save):
    """An initialized generated model.py over the model ``save(path)`` writes, speaking MLflow's protocol."""
    repository = tmp_path / "repository" / "model"
    save(repository / "1" / "artifact")
    (repository / "1" / "model.py").write_text(compose_model_py(), encoding="utf-8")
    config = json_format.MessageToDict(
        build_config("model", protocol_layout("sklearn")), preserving_proto_field_name=True
    )
    module = fake_pb_utils.load_model_py(repository / "1" / "model.py", name="protocol_model_py")
    model = module.TritonPythonModel()
    model.initialize(initialize_args(config, repository))
    return model


def ask(model, body, content_type=None):
    arrays = {"request": np.array([body.encode("utf-8")], dtype=object)}
    if content_type is not None:
        arrays["content_type"] = np.array([content_type.encode("utf-8")], dtype=object)
    [response] = model.execute([fake_pb_utils.request_from_arrays(arrays)])
    return response


def answered(response):
    [body] = fake_pb_utils.outputs_of(response)["response"]
    return json.loads(body)


@pytest.fixture(scope="module")
def classifier():
    return LogisticRegression().fit(X, Y)


@pytest.fixture(scope="module")
def sklearn_model(tmp_path_factory, classifier):
    tmp_path = tmp_path_factory.mktemp("sklearn")
    return serve(
        tmp_path,
        lambda path: mlflow.sklearn.save_model(
            classifier, path, serialization_format="cloudpickle", pip_requirements=[], input_example=X.head(2)
        ),
    )


def test_a_dataframe_split_body_is_answered_with_mlflows_predictions(sklearn_model, classifier):
    body = json.dumps({"dataframe_split": X.head(3).to_dict(orient="split", index=False)})
    assert answered(ask(sklearn_model, body)) == {"predictions": classifier.predict(X.head(3)).tolist()}


def test_an_inputs_body_and_its_params_free_form_are_answered(sklearn_model, classifier):
    body = json.dumps({"inputs": {"length": [5.0, 1.0], "width": [0.7, 0.5]}})
    assert answered(ask(sklearn_model, body)) == {"predictions": classifier.predict(X.iloc[[4, 0]]).tolist()}


def test_a_csv_body_with_its_content_type_is_answered(sklearn_model, classifier):
    response = ask(sklearn_model, "length,width\n6.0,0.2\n2.0,0.1\n", "text/csv")
    assert answered(response) == {"predictions": classifier.predict(X.iloc[[5, 1]]).tolist()}


def test_a_body_mlflows_parser_refuses_is_a_400_with_mlflows_code_and_message_without_its_trace(sklearn_model):
    message = error_message(ask(sklearn_model, '{"dataframe_split": '))
    assert message.startswith(
        "MLflow answered HTTP 400 (BAD_REQUEST): Invalid input. Ensure that input is a valid JSON"
    )
    assert "Traceback" not in message and "stack_trace" not in message


def test_a_content_type_mlflow_does_not_take_is_a_400_carrying_its_415(sklearn_model):
    message = error_message(ask(sklearn_model, "{}", "text/plain"))
    assert message.startswith("MLflow answered HTTP 415: This predictor only supports the following content types")


def test_a_request_without_the_body_tensor_is_a_400_naming_it(sklearn_model):
    arrays = {"content_type": np.array([b"application/json"], dtype=object)}
    [response] = sklearn_model.execute([fake_pb_utils.request_from_arrays(arrays)])
    assert error_message(response).startswith("Tensor request is missing")


def test_a_chat_request_to_a_chat_model_is_answered_with_the_chat_completion(tmp_path):
    model = serve(tmp_path, lambda path: mlflow.pyfunc.save_model(path, python_model=EchoChat(), pip_requirements=[]))
    body = json.dumps({"messages": [{"role": "user", "content": "hello"}], "max_tokens": 5})
    answer = answered(ask(model, body))
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "HELLO"}
    assert answer["object"] == "chat.completion" and isinstance(answer["created"], int)


def test_a_type_hinted_model_reads_iso_text_as_datetimes_as_in_mlflows_serving_environment(tmp_path):
    model = serve(tmp_path, lambda path: mlflow.pyfunc.save_model(path, python_model=Years(), pip_requirements=[]))
    body = json.dumps({"inputs": ["2024-05-01T10:00:00", "1999-12-31T23:59:59"]})
    assert answered(ask(model, body)) == {"predictions": [2024, 1999]}


# -- logging: add_repository(protocol="mlflow") --------------------------------------------------------------------


def added_with_protocol(classifier):
    """The classifier logged with plain ``mlflow.sklearn`` (example: 3 rows), added with ``protocol="mlflow"``."""
    with mlflow.start_run():
        source = mlflow.sklearn.log_model(
            classifier, name="clf", input_example=X.head(3), pip_requirements=["scikit-learn"]
        )
    return mlflow_triton.add_repository(source.model_uri, protocol="mlflow")


def test_add_repository_with_the_protocol_ships_mlflows_serving_example_as_the_request(
    tracking_store, classifier, tmp_path
):
    info = added_with_protocol(classifier)

    local = mlflow.artifacts.download_artifacts(artifact_uri=info.model_uri, dst_path=str(tmp_path / "new"))
    repository = pathlib.Path(local) / "model_repository" / "clf"
    request = json.loads((repository / "request.json").read_text())
    assert request["inputs"][0]["name"] == "request"
    assert request["inputs"][0]["data"][0] == (repository.parents[1] / "serving_input_example.json").read_text()
    validation = json.loads((repository / "validation.json").read_text())
    assert (validation["protocol"], validation["mapping_version"]) == ("mlflow", 6)
    assert "max_batch_size: 0" in (repository / "config.pbtxt").read_text()
    assert volatile_outputs(repository) == {"response": MLFLOW_BODY}


@pytest.mark.parametrize("given", [False, True], ids=["shipped-body", "input-file"])
def test_check_names_the_body_mlflow_refuses_when_it_is_the_shipped_one_or_the_input_file(
    tracking_store, classifier, tmp_path, given
):
    from mlflow_triton.local import check
    from mlflow_triton.local.errors import OraclePredictionError
    from mlflow_triton.local.sources import resolve_model

    info = added_with_protocol(classifier)
    source = resolve_model(info.model_uri, tmp_path / "download")
    refused = tmp_path / "rows.json"
    refused.write_text(json.dumps({"instances": [[1.0, 0.5]], "inputs": [[1.0, 0.5]]}))
    if not given:  # the shipped request's body replaced by one MLflow refuses
        request = source.files / "request.json"
        shipped = json.loads(request.read_text())
        shipped["inputs"][0]["data"] = [refused.read_text()]
        request.write_text(json.dumps(shipped))
    what = f"the body of the input file {refused}" if given else "the shipped body"

    with pytest.raises(OraclePredictionError, match=rf"^MLflow's scoring code refuses {re.escape(what)}: .*400"):
        check._expected_answers(source, refused if given else None, tmp_path / "work")


def test_export_onnx_refuses_a_repository_speaking_mlflows_protocol_saying_how_to_get_one_it_can_export(
    tracking_store, classifier, tmp_path
):
    info = added_with_protocol(classifier)

    with pytest.raises(
        UnsupportedModelError, match="speaks MLflow's serving protocol .* add the source again with --protocol tensors"
    ):
        read_logged_model(info.model_uri, tmp_path)


def test_add_repository_refuses_an_unknown_protocol_naming_the_allowed_ones(tracking_store):
    with pytest.raises(
        InvalidArgumentError, match=r"protocol 'grpc' is not supported; supported: 'auto', 'tensors', 'mlflow'"
    ):
        mlflow_triton.add_repository("models:/nothing/1", protocol="grpc")
    with pytest.raises(InvalidArgumentError, match="max_batch_size=4: protocol 'mlflow' answers one body per request"):
        mlflow_triton.add_repository("models:/nothing/1", protocol="mlflow", max_batch_size=4)
    assert tracking_store.logged_models() == []


def test_the_command_line_offers_the_protocol_with_its_choices(capsys):
    with pytest.raises(SystemExit):
        cli.main(["add-repository", "models:/clf/1", "--protocol", "grpc"])
    assert "invalid choice: 'grpc' (choose from 'auto', 'tensors', 'mlflow')" in capsys.readouterr().err


# -- check's rule for MLflow's JSON body ----------------------------------------------------------------------------


def body(value):
    return {"response": np.array([json.dumps(value).encode()], dtype=object)}


def test_check_compares_bodies_by_value_and_per_call_keys_by_what_they_must_be():
    want = {"id": "9b2f1a4e-0d1c-4c7e-9a57-1f8f8a0b2c3d", "created": 1_700_000_000, "choices": [{"p": 0.1}]}
    got = {"id": "0a7e4f42-6f0b-4b8e-8f1e-2c0c6f2b9d11", "created": 1_700_000_042, "choices": [{"p": 0.1 + 1e-12}]}
    [result] = compare(body(want), body(got), volatile={"response": MLFLOW_BODY}).values()
    assert result["equal"], result


@pytest.mark.parametrize(
    ("got", "says"),
    [
        ({"predictions": [0, 2]}, "$.predictions[1] is 2, expected 1"),
        ({"predictions": [0]}, "$.predictions has 1 items, expected 2"),
        ({"outputs": [0, 1]}, "$ has keys ['outputs'], expected ['predictions']"),
    ],
)
def test_check_names_where_two_bodies_differ(got, says):
    [result] = compare(body({"predictions": [0, 1]}), body(got), volatile={"response": MLFLOW_BODY}).values()
    assert not result["equal"] and result["how"].endswith(says), result


def two_answers(first, second):
    return {"response": np.array([json.dumps(first).encode(), json.dumps(second).encode()], dtype=object)}


FORECASTS = (
    {"predictions": [{"yhat": 10.0, "yhat_lower": 8.1, "yhat_upper": 12.2}]},
    {"predictions": [{"yhat": 10.0, "yhat_lower": 7.9, "yhat_upper": 11.8}]},
)


def test_check_judges_by_type_the_values_mlflows_own_two_answers_give_differently_and_the_rest_by_value():
    got = {"predictions": [{"yhat": 10.0, "yhat_lower": 8.4, "yhat_upper": 12.0}]}

    [result] = compare(two_answers(*FORECASTS), body(got), volatile={"response": MLFLOW_BODY}).values()

    assert result["equal"], result
    assert (
        "2 value(s) differ between two of MLflow's own answers to the body ($.predictions[0].yhat_lower, "
        in (result["how"])
    )


@pytest.mark.parametrize(
    ("got", "says"),
    [
        ({"predictions": [{"yhat": 11.0, "yhat_lower": 8.1, "yhat_upper": 12.2}]}, "yhat is 11.0, expected 10.0"),
        (
            {"predictions": [{"yhat": 10.0, "yhat_lower": "8.1", "yhat_upper": 12.2}]},
            "yhat_lower is '8.1', not a number as in MLflow's answers (which differ there per call)",
        ),
    ],
)
def test_check_still_names_a_value_mlflow_reproduces_or_a_varying_value_of_another_type(got, says):
    [result] = compare(two_answers(*FORECASTS), body(got), volatile={"response": MLFLOW_BODY}).values()

    assert not result["equal"] and result["how"].endswith(says), result


def test_check_refuses_an_id_that_is_not_a_uuid_where_mlflow_answered_one():
    want = {"id": "9b2f1a4e-0d1c-4c7e-9a57-1f8f8a0b2c3d"}
    [result] = compare(body(want), body({"id": "chatcmpl-1"}), volatile={"response": MLFLOW_BODY}).values()
    assert not result["equal"] and "$.id is not a fresh UUID per row" in result["how"]


# A Responses agent's answer as MLflow's server writes it (ResponsesAgentResponse.model_dump, exclude_none): its output
# item's id a UUID the agent draws per call, its created_at the time of the call in float seconds.
RESPONSES_ANSWER = {
    "object": "response",
    "output": [
        {
            "type": "message",
            "id": "4c1d5e9a-3f7b-4a2e-8d6c-0b9e7f1a2c34",
            "content": [{"type": "output_text", "text": "HI", "annotations": []}],
            "role": "assistant",
        }
    ],
    "created_at": 1_700_000_000.25,
}


def test_check_judges_a_responses_answers_created_at_as_the_time_of_the_call_not_by_a_relative_tolerance():
    later = json.loads(json.dumps(RESPONSES_ANSWER))
    later["output"][0]["id"] = "d2a0f6b1-8e4c-4b7a-9c3d-5f1e2a7b8c90"
    later["created_at"] += 40 * 60  # Triton answered 40 minutes after the oracle: a relative 1e-6 allows 28 minutes

    [result] = compare(body(RESPONSES_ANSWER), body(later), volatile={"response": MLFLOW_BODY}).values()

    assert result["equal"], result
    assert "created_at: the time of the call, in epoch seconds" in result["how"]


@pytest.mark.parametrize(
    ("created_at", "says"),
    [
        (None, "$.created_at is not the time of the call, in epoch seconds (got None"),
        ("1700000000.25", "$.created_at is not the time of the call, in epoch seconds (got '1700000000.25'"),
        (1_700_000_000.25 + 2 * 3600, "$.created_at is not the time of the call, in epoch seconds (got 1700007200.25"),
    ],
)
def test_check_refuses_a_created_at_that_is_not_a_time_close_to_its_own_call(created_at, says):
    [result] = compare(
        body(RESPONSES_ANSWER), body({**RESPONSES_ANSWER, "created_at": created_at}), volatile={"response": MLFLOW_BODY}
    ).values()
    assert not result["equal"] and says in result["how"], result


class Chronicle(mlflow.pyfunc.ResponsesAgent):
    """A Responses agent as MLflow's docs write one: a fresh UUID per output item, the time of the call."""

    def predict(self, request):
        text = str(request.input[-1].content).upper()
        item = self.create_text_output_item(text=text, id=str(uuid.uuid4()))
        return mlflow.types.responses.ResponsesAgentResponse(output=[item], created_at=time.time())


class Diary(mlflow.pyfunc.ChatAgent):
    """A chat agent as MLflow's docs write one: every message it answers has a fresh UUID."""

    def predict(self, messages, context=None, custom_inputs=None):
        reply = ChatAgentMessage(role="assistant", content=messages[-1].content[::-1], id=str(uuid.uuid4()))
        return ChatAgentResponse(messages=[reply])


@pytest.mark.parametrize(
    ("model", "request_body"),
    [
        (EchoChat(), {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}),
        (Diary(), {"messages": [{"role": "user", "content": "hi"}]}),
        (Chronicle(), {"input": [{"role": "user", "content": "hi"}]}),
    ],
    ids=["ChatModel", "ChatAgent", "ResponsesAgent"],
)
def test_two_calls_of_each_chat_interface_answer_alike_by_checks_rule_an_hour_apart(
    model, request_body, tmp_path, monkeypatch
):
    mlflow.pyfunc.save_model(tmp_path / "model", python_model=model, pip_requirements=[])
    served = MlflowProtocol(mlflow.pyfunc.load_model(str(tmp_path / "model")))
    first = served.answer(json.dumps(request_body).encode())
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 50 * 60)  # the second call, 50 minutes later
    second = served.answer(json.dumps(request_body).encode())

    [result] = compare(
        {"response": response_array(first.body)},
        {"response": response_array(second.body)},
        volatile={"response": MLFLOW_BODY},
    ).values()

    assert (first.status, second.status) == (200, 200)
    assert first.body != second.body and result["equal"], (first.body, second.body, result)


class Ticket(ChatModel):
    """A chat model that answers an ``id`` of its own per call (a UUID): the typed tensors can carry its answer."""

    def predict(self, context, messages, params):
        reply = ChatMessage(role="assistant", content=messages[-1].content.upper())
        return ChatCompletionResponse(
            id=str(uuid.uuid4()), model="ticket", choices=[ChatChoice(index=0, message=reply)]
        )


def test_check_judges_a_chat_models_typed_answer_id_and_created_by_what_they_must_be(tracking_store, monkeypatch):
    source = mlflow.pyfunc.log_model(name="ticket", python_model=Ticket(), pip_requirements=[])
    info = mlflow_triton.add_repository(source.model_uri, protocol="tensors")
    local = pathlib.Path(mlflow.artifacts.download_artifacts(artifact_uri=info.model_uri))
    [repository] = (local / "model_repository").iterdir()
    model = mlflow.pyfunc.load_model(info.model_uri)
    example = load_input_example(repository)
    first = predict_outputs(model, example, repository)
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 50 * 60)  # Triton's answer, 50 minutes later

    results = compare(first, predict_outputs(model, example, repository), volatile=volatile_outputs(repository))

    assert volatile_outputs(repository) == {
        "id": "a fresh UUID per row",
        "created": "the time of the call, in epoch seconds",
    }
    assert all(result["equal"] for result in results.values()), results


def test_the_pyfunc_wrapper_logs_a_chat_model_with_the_protocol_and_its_chat_body_as_the_request(
    tracking_store, tmp_path
):
    example = {"messages": [{"role": "user", "content": "hi there"}]}

    info = mlflow_triton.pyfunc.log_model(EchoChat(), name="echo", input_example=example, protocol="mlflow")

    local = pathlib.Path(mlflow.artifacts.download_artifacts(artifact_uri=info.model_uri, dst_path=str(tmp_path)))
    repository = local / "model_repository" / "echo"
    [sent] = json.loads((repository / "request.json").read_text())["inputs"][0]["data"]
    assert json.loads(sent)["messages"] == example["messages"]
    assert json.loads((repository / "validation.json").read_text())["protocol"] == "mlflow"


class Broken(mlflow.pyfunc.PythonModel):
    """A model whose predict fails with MLflow's INTERNAL_ERROR (MLflow's server answers 500) or a plain error (400)."""

    def predict(self, context, model_input, params=None):
        if "internal" in str(model_input):
            raise MlflowException("secret 42 in the store", error_code=INTERNAL_ERROR)
        raise ValueError("secret 42")


def test_mlflows_500_stays_internal_with_its_text_only_in_tritons_log(tmp_path, triton_log):
    model = serve(tmp_path, lambda path: mlflow.pyfunc.save_model(path, python_model=Broken(), pip_requirements=[]))

    internal = error_message(ask(model, json.dumps({"inputs": ["internal"]})), fake_pb_utils.TritonError.INTERNAL)
    bad_request = error_message(ask(model, json.dumps({"inputs": ["other"]})))

    assert internal.startswith("MLflow answered HTTP 500 (INTERNAL_ERROR): ") and "secret" not in internal
    assert any("secret 42 in the store" in text for _, text in triton_log)
    assert bad_request.startswith("MLflow answered HTTP 400 (BAD_REQUEST): Encountered an unexpected error")


def test_checks_input_file_for_the_protocol_is_a_body_with_its_content_type_by_suffix(tmp_path):
    (tmp_path / "rows.csv").write_text("length,width\n1.0,0.5\n")
    (tmp_path / "body.json").write_text('{"inputs": [[1.0, 0.5]]}')
    (tmp_path / "latin1.json").write_bytes(b'{"inputs": ["caf\xe9"]}')

    csv_request, csv_body, csv_type = body_request(tmp_path / "rows.csv", tmp_path / "requests", "csv")
    _, _, json_type = body_request(tmp_path / "body.json", tmp_path / "requests", "json")

    sent = json.loads(csv_request.body_path.read_text())
    assert (csv_type, json_type, csv_body) == ("text/csv", "application/json", b"length,width\n1.0,0.5\n")
    assert [(i["name"], i["data"]) for i in sent["inputs"]] == [
        ("request", ["length,width\n1.0,0.5\n"]),
        ("content_type", ["text/csv"]),
    ]
    with pytest.raises(InputFileError, match="the body is not UTF-8 text"):
        body_request(tmp_path / "latin1.json", tmp_path / "requests")
