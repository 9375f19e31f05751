"""MLflow 3's model interfaces: ``ChatModel``, ``ChatAgent``, ``ResponsesAgent``, type-hinted ``PythonModel``s.

Each is logged with plain ``mlflow.pyfunc.log_model`` as its test logs it (MLflow sets the signature itself and
refuses ``signature=`` for the chat and agent interfaces) and brought in with ``mlflow_triton.add_repository``:

* ``tests/pyfunc/test_chat_model.py`` (``TestChatModel``, ``ChatModelWithContext``), ``tests/pyfunc/
  test_chat_agent.py`` (``SimpleChatAgent``, ``ChatAgentWithCustomInputs``), ``tests/pyfunc/
  test_responses_agent.py`` (``SimpleResponsesAgent``, ``CustomInputsResponsesAgent``), each also as a model from
  code (``model_code/chat_model.py``, ``chat_agent.py``, ``responses_agent.py``); MLflow 3.17's agent interfaces
  take ``messages, context, custom_inputs`` and ``ResponsesAgentRequest``, where the tests read older names;
* ``tests/pyfunc/test_pyfunc_model_with_type_hints.py``'s ``test_pyfunc_model_infer_signature_from_type_hints``
  (``predict(model_input: <hint>) -> <hint>`` returning its input; ``[<hint>-<model type>]`` names the parameter);
* ``tests/pyfunc/test_pyfunc_schema_enforcement.py``'s models returning their params (every param type, scalars
  and arrays).

The classes are defined inside the builders (cloudpickle stores them by value), as the tests define them in their
modules, their type hints evaluated as they are written (no postponed annotations here); where a test logs without
``input_example``, the case gives the input the test then sends, and says so.
"""

# No ``from __future__ import annotations``: the type hints of the models built here must be evaluated where they
# are written (``model_input: hint`` with ``hint`` a builder's local), as in MLflow's test module; as strings MLflow
# could not resolve them and would log the models without the signature the test checks.
import datetime
import pathlib

from .case import (
    PYFUNC_CHAT_AGENT,
    PYFUNC_CHAT_MODEL,
    PYFUNC_RESPONSES_AGENT,
    PYFUNC_SCHEMA_ENFORCEMENT,
    PYFUNC_TYPE_HINTS,
    Built,
    case_table,
)

chat_model_case = case_table("pyfunc", PYFUNC_CHAT_MODEL)
chat_agent_case = case_table("pyfunc", PYFUNC_CHAT_AGENT)
responses_case = case_table("pyfunc", PYFUNC_RESPONSES_AGENT)
hints_case = case_table("pyfunc", PYFUNC_TYPE_HINTS)
params_case = case_table("pyfunc", PYFUNC_SCHEMA_ENFORCEMENT)
MODEL_CODE = pathlib.Path(__file__).resolve().parent / "model_code"
ADD = "add-repository"


def _chat_model():
    """``TestChatModel``: the messages and params it was given, as JSON, in two choices (``id`` fixed)."""
    import json

    import mlflow
    from mlflow.types.llm import ChatCompletionResponse

    class TestChatModel(mlflow.pyfunc.ChatModel):
        def predict(self, context, messages, params):
            choices = [
                {"index": 0, "message": {"role": "assistant", "content": json.dumps([m.to_dict() for m in messages])}},
                {"index": 1, "message": {"role": "user", "content": json.dumps(params.to_dict())}},
            ]
            for choice in choices:
                choice["finish_reason"] = "stop"
            usage = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
            return ChatCompletionResponse(id="123", model="MyChatModel", choices=choices, usage=usage)

    return TestChatModel()


@chat_model_case(
    "chat-model-save-load-add",
    "test_chat_model_save_load",
    note="TestChatModel without input_example (MLflow saves its default chat example)",
    route=ADD,
)
def chat_model_save_load() -> Built:
    return Built(_chat_model(), {})


@chat_model_case(
    "chat-model-params-example-add",
    "test_chat_model_works_with_infer_signature_input_example",
    note="example {'messages': [...], 'max_tokens': 100}",
    route=ADD,
)
def chat_model_params_example() -> Built:
    example = {
        "messages": [{"role": "user", "content": "What is Retrieval-augmented Generation?"}],
        "max_tokens": 100,
    }
    return Built(_chat_model(), {"input_example": example})


