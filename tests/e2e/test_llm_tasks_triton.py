"""MLflow's LLM inference tasks ``llm/v1/chat``, ``llm/v1/completions`` and ``llm/v1/embeddings`` on a real Triton.

A tiny chat-templated GPT-2, a tiny GPT-2 without a template and a tiny BERT (tests/support/llm_models.py,
greedy decoding of a few tokens) are logged with ``mlflow_triton.transformers.log_model(task=...)`` and served
on one server. Answers are rebuilt into the records ``pyfunc.predict`` returns (one dict per row, each JSON
column read back) and compared with it field by field: ``id`` and ``created``, which MLflow fills afresh on
every call, must be a UUID and a time close to now; every other field is equal. ``mlflow-triton check``
PASSes the three models.
"""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from mlflow_triton import transformers as mt_transformers
from mlflow_triton.local import TritonInstallation, TritonServer, send_shipped_request
from mlflow_triton.local.serving_env import ensure_env_for_requirements, requirement_lines
from mlflow_triton.repository.config import read_config
from tests.support import llm_models
from tests.support.v2_http import post_infer

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

MODELS = {"chat": llm_models.CHAT, "completions": llm_models.COMPLETIONS, "embeddings": llm_models.EMBEDDINGS}
# The input examples: the canonical request bodies, the embeddings' texts as rows (see docs/logging.md).
EXAMPLES = {
    **llm_models.CANONICAL_INPUTS,
    llm_models.EMBEDDINGS: pd.DataFrame({"input": llm_models.CANONICAL_INPUTS[llm_models.EMBEDDINGS]["input"]}),
}
SECONDS_OF_SLACK = 600


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(server, {name: (model URI, repository directory)}, tracking URI)."""
    root = tmp_path_factory.mktemp("llm")
    tracking_uri = f"sqlite:///{root / 'mlflow.db'}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(tracking_uri)
    experiment = mlflow.create_experiment("llm-tasks", artifact_location=(root / "artifacts").as_uri())
    repository = root / "repository"
    models = {}
    with mlflow.start_run(experiment_id=experiment):
        for name, task in MODELS.items():
            info = mt_transformers.log_model(
                llm_models.PIPELINES[task](),
                name=name,
                task=task,
                input_example=EXAMPLES[task],
                model_config=llm_models.model_config(task),
                pip_requirements=llm_models.pip_requirements(),
                triton_model_name=name,
            )
            package = Path(mlflow.artifacts.download_artifacts(info.model_uri, dst_path=str(root / name)))
            repository.mkdir(exist_ok=True)
            (package / "model_repository" / name).rename(repository / name)
            models[name] = (info.model_uri, repository / name)
    installation = TritonInstallation.bundled(progress=None)
    lines = [line for _, d in models.values() for line in requirement_lines((d / "requirements.txt").read_text())]
    env = ensure_env_for_requirements(lines, installation.serving_constraints, progress=None, reuse_superset=True)
    try:
        with TritonServer(repository, list(models), installation=installation, serving_env=env) as server:
            yield server, models, tracking_uri
    finally:
        mlflow.set_tracking_uri(previous)


def _records(outputs, model_dir):
    """The answer as the records pyfunc.predict returns: one dict per row, the JSON columns (config.pbtxt's
    contract says which) read back, a ``null`` for a key the row leaves out dropped."""
    _, contract = read_config(Path(model_dir) / "config.pbtxt")
    json_columns = {f.tensor: f.name for f in contract.outputs.fields if f.content == "json"}
    columns = {}
    for name, values in outputs.items():
        values = [v.decode("utf-8") if isinstance(v, bytes) else v for v in list(values)]
        columns[name] = [json.loads(v) if name in json_columns else v for v in values]
    rows = len(next(iter(columns.values())))
    return [
        {name: values[row] for name, values in columns.items() if not (name in json_columns and values[row] is None)}
        for row in range(rows)
    ]


def _plain(value):
    """``pyfunc.predict``'s answer as JSON gives it back (numpy arrays as lists, float32 as Python floats)."""
    return json.loads(json.dumps(value, default=lambda item: item.tolist()))


def _assert_answered_like_pyfunc(answer, expected):
    expected = _plain(expected if isinstance(expected, list) else [expected])  # embeddings: one dict per request
    assert len(answer) == len(expected)
    for got, want in zip(answer, expected):
        assert {k: v for k, v in got.items() if k not in ("id", "created")} == {
            k: v for k, v in want.items() if k not in ("id", "created")
        }
        if "id" in want:  # chat and completions: fresh per call, as MLflow's own
            uuid.UUID(got["id"])
            assert got["id"] != want["id"]
            assert abs(int(got["created"]) - time.time()) < SECONDS_OF_SLACK


@pytest.mark.parametrize("name", list(MODELS))
def test_shipped_request_is_answered_like_pyfunc_predict_with_fresh_ids(served, name):
    server, models, _ = served
    model_uri, model_dir = models[name]

    response = send_shipped_request(server.url, model_dir)

    expected = mlflow.pyfunc.load_model(model_uri).predict(EXAMPLES[MODELS[name]])
    _assert_answered_like_pyfunc(_records(response.outputs, model_dir), expected)


