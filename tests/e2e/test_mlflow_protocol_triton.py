"""MLflow's serving protocol on the real Triton 2.51: the same bodies, the same answers as MLflow's scoring server.

Two models logged with plain MLflow in a sqlite store: a scikit-learn classifier answering ``predict_proba`` under the
signature MLflow inferred from ``predict`` (the typed mapping refuses it: "Cannot split a ndarray of shape [3, 3]"),
added with the automatic choice, which must pick MLflow's protocol by itself, and a ``ChatModel`` (models from code;
the typed mapping refuses it: "record 0 has no key `id`"), added with ``protocol="mlflow"``. Both are served by one
Triton, and every request body goes to Triton (in the ``request`` tensor) and to MLflow's own scoring
server app (``mlflow.pyfunc.scoring_server.init``, the app ``mlflow models serve`` runs) over HTTP: the answers must
be the same (the chat answer's ``created`` by check's rule for per-call fields), MLflow's 400s must be Triton 400s
with MLflow's message. ``mlflow-triton check`` PASSes both. A third model, ``Temper`` (models from code), fails as
its request asks; added twice, speaking MLflow's protocol and typed tensors, it holds both doors to docs/errors.md's
table of what a failing request answers (:data:`ERROR_TABLE`), beside MLflow's own server.
"""

import contextlib
import json
import shutil
import textwrap
from operator import itemgetter

import mlflow
import mlflow.pyfunc
import mlflow.sklearn
import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient
from sklearn.linear_model import LogisticRegression

import mlflow_triton
from mlflow_triton.local import TritonInstallation, TritonServer
from mlflow_triton.local._compare import MLFLOW_BODY, compare, speaks_mlflow_protocol
from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines
from tests.e2e.test_cli import UserStore
from tests.e2e.test_cli import mlflow_triton as console
from tests.support import docs_pages
from tests.support.mlflow_server import using_tracking
from tests.support.v2_http import post_infer

pytestmark = pytest.mark.triton

X = pd.DataFrame({"length": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "width": [0.5, 0.1, 0.9, 0.3, 0.7, 0.2]})
Y = np.array([0, 0, 2, 1, 1, 2])
CHAT_MODEL_CODE = textwrap.dedent(
    """\
    import mlflow
    from mlflow.pyfunc import ChatModel
    from mlflow.types.llm import ChatChoice, ChatCompletionResponse, ChatMessage


    class Shout(ChatModel):
        def predict(self, context, messages, params):
            text = " ".join(message.content for message in messages).upper()
            return ChatCompletionResponse(
                model="shout", choices=[ChatChoice(index=0, message=ChatMessage(role="assistant", content=text))]
            )


    mlflow.models.set_model(Shout())
    """
)
TEMPER_CODE = textwrap.dedent(
    """\
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.protos import databricks_pb2


    class Temper(mlflow.pyfunc.PythonModel):
        \"\"\"Answers ``2 * x``, or fails as its ``mode`` column asks: each way a predict can fail.\"\"\"

        def predict(self, context, model_input, params=None):
            mode = model_input["mode"].iloc[0]
            if mode == "raise":
                raise RuntimeError("secret-in-message")
            if mode in ("INVALID_PARAMETER_VALUE", "INTERNAL_ERROR"):
                raise MlflowException(f"refused-{mode}", error_code=getattr(databricks_pb2, mode))
            return model_input[["x"]] * 2


    mlflow.models.set_model(Temper())
    """
)
SKLEARN_BODIES = [
    ("application/json", json.dumps({"dataframe_split": X.head(3).to_dict(orient="split", index=False)})),
    ("application/json", json.dumps({"dataframe_records": X.tail(2).to_dict(orient="records")})),
    ("application/json", json.dumps({"inputs": {"length": [2.5, 6.0], "width": [0.4, 0.9]}})),
    ("application/json", json.dumps({"instances": [{"length": 1.5, "width": 0.8}]})),
    ("text/csv", "length,width\n4.0,0.3\n1.0,0.5\n"),
]


def documented_bodies():
    """The chat and Responses request bodies of docs/repository.md (the block that defines them), by name."""
    [block] = [b for b in docs_pages.blocks(docs_pages.DOCS / "repository.md", "python") if "chat_request" in b.code]
    namespace = {}
    exec(block.code, namespace)
    return namespace


