"""A streaming repository's model (decoupled): one response per chunk of ``predict_stream``, through the generated
model.py and the fake ``pb_utils``'s response sender.

The chunks a test expects are written here from what the model yields (``json.dumps`` of each), not computed by the
code under test. The real server: tests/e2e/test_streaming_triton.py.
"""

import json

import mlflow.pyfunc
import numpy as np
import pytest
from google.protobuf import json_format
from mlflow.models import infer_signature

from mlflow_triton._model_py import compose_model_py
from mlflow_triton._protocol import protocol_layout
from mlflow_triton._schema import layout_from_signature
from mlflow_triton.repository.config import build_config, decoupled_config
from tests.support import fake_pb_utils
from tests.unit.runtime.test_runtime_execute import INTERNAL, error_message, initialize_args, triton_log  # noqa: F401

FINAL = fake_pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class Counting(mlflow.pyfunc.PythonModel):
    """Yields ``{"n": i, "word": w * times}`` per word of ``model_input["text"]``; params ``fail_at``: raises before
    that chunk; ``closed``: a file its generator's ``finally`` writes (a cancelled stream must run it)."""

    def predict(self, context, model_input, params=None):
        return [chunk["word"] for chunk in self.predict_stream(context, model_input, params)]

    def predict_stream(self, context, model_input, params=None):
        params = params or {}
        try:
            for n, word in enumerate(model_input["text"].split()):
                if n == params.get("fail_at", -1):
                    raise ValueError(f"refusing {word!r}")
                yield {"n": n, "word": word * int(params.get("times", 1))}
        finally:
            if params.get("closed"):
                with open(params["closed"], "a") as file:
                    file.write("closed\n")