@chat_model_case(
    "chat-model-message-example-add",
    "test_chat_model_works_with_chat_message_input_example",
    note="example [ChatMessage(role='user', content=..., name='chat')]",
    route=ADD,
)
def chat_model_message_example() -> Built:
    from mlflow.types.llm import ChatMessage

    example = [ChatMessage(role="user", content="What is Retrieval-augmented Generation?", name="chat")]
    return Built(_chat_model(), {"input_example": example})


@chat_model_case(
    "chat-model-with-context-add",
    "test_chat_model_with_context_saves_successfully",
    note="ChatModelWithContext: load_context unpickles the predict_fn artifact",
    route=ADD,
)
def chat_model_with_context() -> Built:
    import json
    import pickle
    import tempfile

    import mlflow
    from mlflow.types.llm import ChatCompletionResponse

    def mock_predict():
        return "hello"

    class ChatModelWithContext(mlflow.pyfunc.ChatModel):
        def load_context(self, context):
            self.predict_fn = pickle.loads(pathlib.Path(context.artifacts["predict_fn"]).read_bytes())

        def predict(self, context, messages, params):
            content = json.dumps([{"role": "assistant", "content": self.predict_fn()}])
            choices = [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
            return ChatCompletionResponse(id="123", model="MyChatModel", choices=choices)

    path = pathlib.Path(tempfile.mkdtemp(prefix="corpus-chat-")) / "predict.pkl"
    import cloudpickle

    path.write_bytes(cloudpickle.dumps(mock_predict))
    return Built(ChatModelWithContext(), {"artifacts": {"predict_fn": str(path)}})


@chat_model_case(
    "chat-model-from-code-add",
    "test_chat_model_works_in_serving",
    note="TestChatModel as a model from code (model_code/chat_model.py); the test's request is the example",
    route=ADD,
)
def chat_model_from_code() -> Built:
    example = {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant"},
            {"role": "user", "content": "Hello!"},
        ],
        "max_tokens": 100,
    }
    return Built(str(MODEL_CODE / "chat_model.py"), {"input_example": example})


def _chat_agent(custom=False):
    """``SimpleChatAgent`` (traced) or ``ChatAgentWithCustomInputs``: each message answered by ``llm``, with a new
    ``uuid4`` id (the test's ``get_mock_response``: MLflow requires the ids of one answer to differ)."""
    from uuid import uuid4

    import mlflow
    from mlflow.types.agent import ChatAgentResponse

    def answers(messages):
        return [{"role": "assistant", "content": m.content, "name": "llm", "id": str(uuid4())} for m in messages]

    class SimpleChatAgent(mlflow.pyfunc.ChatAgent):
        @mlflow.trace
        def predict(self, messages, context=None, custom_inputs=None):
            return ChatAgentResponse(messages=answers(messages))

    class ChatAgentWithCustomInputs(mlflow.pyfunc.ChatAgent):
        def predict(self, messages, context=None, custom_inputs=None):
            return ChatAgentResponse(messages=answers(messages), custom_outputs=custom_inputs)

    return ChatAgentWithCustomInputs() if custom else SimpleChatAgent()


@chat_agent_case(
    "chat-agent-context-example-add",
    "test_chat_agent_works_with_infer_signature_input_example",
    note="SimpleChatAgent, example messages + context + stream",
    route=ADD,
)
def chat_agent_context_example() -> Built:
    example = {
        "messages": [
            {"role": "system", "content": "You are in helpful assistant!"},
            {"role": "user", "content": "What is Retrieval-augmented Generation?"},
        ],
        "context": {"conversation_id": "123", "user_id": "456"},
        "stream": False,
    }
    return Built(_chat_agent(), {"input_example": example})


@chat_agent_case(
    "chat-agent-default-task-add",
    "test_chat_agent_logs_default_metadata_task",
    note="SimpleChatAgent without input_example (MLflow saves its default agent example)",
    route=ADD,
)
def chat_agent_default_task() -> Built:
    return Built(_chat_agent(), {})


@chat_agent_case(
    "chat-agent-custom-inputs-add",
    "test_chat_agent_can_receive_and_return_custom",
    note="ChatAgentWithCustomInputs, example with custom_inputs (a nested dict)",
    route=ADD,
)
def chat_agent_custom_inputs() -> Built:
    example = {
        "messages": [{"role": "user", "content": "Hello!"}],
        "custom_inputs": {"image_url": "example", "detail": "high", "other_dict": {"key": "value"}},
    }
    return Built(_chat_agent(custom=True), {"input_example": example})


