"""The zero-row guard's front (``runtime/guard.py``) in-process, with the fake ``triton_python_backend_utils``: it
refuses a request without rows, forwards the others through BLS to the real batched model.py and hands back its
answer, or its error with the code the batched model gave it. The real server:
tests/e2e/test_batching_zero_rows_triton.py.
"""

import json

import numpy as np
import pytest

from mlflow_triton import sklearn
from mlflow_triton.repository.guard import batched_name, front_model_py, served_directories
from mlflow_triton.runtime.forwarding import marked, unmarked
from tests.support import fake_pb_utils


@pytest.fixture(scope="module")
def guarded(tmp_path_factory, fitted_pipeline, training_frame):
    """(front, batched) of the tiny Pipeline saved with ``max_batch_size=4``; the batched one answers BLS calls."""
    path = tmp_path_factory.mktemp("guarded") / "classifier"
    sklearn.save_model(
        fitted_pipeline,
        path,
        input_example=training_frame.iloc[:3],
        serialization_format="cloudpickle",
        max_batch_size=4,
    )
    front_directory, batched_directory = served_directories(path / "model_repository" / "classifier")
    assert batched_directory.name == batched_name("classifier")
    front = fake_pb_utils.initialized_model(front_directory, "guard_front_model_py")
    batched = fake_pb_utils.initialized_model(batched_directory, "guard_batched_model_py")
    fake_pb_utils.MODELS[batched_directory.name] = lambda request: batched.execute([_as_reshaped(request)])[0]
    yield front, batched
    fake_pb_utils.MODELS.clear()


def _as_reshaped(request):
    """The request as Triton hands it to the batched model: its columns' ``reshape { shape: [] }`` applied."""
    return fake_pb_utils.InferenceRequest(
        [fake_pb_utils.Tensor(t.name(), t.as_numpy().reshape(-1)) for t in request.inputs()],
        request.requested_output_names(),
        request.parameters(),
    )


def _request(frame, rows, **overrides):
    arrays = {
        "age": frame["age"].to_numpy()[:rows].reshape(-1, 1),
        "city": np.array([c.encode() for c in frame["city"]][:rows], dtype=object).reshape(-1, 1),
        "visits": frame["visits"].to_numpy()[:rows].reshape(-1, 1),
    }
    arrays.update(overrides)
    return fake_pb_utils.InferenceRequest(
        [fake_pb_utils.Tensor(name, array) for name, array in arrays.items()], requested_output_names={"output_0"}
    )


def test_front_model_py_is_the_generated_front():
    assert "class TritonPythonModel" in front_model_py()
    assert "from .forwarding import" not in front_model_py()


def test_front_refuses_a_request_without_rows_with_invalid_arg_and_forwards_nothing(guarded, training_frame):
    front, _ = guarded
    called = []
    fake_pb_utils.MODELS["spy"] = lambda request: called.append(request)
    target, front.target = front.target, "spy"
    try:
        [response] = front.execute([_request(training_frame, 0)])
    finally:
        front.target = target

    assert response.error().code() == fake_pb_utils.TritonError.INVALID_ARG
    assert response.error().message().startswith("Tensor `age` has 0 rows: send at least one row.")
    assert called == []


def test_front_answers_a_valid_request_as_the_batched_model_alone_answers_it(guarded, training_frame):
    front, batched = guarded

    answers = front.execute([_request(training_frame, 3), _request(training_frame, 1)])

    assert [fake_pb_utils.outputs_of(a)["output_0"].tolist() for a in answers] == [
        fake_pb_utils.outputs_of(batched.execute([_as_reshaped(_request(training_frame, rows))])[0])[
            "output_0"
        ].tolist()
        for rows in (3, 1)
    ]


def test_front_forwards_the_requested_outputs_and_the_parameters(guarded, training_frame):
    front, _ = guarded
    seen = []
    fake_pb_utils.MODELS["spy"] = lambda request: (seen.append(request), fake_pb_utils.InferenceResponse())[1]
    request = _request(training_frame, 2)
    request._parameters = '{"k": 3}'
    target, front.target = front.target, "spy"
    try:
        front.execute([request])
    finally:
        front.target = target

    [forwarded] = seen
    assert forwarded.requested_output_names() == ["output_0"]
    assert json.loads(forwarded.parameters()) == {"k": 3}
    assert [t.name() for t in forwarded.inputs()] == ["age", "city", "visits"]


def test_front_answers_the_batched_models_400_as_a_400_with_its_message(guarded, training_frame):
    front, batched = guarded
    invalid_text = np.array([b"\xff\xfe"], dtype=object).reshape(1, 1)
    request = _request(training_frame, 1, city=invalid_text)

    [response] = front.execute([request])

    marked_message = (
        batched.execute([_as_reshaped(_request(training_frame, 1, city=invalid_text))])[0].error().message()
    )
    assert marked_message.startswith("[INVALID_ARG] ")
    assert response.error().code() == fake_pb_utils.TritonError.INVALID_ARG
    assert response.error().message() == marked_message.removeprefix("[INVALID_ARG] ")
    assert "city" in response.error().message()


@pytest.mark.parametrize(
    ("message", "code", "expected"),
    [
        (marked("Prediction failed: ValueError", "INTERNAL"), 1, ("Prediction failed: ValueError", 1)),
        (marked("Tensor `a`: bad", "INVALID_ARG"), 1, ("Tensor `a`: bad", 3)),
        ("Model m_batched - unavailable", 4, ("Model m_batched - unavailable", 4)),
    ],
)
def test_front_answers_a_forwarded_error_with_the_code_its_mark_names_else_with_its_own(
    guarded, training_frame, message, code, expected
):
    front, _ = guarded
    error = fake_pb_utils.TritonError(message, code)
    fake_pb_utils.MODELS["failing"] = lambda request: fake_pb_utils.InferenceResponse(error=error)
    target, front.target = front.target, "failing"
    try:
        [response] = front.execute([_request(training_frame, 2)])
    finally:
        front.target = target

    assert (response.error().message(), response.error().code()) == expected


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"visits": np.array([[1], [2]])},
            "[request id: <id_unknown>] input 'visits' batch size does not match other inputs for 'classifier'",
        ),
        (
            {name: np.zeros((5, 1)) for name in ("age", "visits")} | {"city": np.array([[b"Oslo"]] * 5, dtype=object)},
            "[request id: <id_unknown>] inference request batch-size must be <= 4 for 'classifier'",
        ),
    ],
)
def test_front_refuses_what_triton_refuses_a_batched_request_with_its_words(
    guarded, training_frame, overrides, message
):
    front, _ = guarded

    [response] = front.execute([_request(training_frame, 3, **overrides)])

    assert (response.error().message(), response.error().code()) == (message, fake_pb_utils.TritonError.INVALID_ARG)


def test_unmarked_leaves_a_message_without_a_mark_as_it_is():
    assert unmarked("[INVALID] x") == (None, "[INVALID] x")
    assert unmarked(marked("x", "INTERNAL")) == ("INTERNAL", "x")


def test_front_refuses_unequal_rows_with_tritons_words_when_one_input_has_none(guarded, training_frame):
    front, _ = guarded

    [response] = front.execute([_request(training_frame, 2, visits=np.zeros((0, 1), dtype=np.int64))])

    assert response.error().message().endswith("input 'visits' batch size does not match other inputs for 'classifier'")
