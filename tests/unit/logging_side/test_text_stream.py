"""``stream=True`` for a Transformers text-generation pipeline, whose MLflow flavor has no ``predict_stream``: the
``<name>_stream`` model serves the streaming package of ``_text_stream`` (``_text_stream_model.py`` around the
package). The real server: tests/e2e/test_streaming_triton.py."""

import json
import threading

import mlflow
import mlflow.pyfunc
import mlflow.transformers
import pytest
from mlflow.exceptions import MlflowException
from mlflow.models import Model

import mlflow_triton.transformers
from mlflow_triton import _text_stream, _text_stream_model
from mlflow_triton.errors import InvalidArgumentError
from mlflow_triton.repository.layout import artifact_directory
from mlflow_triton.runtime.protocol import MlflowProtocol
from tests.support.tiny_models import shared_text_generation_pipeline

PROMPT = "hello world"
GREEDY = {"max_new_tokens": 8, "do_sample": False}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("text-stream") / "generate"
    mlflow_triton.transformers.save_model(
        shared_text_generation_pipeline(), path, input_example=PROMPT, model_config=GREEDY, stream=True
    )
    return path


@pytest.fixture(scope="module")
def streaming(saved):
    """The streaming model's package, loaded as the runtime loads it."""
    return mlflow.pyfunc.load_model(str(artifact_directory(saved / "model_repository" / "generate_stream")))


def test_the_stream_model_serves_the_package_inside_a_streaming_pyfunc(saved):
    one_shot = artifact_directory(saved / "model_repository" / "generate")
    served = artifact_directory(saved / "model_repository" / "generate_stream")
    flavors = Model.load(str(served / "MLmodel")).flavors
    assert flavors["python_function"]["streamable"] is True
    assert flavors["python_function"]["loader_module"] == "mlflow.pyfunc.loaders.code_model"
    inner = served / "artifacts" / _text_stream.PIPELINE_ARTIFACT
    assert (inner / "MLmodel").read_text() == (one_shot / "MLmodel").read_text()
    assert Model.load(str(served / "MLmodel")).signature == Model.load(str(one_shot / "MLmodel")).signature
    assert (served / "requirements.txt").read_text() == (one_shot / "requirements.txt").read_text()
    record = json.loads((saved / "model_repository" / "generate" / "validation.json").read_text())
    assert record["stream"]["model"] == "generate_stream" and record["stream"]["chunks"] > 1
    assert record["stream"]["how"] == _text_stream.HOW


def test_the_stream_yields_the_generated_text_that_ends_predicts_answer(saved, streaming):
    native = mlflow.pyfunc.load_model(str(saved))
    [answer] = native.predict(PROMPT)

    pieces = list(streaming.predict_stream(PROMPT))

    assert len(pieces) > 1 and all(isinstance(piece, str) and piece for piece in pieces), pieces
    assert answer.startswith(PROMPT) and answer == PROMPT + "".join(pieces)  # the pipeline answers the full text
    assert streaming.predict(PROMPT) == [answer]


def test_the_runtime_streams_the_shipped_body_as_json_strings(saved, streaming):
    body = (saved / "model_repository" / "generate_stream" / "stream_request.json").read_text()

    chunks = list(MlflowProtocol(streaming).stream(json.loads(body)["request"].encode()))

    assert [json.loads(chunk) for chunk in chunks] == list(streaming.predict_stream(PROMPT))


def test_a_consumer_that_stops_reading_stops_generation_and_its_thread(streaming):
    stream = streaming.predict_stream(PROMPT)
    first = next(stream)

    stream.close()

    assert first and not [t for t in threading.enumerate() if t.name == _text_stream_model._THREAD]
    assert list(streaming.predict_stream(PROMPT))[0] == first  # the instance streams the next request whole


def test_an_error_while_generating_ends_the_stream_with_it(saved, monkeypatch, streaming):
    wrapper = streaming.unwrap_python_model()._wrapper

    def failing(data, params=None):
        params["streamer"].put(__import__("torch").tensor([[0]]))  # the prompt, skipped by the streamer
        raise MlflowException("the pipeline refused", error_code="INVALID_PARAMETER_VALUE")

    monkeypatch.setattr(wrapper, "predict", failing)
    with pytest.raises(MlflowException, match="the pipeline refused"):
        list(streaming.predict_stream(PROMPT))


def test_a_stream_that_would_not_end_predicts_answer_ends_in_an_error(monkeypatch, streaming):
    wrapper = streaming.unwrap_python_model()._wrapper
    real = wrapper.predict
    monkeypatch.setattr(wrapper, "predict", lambda data, params=None: [real(data, params)[0] + " changed"])

    with pytest.raises(MlflowException, match="is not predict's answer"):
        list(streaming.predict_stream(PROMPT))


def test_an_answer_that_only_ends_with_the_stream_is_an_error(monkeypatch, streaming):
    """predict's answer must be the pieces, or the prompt and then the pieces; another head is a difference."""
    wrapper = streaming.unwrap_python_model()._wrapper
    real = wrapper.predict
    monkeypatch.setattr(wrapper, "predict", lambda data, params=None: [real(data, params)[0].replace(PROMPT, "x ", 1)])

    with pytest.raises(MlflowException, match="nor the prompt followed by it"):
        list(streaming.predict_stream(PROMPT))


def test_add_repository_streams_a_pipeline_logged_with_plain_mlflow(tracking_store, tmp_path):
    with mlflow.start_run():
        info = mlflow.transformers.log_model(
            shared_text_generation_pipeline(),
            name="plain",
            input_example=PROMPT,
            model_config=GREEDY,
            pip_requirements=["mlflow", "torch", "transformers"],
        )

    added = mlflow_triton.add_repository(info.model_uri, stream=True)

    local = mlflow.artifacts.download_artifacts(added.model_uri, dst_path=str(tmp_path))
    served = mlflow.pyfunc.load_model(str(artifact_directory(f"{local}/model_repository/plain_stream")))
    [answer] = mlflow.pyfunc.load_model(info.model_uri).predict(PROMPT)
    assert answer == PROMPT + "".join(served.predict_stream(PROMPT))


def test_an_llm_inference_task_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(InvalidArgumentError, match="cannot stream: its pyfunc has no predict_stream") as refused:
        mlflow_triton.transformers.save_model(
            shared_text_generation_pipeline(),
            tmp_path / "m",
            input_example={"prompt": PROMPT},
            task="llm/v1/completions",
            stream=True,
        )
    assert "a Transformers 'text-generation' pipeline saved without an llm/v1 task" in str(refused.value)
    assert list(tmp_path.iterdir()) == []