def test_a_chat_request_written_from_the_docs_sets_max_tokens_and_leaves_the_rest_out(served):
    server, models, _ = served
    messages = [{"role": "user", "content": "hello world"}]

    # docs/logging.md: one BYTES element of JSON text per conversation; generation fields are optional columns
    status, body = post_infer(
        server,
        "chat",
        [
            {"name": "messages", "datatype": "BYTES", "shape": [1], "data": [json.dumps(messages)]},
            {"name": "max_tokens", "datatype": "INT64", "shape": [1], "data": [2]},
        ],
    )

    assert status == 200, body
    outputs = {o["name"]: o["data"] for o in body["outputs"]}
    expected = mlflow.pyfunc.load_model(models["chat"][0]).predict({"messages": messages, "max_tokens": 2})
    _assert_answered_like_pyfunc(_records(outputs, models["chat"][1]), expected)
    assert expected[0]["usage"]["completion_tokens"] <= 2  # the field reached the model


def test_two_prompts_in_one_request_get_one_answer_each_like_pyfunc_predict(served):
    server, models, _ = served
    prompts = ["hello", "the model is"]

    status, body = post_infer(
        server, "completions", [{"name": "prompt", "datatype": "BYTES", "shape": [2], "data": prompts}]
    )

    assert status == 200, body
    outputs = {o["name"]: o["data"] for o in body["outputs"]}
    expected = mlflow.pyfunc.load_model(models["completions"][0]).predict(pd.DataFrame({"prompt": prompts}))
    _assert_answered_like_pyfunc(_records(outputs, models["completions"][1]), expected)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            [{"name": "messages", "datatype": "BYTES", "shape": [1], "data": ['[{"content": "hi"}]']}],
            "column `messages`, row 0: ",
        ),
        (
            [{"name": "messages", "datatype": "BYTES", "shape": [1], "data": ['[{"role": "user"']}],
            "Tensor `messages`: row 0 is not valid JSON",
        ),
        (
            [
                {
                    "name": "messages",
                    "datatype": "BYTES",
                    "shape": [1],
                    "data": ['[{"role": "user", "content": "hi"}]'],
                },
                {"name": "temperature__missing", "datatype": "BOOL", "shape": [1], "data": [False]},
            ],
            "Tensor `temperature` is missing",
        ),
    ],
)
def test_a_malformed_chat_request_gets_a_400_naming_the_tensor(served, inputs, message):
    server, _, _ = served

    status, body = post_infer(server, "chat", inputs)

    assert status == 400, body
    assert message in body["error"]


def _conversation(*fields):
    return [
        {
            "name": "messages",
            "datatype": "BYTES",
            "shape": [1],
            "data": [json.dumps([{"role": "user", "content": "hi"}])],
        },
        *fields,
    ]


def test_a_chat_request_with_stream_gets_a_400_with_mlflows_reason(served):
    # before (#42): 500 "Prediction failed: MlflowException; its message may quote the request, ..."
    server, _, _ = served

    status, body = post_infer(
        server,
        "chat",
        _conversation(
            {"name": "stream", "datatype": "BOOL", "shape": [1], "data": [True]},
            {"name": "stream__missing", "datatype": "BOOL", "shape": [1], "data": [False]},
        ),
    )

    assert status == 400, body
    assert body["error"].startswith("MLflow refused the request (INVALID_PARAMETER_VALUE): The params provided to the")
    assert "['stream']" in body["error"]  # the keyword the pipeline did not take


def test_a_chat_temperature_sent_without_its_mask_is_answered_like_pyfunc_predict(served):
    # docs/logging.md: "send only those you set"; before (#42): 400 "Tensor `temperature__missing` ... is missing"
    server, models, _ = served

    status, body = post_infer(
        server, "chat", _conversation({"name": "temperature", "datatype": "FP64", "shape": [1], "data": [0.5]})
    )

    assert status == 200, body
    outputs = {o["name"]: o["data"] for o in body["outputs"]}
    expected = mlflow.pyfunc.load_model(models["chat"][0]).predict(
        {"messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}
    )
    _assert_answered_like_pyfunc(_records(outputs, models["chat"][1]), expected)


def test_check_passes_the_three_models_and_names_the_fields_mlflow_fills_per_call(served):
    _, models, tracking_uri = served

    completed = subprocess.run(
        [sys.executable, "-m", "mlflow_triton", "check", *(uri for uri, _ in models.values())],
        env={**os.environ, "MLFLOW_TRACKING_URI": tracking_uri},
        capture_output=True,
        text=True,
        timeout=1200,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr
    passes = [line for line in completed.stdout.splitlines() if line.startswith("PASS ")]
    assert len(passes) == 3, completed.stdout
    per_call = [line for line in passes if "created, id: filled by MLflow on every call, checked as such" in line]
    assert len(per_call) == 2, passes  # chat and completions; embeddings has no such field