class OneShot(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input


PARAMS = {"times": 1, "fail_at": -1, "closed": ""}
SIGNATURE = infer_signature({"text": "one two"}, ["one", "two"], params=PARAMS)  # MLflow passes params it declares


def served(tmp_path, python_model, decoupled=True):
    """An initialized generated model.py over ``python_model``, with the streaming (decoupled) config."""
    repository = tmp_path / "repository" / "words"
    mlflow.pyfunc.save_model(
        repository / "1" / "artifact", python_model=python_model, pip_requirements=[], signature=SIGNATURE
    )
    (repository / "1" / "model.py").write_text(compose_model_py(), encoding="utf-8")
    config = build_config("words", protocol_layout("python_function"))
    if decoupled:
        config = decoupled_config(config, "words_stream")
    module = fake_pb_utils.load_model_py(repository / "1" / "model.py", name="streaming_model_py")
    model = module.TritonPythonModel()
    model.initialize(initialize_args(json_format.MessageToDict(config, preserving_proto_field_name=True), repository))
    return model


@pytest.fixture(scope="module")
def words(tmp_path_factory):
    return served(tmp_path_factory.mktemp("words"), Counting())


def stream(model, body, content_type=None, cancel_after=None):
    """The request's sender after ``execute`` (which answers nothing itself: a decoupled model sends)."""
    arrays = {"request": np.array([json.dumps(body).encode() if not isinstance(body, str) else body.encode()], object)}
    if content_type is not None:
        arrays["content_type"] = np.array([content_type.encode()], dtype=object)
    request = fake_pb_utils.request_from_arrays(arrays)
    request.sender = fake_pb_utils.ResponseSender(cancel_after)
    assert model.execute([request]) is None
    return request.sender


def chunks(sender):
    return [fake_pb_utils.outputs_of(r)["response"].tolist() for r in sender.responses if not r.has_error()]


def test_each_chunk_is_its_own_response_as_mlflows_json_then_the_final_flag(words):
    sender = stream(words, {"inputs": {"text": "one two three"}})
    want = [[json.dumps({"n": n, "word": w}).encode()] for n, w in enumerate(["one", "two", "three"])]
    assert chunks(sender) == want
    assert [flags for _, flags in sender.sent] == [0, 0, 0, FINAL] and sender.sent[-1][0] is None


def test_params_in_the_body_reach_predict_stream_as_mlflow_passes_them(words):
    sender = stream(words, {"inputs": {"text": "ab cd"}, "params": {"times": 2}})
    assert chunks(sender) == [[b'{"n": 0, "word": "abab"}'], [b'{"n": 1, "word": "cdcd"}']]


def test_an_exception_after_3_chunks_ends_the_stream_with_an_internal_error_after_them(words, triton_log):
    sender = stream(words, {"inputs": {"text": "a b c d e"}, "params": {"fail_at": 3}})
    assert len(chunks(sender)) == 3
    last, flags = sender.sent[-1]
    assert flags == FINAL and len(sender.sent) == 4
    message = error_message(last, INTERNAL)
    assert message.startswith("predict_stream failed after 3 chunk(s): ValueError; its message may quote")
    assert "refusing" not in message and any("refusing 'd'" in text for _, text in triton_log)


def test_mlflows_refusal_of_the_body_ends_the_stream_with_a_client_error_and_no_chunk(words):
    sender = stream(words, '{"inputs": ')
    [(response, flags)] = sender.sent
    assert flags == FINAL
    assert error_message(response).startswith("MLflow answered HTTP 400 (BAD_REQUEST): Invalid input.")


def test_a_body_that_is_not_json_by_its_content_type_is_refused_naming_the_tensor(words):
    [(response, _)] = stream(words, "text\nabc\n", content_type="text/csv").sent
    assert error_message(response) == (
        "Tensor content_type is 'text/csv': a stream takes a JSON body ('application/json')"
    )


def test_a_client_that_cancels_stops_the_generator_and_gets_the_final_flag(words, tmp_path):
    closed = tmp_path / "closed.txt"
    sender = stream(words, {"inputs": {"text": "a b c d e f"}, "params": {"closed": str(closed)}}, cancel_after=2)
    assert len(chunks(sender)) == 2 and sender.finished
    assert closed.read_text() == "closed\n"  # the model's finally ran: the generator was closed, not left behind
    assert len(chunks(stream(words, {"inputs": {"text": "next"}}))) == 1  # the instance answers the next request


def test_requests_of_one_execute_each_stream_to_their_own_sender(words):
    senders = [fake_pb_utils.ResponseSender() for _ in range(3)]
    requests = []
    for sender, text in zip(senders, ["x", "y y", "z z z"]):
        body = np.array([json.dumps({"inputs": {"text": text}}).encode()], dtype=object)
        requests.append(fake_pb_utils.InferenceRequest([fake_pb_utils.Tensor("request", body)], sender=sender))
    assert words.execute(requests) is None
    assert [len(chunks(sender)) for sender in senders] == [1, 2, 3]
    assert all(sender.finished for sender in senders)


def test_a_decoupled_config_over_a_typed_contract_does_not_load(tmp_path):
    from mlflow_triton.runtime.triton_model import _decoupled

    assert _decoupled({"model_transaction_policy": {"decoupled": True}}) and not _decoupled({})
    repository = tmp_path / "typed"
    mlflow.pyfunc.save_model(repository / "1" / "artifact", python_model=OneShot(), pip_requirements=[])
    (repository / "1" / "model.py").write_text(compose_model_py(), encoding="utf-8")
    typed = layout_from_signature(infer_signature(np.array([[1.0]]), np.array([[2.0]])), "python_function")
    config = json_format.MessageToDict(
        decoupled_config(build_config("typed", typed), "typed"), preserving_proto_field_name=True
    )
    module = fake_pb_utils.load_model_py(repository / "1" / "model.py", name="typed_decoupled_model_py")
    with pytest.raises(
        module.ModelLoadError, match=r"decoupled .* protocol is 'tensors': only protocol 'mlflow' streams"
    ):
        module.TritonPythonModel().initialize(initialize_args(config, repository))