CHAT_BODIES = [
    ("application/json", documented_bodies()["chat_request"]),
    ("application/json", json.dumps({"messages": [{"role": "user", "content": "hello"}]})),
    (
        "application/json",
        json.dumps(
            {
                "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
                "temperature": 0.5,
                "max_tokens": 9,
            }
        ),
    ),
]


@pytest.fixture(scope="module")
def added(tmp_path_factory):
    """``{name: (source model, the new model's URI, Triton model directory)}`` in a fresh sqlite store."""
    root = tmp_path_factory.mktemp("protocol")
    (root / "chat_model.py").write_text(CHAT_MODEL_CODE)
    (root / "temper.py").write_text(TEMPER_CODE)
    tracking_uri = f"sqlite:///{root / 'mlflow.db'}"
    with using_tracking(tracking_uri):
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("protocol", (root / "artifacts").as_uri()))
        with mlflow.start_run():
            classifier = mlflow.sklearn.log_model(
                LogisticRegression(max_iter=500).fit(X, Y),
                name="iris",
                input_example=X.head(2),
                pyfunc_predict_fn="predict_proba",  # its answers are not what the inferred signature says
                registered_model_name="iris",
            )
            chat = mlflow.pyfunc.log_model(
                name="shout", python_model=str(root / "chat_model.py"), registered_model_name="shout"
            )
            temper = mlflow.pyfunc.log_model(
                name="temper",
                python_model=str(root / "temper.py"),
                input_example=pd.DataFrame({"mode": ["ok"], "x": [1.5]}),
                registered_model_name="temper",
            )
        typed = mlflow_triton.add_repository("models:/temper/1", protocol="tensors", triton_model_name="temper_typed")
        downloads = root / "downloads" / "temper_typed"
        mlflow.artifacts.download_artifacts(f"models:/temper/{typed.registered_model_version}", dst_path=str(downloads))
        models = {
            "iris": (classifier, *add_registered(root, "iris")),  # protocol="auto", the default
            "shout": (chat, *add_registered(root, "shout", protocol="mlflow")),  # asked for
            "temper": (temper, *add_registered(root, "temper", protocol="mlflow")),
            "temper_typed": (temper, typed.model_uri, downloads / "model_repository" / "temper_typed"),
        }
    return tracking_uri, root, models


def add_registered(root, name, **options):
    """``add_repository("models:/<name>/1", **options)``: (the new version's URI, its Triton model directory,
    downloaded under ``root/downloads/<name>``), which must speak MLflow's serving protocol."""
    info = mlflow_triton.add_repository(f"models:/{name}/1", **options)
    return fetched(root, name, f"models:/{name}/{info.registered_model_version}")


def fetched(root, name, model_uri):
    """``(model_uri, its Triton model directory)``, the model downloaded under ``root/downloads/<name>``; the
    directory must speak MLflow's serving protocol (chosen by ``protocol="auto"`` where none was asked for)."""
    downloads = root / "downloads" / name
    mlflow.artifacts.download_artifacts(model_uri, dst_path=str(downloads))
    [directory] = (downloads / "model_repository").iterdir()
    validation = json.loads((directory / "validation.json").read_text())
    assert speaks_mlflow_protocol(directory), (model_uri, validation.get("protocol_chosen_because"))
    return model_uri, directory


@contextlib.contextmanager
def serving(root, directories):
    """One Triton serving copies of ``directories``, from one environment that holds all their requirements."""
    repository = root / "served"
    repository.mkdir()
    lines = []
    for directory in directories:
        shutil.copytree(directory, repository / directory.name)
        lines += requirement_lines((directory / "requirements.txt").read_text())
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_env_for_requirements(
        sorted(set(lines)), installation.serving_constraints, progress=None, reuse_superset=True, source="the models"
    )
    names = [directory.name for directory in directories]
    with TritonServer(repository, names, installation=installation, serving_env=env) as server:
        yield server


@pytest.fixture(scope="module")
def triton(added):
    """One Triton serving both repositories."""
    _, root, models = added
    with serving(root, [directory for _, _, directory in models.values()]) as server:
        yield server


