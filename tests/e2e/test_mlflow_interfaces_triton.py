"""MLflow 3's interfaces and predictions unlike their signature, through MLflow's serving protocol on the real Triton.

Logged with plain MLflow and registered in a sqlite store, as a user of ``mlflow models serve`` has them: a
``ResponsesAgent`` and a ``ChatAgent`` (models from code, answering fresh UUID ids and, for the agent of the Responses
API, the time of the call), a type-hinted ``PythonModel`` taking ``list[dict[str, int]]``, and an skl2onnx classifier
with its ZipMap (a dict of probabilities per row, which no typed tensor carries). The ``ChatModel`` and
``mlflow.sklearn.log_model(..., pyfunc_predict_fn="predict_proba")`` cases are ``test_mlflow_protocol_triton.py``'s.
Each is added with ``add_repository`` (the ``ChatAgent`` with ``mlflow-triton add-repository``) without naming a
protocol: the automatic choice must pick MLflow's serving protocol for each (``test_mlflow_protocol_triton.fetched``
checks it). All are served by one Triton, and every request body (the chat and agent requests of docs/repository.md
among them) goes to Triton and to MLflow's own scoring server app: the answers must be alike
(``test_mlflow_protocol_triton.answered_alike``). ``mlflow-triton check`` PASSes them all in one call.
"""

import json
import re
import textwrap

import mlflow
import mlflow.onnx
import mlflow.pyfunc
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from tests.e2e.test_cli import UserStore
from tests.e2e.test_cli import mlflow_triton as console
from tests.e2e.test_mlflow_protocol_triton import (
    add_registered,
    answered_alike,
    check,
    documented_bodies,
    fetched,
    serving,
)
from tests.support.mlflow_server import using_tracking

pytestmark = pytest.mark.triton

RESPONSES_AGENT_CODE = textwrap.dedent(
    """\
    import time
    import uuid

    import mlflow
    from mlflow.pyfunc import ResponsesAgent
    from mlflow.types.responses import ResponsesAgentRequest, ResponsesAgentResponse


    class Echo(ResponsesAgent):
        def predict(self, request: ResponsesAgentRequest) -> ResponsesAgentResponse:
            text = " ".join(str(item.content) for item in request.input).upper()
            item = self.create_text_output_item(text=text, id=str(uuid.uuid4()))
            return ResponsesAgentResponse(output=[item], created_at=time.time(), custom_outputs=request.custom_inputs)


    mlflow.models.set_model(Echo())
    """
)
CHAT_AGENT_CODE = textwrap.dedent(
    """\
    import uuid

    import mlflow
    from mlflow.pyfunc import ChatAgent
    from mlflow.types.agent import ChatAgentMessage, ChatAgentResponse


    class Mirror(ChatAgent):
        def predict(self, messages, context=None, custom_inputs=None):
            text = " ".join(message.content for message in messages)[::-1]
            answer = ChatAgentMessage(role="assistant", content=text, id=str(uuid.uuid4()))
            return ChatAgentResponse(messages=[answer], custom_outputs=custom_inputs)


    mlflow.models.set_model(Mirror())
    """
)
TYPE_HINTED_CODE = textwrap.dedent(
    """\
    import mlflow


    class RowSum(mlflow.pyfunc.PythonModel):
        def predict(self, model_input: list[dict[str, int]]) -> list[int]:
            return [sum(row.values()) for row in model_input]


    mlflow.models.set_model(RowSum())
    """
)
X = np.array([[1.0, 0.5], [2.0, 0.1], [3.0, 0.9], [4.0, 0.3], [5.0, 0.7], [6.0, 0.2]], dtype=np.float32)
Y = np.array([0, 0, 2, 1, 1, 2])
JSON = "application/json"


# name -> [(the status MLflow's scoring server answers, body)]: Triton must answer each alike.
BODIES = {
    "echo_responses": [
        (200, documented_bodies()["responses_request"]),
        (200, json.dumps({"input": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]})),
        (200, json.dumps({"input": [{"role": "user", "content": "c"}], "custom_inputs": {"session": "7"}})),
        (400, json.dumps({"messages": [{"role": "user", "content": "a chat body sent to a Responses agent"}]})),
    ],
    "mirror": [
        (200, documented_bodies()["chat_request"]),
        (200, json.dumps({"messages": [{"role": "user", "content": "ab"}], "custom_inputs": {"k": "v"}})),
        (400, json.dumps({"messages": [{"role": "user"}]})),  # a message without content
    ],
    "row_sum": [
        (200, json.dumps({"inputs": [{"a": 1, "b": 2}, {"c": 7}]})),
        (200, json.dumps({"inputs": [{"x": 3}]})),
        (400, json.dumps({"inputs": [{"a": "three"}]})),  # not an int
    ],
    "zipmap": [
        (200, json.dumps({"inputs": X[:3].tolist()})),
        (200, json.dumps({"instances": X[4:].tolist()})),
        (400, json.dumps({"inputs": [[1.0, 2.0, 3.0]]})),  # three features where the graph takes two
    ],
}