@chat_agent_case(
    "chat-agent-request-example-add",
    "test_chat_agent_works_with_chat_agent_request_input_example",
    note="SimpleChatAgent, example {'messages': [...], 'context': {...}} (input_example_with_params)",
    route=ADD,
)
def chat_agent_request_example() -> Built:
    example = {
        "messages": [{"role": "user", "content": "What is rag?"}],
        "context": {"conversation_id": "121", "user_id": "123"},
    }
    return Built(_chat_agent(), {"input_example": example})


@chat_agent_case(
    "chat-agent-from-code-add",
    "test_chat_agent_works_with_infer_signature_input_example",
    note="SimpleChatAgent as a model from code (model_code/chat_agent.py), the test's example",
    route=ADD,
)
def chat_agent_from_code() -> Built:
    example = {"messages": [{"role": "user", "content": "What is Retrieval-augmented Generation?"}]}
    return Built(str(MODEL_CODE / "chat_agent.py"), {"input_example": example})


def _responses_agent(custom=False):
    """``SimpleResponsesAgent`` (a new uuid4 per output message, as the test's mock) or the custom-inputs one."""
    from uuid import uuid4

    import mlflow
    from mlflow.types.responses import ResponsesAgentResponse

    def output(request):
        item = {
            "type": "message",
            "id": str(uuid4()),
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": request.input[0].content}],
        }
        return [item]

    class SimpleResponsesAgent(mlflow.pyfunc.ResponsesAgent):
        def predict(self, request):
            return ResponsesAgentResponse(output=output(request))

    class CustomInputsResponsesAgent(mlflow.pyfunc.ResponsesAgent):
        def predict(self, request):
            return ResponsesAgentResponse(output=output(request), custom_outputs=request.custom_inputs)

    return CustomInputsResponsesAgent() if custom else SimpleResponsesAgent()


@responses_case(
    "responses-agent-default-task-add",
    "test_responses_agent_log_default_task",
    note="SimpleResponsesAgent without input_example (MLflow saves its default example)",
    route=ADD,
)
def responses_agent_default_task() -> Built:
    return Built(_responses_agent(), {})


@responses_case(
    "responses-agent-predict-add",
    "test_responses_agent_predict",
    note="SimpleResponsesAgent; the test predicts RESPONSES_AGENT_INPUT_EXAMPLE: it is the example",
    route=ADD,
)
def responses_agent_predict() -> Built:
    from mlflow.types.responses import RESPONSES_AGENT_INPUT_EXAMPLE

    return Built(_responses_agent(), {"input_example": RESPONSES_AGENT_INPUT_EXAMPLE})


@responses_case(
    "responses-agent-custom-inputs-add",
    "test_responses_agent_custom_inputs",
    note="CustomInputsResponsesAgent; the test's payload (custom_inputs {'asdf': 'asdf'}) is the example",
    route=ADD,
)
def responses_agent_custom_inputs() -> Built:
    from mlflow.types.responses import RESPONSES_AGENT_INPUT_EXAMPLE

    example = {**RESPONSES_AGENT_INPUT_EXAMPLE, "custom_inputs": {"asdf": "asdf"}}
    return Built(_responses_agent(custom=True), {"input_example": example})


@responses_case(
    "responses-agent-from-code-add",
    "test_responses_agent_predict",
    note="SimpleResponsesAgent as a model from code (model_code/responses_agent.py), RESPONSES_AGENT_INPUT_EXAMPLE",
    route=ADD,
)
def responses_agent_from_code() -> Built:
    from mlflow.types.responses import RESPONSES_AGENT_INPUT_EXAMPLE

    return Built(str(MODEL_CODE / "responses_agent.py"), {"input_example": RESPONSES_AGENT_INPUT_EXAMPLE})


def _identity(hint, with_context=True):
    """The test's ``TestModel``: ``predict(self, [context,] model_input: hint, params=None) -> hint``."""
    import mlflow

    if with_context:

        class TestModel(mlflow.pyfunc.PythonModel):
            def predict(self, context, model_input: hint, params=None) -> hint:  # type: ignore[valid-type]
                return model_input

    else:

        class TestModel(mlflow.pyfunc.PythonModel):  # type: ignore[no-redef]
            def predict(self, model_input: hint, params=None) -> hint:  # type: ignore[valid-type]
                return model_input

    return TestModel()


