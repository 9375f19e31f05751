"""``stream=True``: the repository's two model directories, what records them, and the refusals before anything is
written. The runtime's streaming: tests/unit/runtime/test_runtime_streaming.py; the real server:
tests/e2e/test_streaming_triton.py."""

import filecmp
import json

import mlflow.pyfunc
import pandas as pd
import pytest
from mlflow.models import Model
from sklearn.linear_model import LinearRegression

import mlflow_triton
from mlflow_triton import cli
from mlflow_triton.errors import InvalidArgumentError, ValidationError
from mlflow_triton.repository.config import read_model_config
from mlflow_triton.repository.guard import STREAM_PARAMETER, served_directories


class Letters(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return ["".join(model_input["text"])]

    def predict_stream(self, context, model_input, params=None):
        for letter in model_input["text"]:  # MLflow hands predict_stream one row: {"text": "abc"}
            yield {"letter": letter}


class Silent(Letters):
    def predict_stream(self, context, model_input, params=None):
        return iter(())


class Failing(Letters):
    def predict_stream(self, context, model_input, params=None):
        yield {"letter": "a"}
        raise KeyError("no more")


EXAMPLE = pd.DataFrame({"text": ["abc"]})


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "letters"
    mlflow_triton.pyfunc.save_model(Letters(), path, input_example=EXAMPLE, stream=True)
    return path / "model_repository"


def test_the_repository_holds_the_one_shot_model_and_beside_it_the_same_model_decoupled(saved):
    assert sorted(p.name for p in saved.iterdir()) == ["letters", "letters_stream"]
    one_shot = read_model_config(saved / "letters" / "config.pbtxt")
    streaming = read_model_config(saved / "letters_stream" / "config.pbtxt")
    assert streaming.name == "letters_stream" and streaming.model_transaction_policy.decoupled
    assert not one_shot.model_transaction_policy.decoupled
    assert one_shot.parameters[STREAM_PARAMETER].string_value == "letters_stream"
    assert STREAM_PARAMETER not in streaming.parameters
    same = filecmp.dircmp(saved / "letters", saved / "letters_stream")
    assert same.diff_files == ["config.pbtxt"] and not same.left_only and same.right_only == ["stream_request.json"]
    [body] = json.loads((saved / "letters" / "request.json").read_text())["inputs"][0]["data"]
    assert json.loads((saved / "letters_stream" / "stream_request.json").read_text()) == {"request": body}
    assert json.loads(body) == {"dataframe_split": {"columns": ["text"], "data": [["abc"]]}}


def test_validation_records_the_stream_proved_in_memory_and_the_flavor_names_the_stream_model(saved):
    record = json.loads((saved / "letters" / "validation.json").read_text())
    assert record["protocol"] == "mlflow"
    assert record["protocol_chosen_because"].startswith("stream=True: a stream speaks MLflow's serving protocol")
    assert record["stream"]["model"] == "letters_stream" and record["stream"]["chunks"] == 3
    flavor = Model.load(str(saved.parent / "MLmodel")).flavors["triton"]
    assert flavor["model_name"] == "letters" and flavor["stream_model_name"] == "letters_stream"


def test_serving_the_one_shot_model_loads_both_and_the_stream_model_serves_alone(saved):
    assert [p.name for p in served_directories(saved / "letters")] == ["letters", "letters_stream"]
    assert [p.name for p in served_directories(saved / "letters_stream")] == ["letters_stream"]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"stream": "yes"}, "stream must be True or False, got 'yes'"),
        ({"protocol": "tensors"}, "stream=True with protocol='tensors': a stream speaks MLflow's serving protocol"),
        ({"max_batch_size": 4}, "max_batch_size=4 with stream=True: a stream answers one body per request"),
    ],
)
def test_a_stream_option_that_cannot_hold_is_refused_before_anything_is_written(tmp_path, options, says):
    options = {"stream": True, **options}
    with pytest.raises(InvalidArgumentError, match=says.replace("(", r"\(").replace(")", r"\)")):
        mlflow_triton.pyfunc.save_model(Letters(), tmp_path / "m", input_example=EXAMPLE, **options)
    assert list(tmp_path.iterdir()) == []


def test_a_model_without_predict_stream_is_refused_saying_what_streams(tmp_path):
    X = pd.DataFrame({"x": [1.0, 2.0]})
    with pytest.raises(InvalidArgumentError) as refused:
        mlflow_triton.sklearn.save_model(
            LinearRegression().fit(X, [1.0, 2.0]), tmp_path / "m", input_example=X, stream=True
        )
    assert "cannot stream: its pyfunc has no predict_stream" in str(refused.value)
    assert "wrap the model in a PythonModel whose predict_stream yields its chunks" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("model", "says"),
    [
        (Silent(), "predict_stream yielded no chunk for the example's MLflow serving body"),
        (Failing(), "predict_stream failed on the example's MLflow serving body: KeyError: 'no more'"),
    ],
)
def test_an_example_that_does_not_stream_stops_logging_naming_why(tmp_path, model, says):
    with pytest.raises(ValidationError, match=says):
        mlflow_triton.pyfunc.save_model(model, tmp_path / "m", input_example=EXAMPLE, stream=True)
    assert list(tmp_path.iterdir()) == []