def mlflow_answer(model_uri, content_type, body):
    """What MLflow's scoring server app answers over HTTP: (status, body text)."""
    from mlflow.pyfunc import scoring_server

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("_MLFLOW_IS_IN_SERVING_ENVIRONMENT", "false")  # init sets it; the test process keeps its own
        app = scoring_server.init(mlflow.pyfunc.load_model(model_uri))
        response = TestClient(app).post("/invocations", content=body, headers={"Content-Type": content_type})
    return response.status_code, response.text


def triton_answer(server, name, content_type, body):
    """Triton's answer to the same body: (HTTP status, the response tensor's text or Triton's error)."""
    inputs = [
        {"name": "request", "datatype": "BYTES", "shape": [1], "data": [body]},
        {"name": "content_type", "datatype": "BYTES", "shape": [1], "data": [content_type]},
    ]
    status, answer = post_infer(server, name, inputs)
    if status != 200:
        return status, answer["error"]
    [output] = answer["outputs"]
    return status, output["data"][0]


def same_body(want, got):
    [result] = compare(
        {"response": np.array([want.encode()], dtype=object)},
        {"response": np.array([got.encode()], dtype=object)},
        volatile={"response": MLFLOW_BODY},
    ).values()
    return result


def answered_alike(server, model_uri, name, content_type, body):
    """Send ``body`` to MLflow's scoring server for ``model_uri`` and to Triton's model ``name``; assert that Triton
    answers as MLflow does: a 200 with the same body (per-call fields by check's rule), a 4xx as a 400 carrying
    MLflow's error code and message (a 415's text), a 5xx as a 500 naming MLflow's status and code. Returns MLflow's
    ``(status, body)`` and Triton's body."""
    want_status, want = mlflow_answer(model_uri, content_type, body)
    got_status, got = triton_answer(server, name, content_type, body)
    if want_status == 200:
        assert got_status == 200, (body, want, got)
        result = same_body(want, got)
        assert result["equal"], (body, result["how"], want, got)
    else:
        try:  # MLflow's error JSON, or the plain text of its 415
            code, message = itemgetter("error_code", "message")(json.loads(want))
            heading = f"MLflow answered HTTP {want_status} ({code})"
        except ValueError:
            heading, message = f"MLflow answered HTTP {want_status}", want
        assert got_status == (400 if want_status < 500 else 500), (body, want, got)
        assert got.startswith(heading), (heading, got)
        if want_status < 500:  # a 5xx's message, which may quote the request, goes to Triton's log only
            assert message[:200] in got, (want, got)
    return (want_status, want), got


@pytest.mark.parametrize(("name", "bodies"), [("iris", SKLEARN_BODIES), ("shout", CHAT_BODIES)])
def test_triton_answers_every_body_as_mlflows_scoring_server_does(added, triton, name, bodies):
    tracking_uri, _, models = added
    source, _, directory = models[name]
    with using_tracking(tracking_uri):
        for content_type, body in bodies:
            (status, want), got = answered_alike(triton, source.model_uri, directory.name, content_type, body)
            assert status == 200, want
            if name == "iris":  # nothing per call: byte for byte what MLflow's server sends
                assert got == want


@pytest.mark.parametrize(
    ("content_type", "body", "mlflow_status"),
    [
        ("application/json", json.dumps({"dataframe_split": {"columns": ["length"], "data": [[1.0]]}}), 400),
        ("text/plain", "length width", 415),  # MLflow's text answer to a content type it does not read
    ],
    ids=["width-missing", "text-plain"],
)
def test_mlflows_4xx_is_a_triton_400_with_mlflows_message(added, triton, content_type, body, mlflow_status):
    tracking_uri, _, models = added
    source, _, directory = models["iris"]
    with using_tracking(tracking_uri):
        (status, _), _ = answered_alike(triton, source.model_uri, directory.name, content_type, body)
    assert status == mlflow_status