def _hint_case(case_id, hint_name, make_hint, example, model_type="python_model"):
    """A case of the type-hint test: ``make_hint()`` is the hint (built in the builder, as pydantic models are)."""

    def build() -> Built:
        return Built(_identity(make_hint(), model_type == "python_model"), {"input_example": example})

    hints_case(
        f"type-hint-{case_id}-add",
        f"test_pyfunc_model_infer_signature_from_type_hints[{hint_name}-{model_type}-True]",
        note=f"predict(model_input: {hint_name}) -> {hint_name}, example {example!r}",
        route=ADD,
    )(build)


def _custom_example():
    """``list[CustomExample]``: a pydantic model with long, str, bool, double, Any and an optional str."""
    from typing import Any, Optional

    import pydantic

    class CustomExample(pydantic.BaseModel):
        long_field: int
        str_field: str
        bool_field: bool
        double_field: float
        any_field: Any
        optional_str: Optional[str] = None  # noqa: UP045 (the test's own spelling)

    return list[CustomExample]


def _custom_example2():
    """``list[CustomExample2]``: a dict of Any, a list of ``Message`` models and an optional int."""
    from typing import Any, Optional

    import pydantic

    class Message(pydantic.BaseModel):
        role: str
        content: str

    class CustomExample2(pydantic.BaseModel):
        custom_field: dict[str, Any]
        messages: list[Message]
        optional_int: Optional[int] = None  # noqa: UP045 (the test's own spelling)

    return list[CustomExample2]


def _any(nested=False):
    from typing import Any

    return list[list[Any]] if nested else list[Any]


_hint_case("list-int", "list[int]", lambda: list[int], [123])
_hint_case("list-bool-no-context", "list[bool]", lambda: list[bool], [True], "python_model_no_context")
_hint_case("list-float", "list[float]", lambda: list[float], [1.23])
_hint_case("list-bytes", "list[bytes]", lambda: list[bytes], [b"bytes"])
_hint_case(
    "list-datetime", "list[datetime.datetime]", lambda: list[datetime.datetime], [datetime.datetime(2024, 5, 6, 7, 8)]
)
_hint_case("list-list-str", "list[list[str]]", lambda: list[list[str]], [["a", "b"]])
_hint_case("list-list-list-str", "list[list[list[str]]]", lambda: list[list[list[str]]], [[["a", "b"], ["c"]]])
_hint_case("list-list-dict", "list[list[dict[str, str]]]", lambda: list[list[dict[str, str]]], [[{"a": "b"}]])
_hint_case("list-dict-str-int", "list[dict[str, int]]", lambda: list[dict[str, int]], [{"a": 1}, {"a": 2}])
_hint_case("list-dict-list-str", "list[dict[str, list[str]]]", lambda: list[dict[str, list[str]]], [{"a": ["b"]}])
_hint_case("list-union", "list[int | str]", lambda: list[int | str], [1, "a", 234])
_hint_case("list-any", "list[Any]", _any, [1, "a", 234])
_hint_case("list-list-any", "list[list[Any]]", lambda: _any(nested=True), [[True], ["abc"], [123]])
_hint_case(
    "pydantic-custom-example",
    "list[CustomExample]",
    _custom_example,
    [
        {
            "long_field": 123,
            "str_field": "abc",
            "bool_field": True,
            "double_field": 1.23,
            "any_field": ["any", 123],
            "optional_str": "optional",
        }
    ],
)
_hint_case(
    "pydantic-messages",
    "list[CustomExample2]",
    _custom_example2,
    [{"custom_field": {"a": 1}, "messages": [{"role": "admin", "content": "hello"}], "optional_int": 123}],
)


@hints_case(
    "type-hint-callable-list-str-add",
    "test_pyfunc_model_infer_signature_from_type_hints[list[str]-callable-True]",
    note="a function predict(model_input: list[str]) -> list[str] as python_model, example ['string']",
    route=ADD,
)
def callable_list_str() -> Built:
    def predict(model_input: list[str]) -> list[str]:
        return model_input

    return Built(predict, {"input_example": ["string"]})