def test_add_repository_refuses_a_source_that_cannot_stream_before_logging(tmp_path, tracking_store):
    X = pd.DataFrame({"x": [1.0, 2.0]})
    with mlflow.start_run():
        info = mlflow.sklearn.log_model(LinearRegression().fit(X, [1.0, 2.0]), name="lr", input_example=X)
    with pytest.raises(InvalidArgumentError, match=f"stream=True: Model '{info.model_uri}' cannot stream"):
        mlflow_triton.add_repository(info.model_uri, stream=True)
    assert len(mlflow.search_logged_models(output_format="list")) == 1  # only the source


def test_the_command_line_offers_stream_on_add_repository(capsys):
    with pytest.raises(SystemExit):
        cli.main(["add-repository", "--help"])
    assert "--stream" in capsys.readouterr().out


# -- check's rule for a stream -----------------------------------------------------------------------------------


def test_check_compares_chunks_in_order_with_per_call_ids_judged_as_uuids():
    from mlflow_triton.local._compare import compare_chunks

    want = [json.dumps({"type": "delta", "item_id": "9b2f1a4e-0d1c-4c7e-9a57-1f8f8a0b2c3d", "delta": d}) for d in "ab"]
    got = [json.dumps({"type": "delta", "item_id": "0a7e4f42-6f0b-4b8e-8f1e-2c0c6f2b9d11", "delta": d}) for d in "ab"]
    assert compare_chunks(want, got)["equal"]


@pytest.mark.parametrize(
    ("got", "says"),
    [
        (['{"d": "a"}'], "1 chunk(s), expected 2 (pyfunc.predict_stream's)"),
        (
            ['{"d": "b"}', '{"d": "a"}'],
            "chunk 1 of 2: MLflow's JSON body, compared as parsed values: $.d is 'b', expected",
        ),
    ],
)
def test_check_names_the_first_chunk_that_differs(got, says):
    from mlflow_triton.local._compare import compare_chunks

    result = compare_chunks(['{"d": "a"}', '{"d": "b"}'], got)
    assert not result["equal"] and result["how"].startswith(says), result


class Chat(mlflow.pyfunc.ChatModel):
    """A ChatModel without a predict_stream of its own: MLflow marks it streamable all the same."""

    def predict(self, context, messages, params):
        from mlflow.types.llm import ChatChoice, ChatCompletionResponse, ChatMessage

        return ChatCompletionResponse(choices=[ChatChoice(index=0, message=ChatMessage(role="assistant", content="!"))])


def streaming_oracle(repository):
    from types import SimpleNamespace

    from mlflow_triton.local.check import _stream_check

    source = SimpleNamespace(repository=repository, files=repository)
    return _stream_check(source, mlflow.pyfunc.load_model(str(repository / "1" / "artifact")))


def test_checks_oracle_for_a_streaming_repository_is_predict_streams_chunks_of_the_shipped_body(saved):
    found = streaming_oracle(saved / "letters")
    assert found.model == "letters_stream"
    assert found.expected == ['{"letter": "a"}', '{"letter": "b"}', '{"letter": "c"}']


def test_check_offers_a_stream_only_for_a_repository_whose_model_streams_its_body(tmp_path):
    mlflow_triton.pyfunc.save_model(Letters(), tmp_path / "once", input_example=EXAMPLE, protocol="mlflow")
    example = {"messages": [{"role": "user", "content": "hi"}]}
    mlflow_triton.pyfunc.save_model(Chat(), tmp_path / "chat", input_example=example)

    offered = streaming_oracle(tmp_path / "once" / "model_repository" / "once")
    assert offered.model is None and len(offered.expected) == 3
    assert streaming_oracle(tmp_path / "chat" / "model_repository" / "chat") is None  # NotImplementedError: no offer


def test_a_stream_that_ends_in_an_error_is_named_by_its_transport_and_chunks_sent(monkeypatch):
    from types import SimpleNamespace

    from mlflow_triton.local import check
    from mlflow_triton.local.errors import InferenceError

    def failing(url, model, body):
        yield '{"letter": "a"}'
        raise InferenceError(200, "after 1 chunk(s): predict_stream failed after 1 chunk(s): KeyError", url)

    monkeypatch.setattr(check, "grpc_chunks", failing)
    report = check.ValidationReport(model="letters")
    server = SimpleNamespace(grpc_url="127.0.0.1:1", url="http://127.0.0.1:2")
    stream = check.StreamCheck("letters_stream", "{}", ['{"letter": "a"}', '{"letter": "b"}'])

    with pytest.raises(InferenceError) as ended:
        check._stream_answers(report, server, stream)
    assert ended.value.triton_error == (
        "over gRPC stream, after 1 chunk(s): predict_stream failed after 1 chunk(s): KeyError"
    )