#: docs/errors.md's table, a row per case: (case, the row sent, MLflow's scoring server, the protocol door, the typed
#: door), MLflow's server and the protocol door as (HTTP status, MLflow's error code, message shown), the typed door as
#: (HTTP status, message shown).
ERROR_TABLE = [
    ("raise", {"mode": "raise", "x": 1.0}, (400, "BAD_REQUEST", True), (400, "BAD_REQUEST", True), (500, False)),
    (
        "INVALID_PARAMETER_VALUE",
        {"mode": "INVALID_PARAMETER_VALUE", "x": 1.0},
        (400, "INVALID_PARAMETER_VALUE", True),
        (400, "INVALID_PARAMETER_VALUE", True),
        (400, True),
    ),
    (
        "INTERNAL_ERROR",
        {"mode": "INTERNAL_ERROR", "x": 1.0},
        (500, "INTERNAL_ERROR", True),
        (500, "INTERNAL_ERROR", False),
        (500, False),
    ),
    (
        "missing column",
        {"mode": "ok"},
        (400, "INVALID_PARAMETER_VALUE", True),
        (400, "INVALID_PARAMETER_VALUE", True),
        (400, True),
    ),
]


@pytest.mark.parametrize(
    ("row", "scoring", "protocol", "typed"), [r[1:] for r in ERROR_TABLE], ids=[r[0] for r in ERROR_TABLE]
)
def test_a_failing_request_is_answered_by_each_door_as_the_error_table_says(
    added, triton, row, scoring, protocol, typed
):
    tracking_uri, _, models = added
    source, _, directory = models["temper"]
    body = json.dumps({"dataframe_records": [row]})
    with using_tracking(tracking_uri):
        (status, want), got = answered_alike(triton, source.model_uri, directory.name, "application/json", body)
    message = json.loads(want)["message"]
    assert (status, json.loads(want)["error_code"]) == scoring[:2], want
    assert got.startswith(f"MLflow answered HTTP {protocol[0]} ({protocol[1]})"), got
    assert (message[:100] in got, "only in Triton's log" in got) == (protocol[2], not protocol[2]), got

    inputs = json.loads((models["temper_typed"][2] / "request.json").read_text())["inputs"]
    inputs = [{**entry, "data": [row[entry["name"]]]} for entry in inputs if entry["name"] in row]
    typed_status, answer = post_infer(triton, "temper_typed", inputs)
    error = answer["error"]
    shown = "secret-in-message" in error or "refused-" in error or "'x'" in error
    assert (typed_status, shown, "only in Triton's log" in error) == (typed[0], typed[1], not typed[1]), error


def check(root, tracking_uri, *arguments):
    """``mlflow-triton check`` as a user runs it: (exit status, its PASS/FAIL lines, all it printed)."""
    checked = console("check", *arguments, store=UserStore(tracking_uri, root))
    verdicts = [line for line in checked.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    return checked.returncode, verdicts, checked.stdout[-4000:] + checked.stderr[-4000:]


def test_check_passes_both_models_and_a_csv_body_given_with_input(added):
    tracking_uri, root, models = added
    (root / "rows.csv").write_text(SKLEARN_BODIES[-1][1])

    status, [iris], said = check(root, tracking_uri, models["iris"][1], "--input", str(root / "rows.csv"))
    chat_status, [shout], chat_said = check(root, tracking_uri, models["shout"][1])

    oracle = "like MLflow's scoring server (the same body, its answer parsed)"
    assert (status, chat_status) == (0, 0), said + chat_said
    assert iris.startswith("PASS") and f"request {oracle} (response)" in iris, iris
    assert f"and the input file rows.csv (json) {oracle}" in iris, iris
    assert shout.startswith("PASS") and f"request {oracle} (response)" in shout, shout


def test_the_documented_client_asks_triton_what_mlflow_would_answer(added, triton):
    tracking_uri, _, models = added
    source, _, directory = models["iris"]
    [block] = [b for b in docs_pages.blocks(docs_pages.DOCS / "repository.md", "python") if "def invocations" in b.code]
    namespace = {}
    exec(block.code, namespace)
    content_type, body = SKLEARN_BODIES[-1]  # CSV, with its content type

    got = namespace["invocations"](body, content_type, url=f"127.0.0.1:{triton.http_port}", model=directory.name)

    with using_tracking(tracking_uri):
        assert (200, got) == mlflow_answer(source.model_uri, content_type, body)