@pytest.fixture(scope="module")
def added(tmp_path_factory):
    """``{name: (source model URI, the new version's URI, Triton model directory)}`` in a fresh sqlite store."""
    from skl2onnx import to_onnx

    root = tmp_path_factory.mktemp("interfaces")
    for file, code in (("responses.py", RESPONSES_AGENT_CODE), ("mirror.py", CHAT_AGENT_CODE)):
        (root / file).write_text(code)
    (root / "row_sum.py").write_text(TYPE_HINTED_CODE)
    tracking_uri = f"sqlite:///{root / 'mlflow.db'}"
    with using_tracking(tracking_uri):
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("interfaces", (root / "artifacts").as_uri()))
        with mlflow.start_run():
            sources = {
                "echo_responses": mlflow.pyfunc.log_model(
                    name="echo_responses",
                    python_model=str(root / "responses.py"),
                    input_example={"input": [{"role": "user", "content": "hello"}]},
                    registered_model_name="echo_responses",
                ),
                "mirror": mlflow.pyfunc.log_model(
                    name="mirror",
                    python_model=str(root / "mirror.py"),
                    input_example={"messages": [{"role": "user", "content": "hello"}]},
                    registered_model_name="mirror",
                ),
                "row_sum": mlflow.pyfunc.log_model(
                    name="row_sum",
                    python_model=str(root / "row_sum.py"),
                    input_example=[{"a": 1, "b": 2}, {"a": 5}],
                    registered_model_name="row_sum",
                ),
                "zipmap": mlflow.onnx.log_model(  # skl2onnx's default ZipMap: {label: probability} per row
                    to_onnx(LogisticRegression(max_iter=500).fit(X, Y), X[:1]),
                    name="zipmap",
                    input_example=X[:2],
                    registered_model_name="zipmap",
                ),
            }
        models = {
            name: (source.model_uri, *add_registered(root, name))  # protocol="auto": MLflow's, chosen by itself
            for name, source in sources.items()
            if name != "mirror"
        }
    # the ChatAgent as a user adds it, from the command line, without --protocol
    added = console("add-repository", "models:/mirror/1", store=UserStore(tracking_uri, root))
    assert added.returncode == 0 and "registered models:/mirror/2" in added.stdout, added.stdout + added.stderr
    with using_tracking(tracking_uri):
        models["mirror"] = (sources["mirror"].model_uri, *fetched(root, "mirror", "models:/mirror/2"))
    return tracking_uri, root, models


@pytest.fixture(scope="module")
def triton(added):
    _, root, models = added
    with serving(root, [directory for _, _, directory in models.values()]) as server:
        yield server


@pytest.mark.parametrize("name", sorted(BODIES))
def test_triton_answers_each_interface_as_mlflows_scoring_server_does(added, triton, name):
    tracking_uri, _, models = added
    source, _, directory = models[name]
    with using_tracking(tracking_uri):
        statuses = [answered_alike(triton, source, directory.name, JSON, body)[0][0] for _, body in BODIES[name]]
    assert statuses == [status for status, _ in BODIES[name]]


def test_per_call_fields_differ_between_calls_and_are_judged_by_what_they_must_be(added, triton):
    """The agents' ids and the Responses agent's ``created_at`` are fresh per call: Triton's differ from MLflow's,
    and ``answered_alike`` still finds the answers alike."""
    tracking_uri, _, models = added
    answers = {}
    with using_tracking(tracking_uri):
        for name, path in (("echo_responses", ("output", 0, "id")), ("mirror", ("messages", 0, "id"))):
            source, _, directory = models[name]
            (_, want), got = answered_alike(triton, source, directory.name, JSON, BODIES[name][0][1])
            answers[name] = [_at(json.loads(text), path) for text in (want, got)]
    assert all(want != got for want, got in answers.values()), answers


def test_check_passes_every_model_in_one_call(added):
    tracking_uri, root, models = added
    uris = [uri for _, uri, _ in models.values()]

    status, verdicts, said = check(root, tracking_uri, *uris)

    assert status == 0, said
    assert [re.match(r"(PASS|FAIL) (\S+):", line).groups() for line in verdicts] == [("PASS", uri) for uri in uris]
    oracle = "like MLflow's scoring server (the same body, its answer parsed)"
    assert all(oracle in line for line in verdicts), verdicts


def _at(value, path):
    for step in path:
        value = value[step]
    return value