@hints_case(
    "type-hint-output-mismatch-add",
    "test_pyfunc_model_infer_signature_from_type_hints_errors",
    note="predict(model_input: list[int]) -> str returning its input: MLflow warns and records an Any output",
    route=ADD,
)
def output_mismatch() -> Built:
    def predict(model_input: list[int]) -> str:
        return model_input  # type: ignore[return-value]

    return Built(predict, {"input_example": [123]})


def _params_basic_json():
    """The JSON-serializable params ``test_enforce_schema_in_python_model_serving`` sends."""
    import numpy as np

    return {
        "str_param": "str_a",
        "int_param": 1,
        "bool_param": True,
        "double_param": 1.0,
        "float_param": 0.1,
        "long_param": 100,
        "datetime_param": datetime.datetime(2023, 6, 6, 0, 0, 0),
        "str_list": ["a", "b", "c"],
        "bool_list": [True, False],
        "double_array": np.array([1.0, 2.0]),
    }


def _params_model(arrays=False):
    """``PythonModelWithBasicParams`` / ``PythonModelWithArrayParams``: ``predict`` returns its params (a dict)."""
    import mlflow

    class PythonModelWithParams(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            assert isinstance(params, dict)
            return params

    return PythonModelWithParams()


@params_case(
    "params-basic-serving-add",
    "test_enforce_schema_in_python_model_serving",
    note="PythonModelWithBasicParams (returns its params: a dict, not a frame), signature infer_signature(['input1'], "
    "params=sample_params_basic); the test logs without input_example: its request (['a', 'b'], its params) is "
    "the example",
    route=ADD,
)
def params_basic_serving() -> Built:
    from mlflow.models import infer_signature

    from .cases_pyfunc import _sample_params_basic

    signature = infer_signature(["input1"], params=_sample_params_basic())
    return Built(_params_model(), {"signature": signature, "input_example": (["a", "b"], _params_basic_json())})


@params_case(
    "params-arrays-serving-add",
    "test_enforce_schema_with_arrays_in_python_model_serving",
    note="PythonModelWithArrayParams (returns its params), int, double, float, long and datetime arrays; the test "
    "logs without input_example: its request (['a', 'b'], sample_params_with_arrays) is the example",
    route=ADD,
)
def params_arrays_serving() -> Built:
    import numpy as np
    from mlflow.models import infer_signature

    params = {
        "int_array": np.array([np.int32(1), np.int32(2)]),
        "double_array": np.array([1.0, 2.0]),
        "float_array": np.array([np.float32(1.0), np.float32(2.0)]),
        "long_array": np.array([1, 2]),
        "datetime_array": np.array([np.datetime64("2023-06-26 00:00:00"), np.datetime64("2023-06-26 00:00:00")]),
    }
    signature = infer_signature(["input1"], params=params)
    return Built(_params_model(arrays=True), {"signature": signature, "input_example": (["a", "b"], params)})


def _echo_with_params():
    from .cases_pyfunc import _identity_with_params

    return _identity_with_params()


@params_case(
    "params-records-optional-add",
    "test_pyfunc_model_input_example_with_params",
    note="example ([{'a': 'a', 'b': 'b'}, {'a': 'b'}], sample_params_basic): b optional",
    route=ADD,
)
def params_records_optional() -> Built:
    from .cases_pyfunc import _sample_params_basic

    return Built(_echo_with_params(), {"input_example": ([{"a": "a", "b": "b"}, {"a": "b"}], _sample_params_basic())})


@params_case(
    "params-dict-of-list-add",
    "test_pyfunc_model_input_example_with_params",
    note="example ({'a': ['a', 'b', 'c'], 'b': 'b'}, sample_params_basic): one row, a: Array(string)",
    route=ADD,
)
def params_dict_of_list() -> Built:
    from .cases_pyfunc import _sample_params_basic

    return Built(_echo_with_params(), {"input_example": ({"a": ["a", "b", "c"], "b": "b"}, _sample_params_basic())})


CASES = (
    *chat_model_case.cases,  # type: ignore[attr-defined]
    *chat_agent_case.cases,  # type: ignore[attr-defined]
    *responses_case.cases,  # type: ignore[attr-defined]
    *hints_case.cases,  # type: ignore[attr-defined]
    *params_case.cases,  # type: ignore[attr-defined]
)
