"""A sample of the corpus sent the same request by both servers: MLflow's scoring server and the real Triton.

``mlflow-triton check`` compares Triton's answer with what MLflow computes for the shipped request; for the cases
of :data:`COMPARED` that PASSed, the runner also does what a user moving from ``mlflow models serve`` does: the
model's own ``serving_input_example.json`` (the body MLflow documents for ``/invocations``) goes to MLflow's scoring
server app (what ``mlflow models serve`` runs, over its HTTP interface in process) and, unchanged, in the
``request`` tensor to the logged repository on a real Triton 2.51 (its serving environment from the shared cache).
Both answers are compared as MLflow's JSON bodies (``mlflow_triton.local._compare``: floats within tolerance,
fields MLflow fills per call by what they must be). Only a repository of MLflow's serving protocol takes that body
as it is: for a typed-tensor repository, check's comparison is the proof, and the row says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The cases whose answers are compared (one or two per interface and per kind of refusal issue 41 listed).
COMPARED = (
    "sklearn-gaussian-nb-predict-proba-add",
    "onnx-sklearn-zipmap",
    "onnx-torch-signature-xy-example",
    "pmdarima-return-conf-int",
    "prophet-serve-and-score",
    "pyfunc-chat-model-params-example-add",
    "pyfunc-chat-agent-custom-inputs-add",
    "pyfunc-responses-agent-custom-inputs-add",
    "pyfunc-type-hint-list-dict-str-int-add",
    "pyfunc-type-hint-pydantic-messages-add",
    "pyfunc-params-basic-serving-add",
)
JSON = "application/json"


def compare_sample(outcomes: Sequence[Any], work_dir: Path) -> None:
    """Fill ``both_servers`` on the outcomes of :data:`COMPARED` that PASSed (``{"equal": bool, "how": str}``)."""
    for outcome in outcomes:
        if outcome.case_id in COMPARED and outcome.verdict == "PASS":
            try:
                outcome.both_servers = both_answers(outcome.model_uri, work_dir / outcome.case_id)
            except Exception as error:  # the comparison could not be made: say why, the row stays as check said
                outcome.both_servers = {"equal": None, "how": f"not compared: {type(error).__name__}: {error}"}
            print(f"  both servers, {outcome.case_id}: {outcome.both_servers['how'][:200]}", flush=True)


def both_answers(model_uri: str, work_dir: Path) -> dict[str, Any]:
    """Send the model's serving example to MLflow's scoring server and to its repository on Triton; compare."""
    import mlflow

    from mlflow_triton.local._compare import speaks_mlflow_protocol

    local = Path(mlflow.artifacts.download_artifacts(model_uri, dst_path=str(work_dir)))
    body = (local / "serving_input_example.json").read_text(encoding="utf-8")
    [directory] = [path for path in (local / "model_repository").iterdir() if (path / "config.pbtxt").is_file()]
    if not speaks_mlflow_protocol(directory):
        return {"equal": None, "how": "typed tensors: not the same body (check compared Triton with MLflow)"}
    want_status, want = mlflow_answer(str(local), body)
    _, again = mlflow_answer(str(local), body)  # a value MLflow draws anew per call is judged by type, as check does
    got_status, got = triton_answer(local / "model_repository", directory.name, body)
    if (want_status, got_status) != (200, 200):
        return {"equal": False, "how": f"MLflow HTTP {want_status}, Triton HTTP {got_status}: {got[:200]}"}
    result = same_body(want, got, again)
    return {"equal": result["equal"], "how": ("same answer" if result["equal"] else result["how"])}


def mlflow_answer(model_path: str, body: str) -> tuple[int, str]:
    """MLflow's scoring server app (``mlflow models serve``), over HTTP in process: (status, body text)."""
    import mlflow
    from fastapi.testclient import TestClient
    from mlflow.pyfunc import scoring_server

    from tests.support.environment import preserved_environment

    with preserved_environment(("_MLFLOW_IS_IN_SERVING_ENVIRONMENT",)):  # init sets it for the serving process
        app = scoring_server.init(mlflow.pyfunc.load_model(model_path))
        response = TestClient(app).post("/invocations", content=body, headers={"Content-Type": JSON})
    return response.status_code, response.text


def triton_answer(repository: Path, name: str, body: str) -> tuple[int, str]:
    """The real Triton's answer to the same body in the ``request`` tensor: (HTTP status, response text or error)."""
    from mlflow_triton.local import TritonInstallation, TritonServer
    from mlflow_triton.local.serving_env import ensure_serving_env
    from tests.support.v2_http import post_infer

    installation = TritonInstallation.bundled(progress=None)
    env = ensure_serving_env(  # as check builds it: found in the shared cache
        repository / name / "requirements.txt",
        installation.serving_constraints,
        progress=None,
        python=installation.python_executable,
    )
    inputs = [
        {"name": "request", "datatype": "BYTES", "shape": [1], "data": [body]},
        {"name": "content_type", "datatype": "BYTES", "shape": [1], "data": [JSON]},
    ]
    with TritonServer(repository, [name], installation=installation, serving_env=env) as server:
        status, answer = post_infer(server, name, inputs)
    if status != 200:
        return status, str(answer.get("error", json.dumps(answer)))
    return status, answer["outputs"][0]["data"][0]


def same_body(want: str, got: str, again: str | None = None) -> dict[str, Any]:
    """``compare`` of two MLflow JSON bodies (the rule check applies to an MLflow-protocol ``response``); ``again``:
    MLflow's second answer to the same body, whose values that differ from ``want`` are judged by type."""
    import numpy as np

    from mlflow_triton.local._compare import MLFLOW_BODY, compare

    [result] = compare(
        {"response": np.array([body.encode() for body in (want, again) if body is not None], dtype=object)},
        {"response": np.array([got.encode()], dtype=object)},
        volatile={"response": MLFLOW_BODY},
    ).values()
    return dict(result)
