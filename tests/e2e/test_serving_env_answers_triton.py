"""The serving environment answers like the logging one: hostile text, array and object rows on a real Triton 2.51
against ``mlflow models serve`` of the same package in the logging environment (this interpreter).

pandas 3 converts a text column with a missing value differently with and without pyarrow (``["abc", None]``:
``['a', 'n']`` with it, ``['abc', 'nan']`` without); a serving environment without the logging environment's pyarrow
answered the other way, with HTTP 200. One model (a pyfunc that answers its input as MLflow handed it to
``predict``: an ``Array(string)``, a ``string`` and an ``Object`` column), one Triton server built from the generated
``requirements.txt`` as ``mlflow-triton check`` builds it, one ``mlflow models serve --env-manager local``; every
hostile request gets the same body from both (or a 4xx from both), and the repository names the versions pinned.
"""

import json
import math
import urllib.error
import urllib.request

import pandas as pd
import pytest

from benchmarks.peers import MlflowServe
from mlflow_triton import pyfunc
from mlflow_triton.local import TritonInstallation, TritonServer
from mlflow_triton.local.serving_env import ensure_serving_env
from mlflow_triton.repository.serving_pins import ANSWER_DISTRIBUTIONS, PREDICTED_WITH, installed_versions
from tests.support.echo_models import echo_model
from tests.support.v2_http import post_infer

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

NAME = "echo"
EXAMPLE = pd.DataFrame(
    {"tags": [["x", "y"], ["z"]], "name": ["a", "b"], "rec": [{"k": "v", "l": ["p"]}, {"k": "w", "l": ["q", "r"]}]}
)
#: column -> (output tensor, whether its rows travel as JSON text)
COLUMNS = {"tags": ("tags_2", True), "name": ("name_2", False), "rec": ("rec_2", True)}

#: ``label: rows`` (each row ``[tags, name, rec]``): missing values inside arrays and objects, text that reads as a
#: missing value, numbers where text is declared; what a Triton request can carry (a required column has no null).
HOSTILE = {
    "null last in an array": [[["abc", None], "a", {"k": "v", "l": ["p"]}]],
    "null first in an array": [[[None, "abcdef"], "a", {"k": "v", "l": ["p"]}]],
    "array of one null": [[[None], "a", {"k": "v", "l": ["p"]}]],
    "nulls in two rows": [[["abc", None], "a", {"k": "v", "l": ["p"]}], [[None, "de"], "b", {"k": "w", "l": []}]],
    "non-ASCII beside null": [[["é€", None], "a", {"k": "v", "l": ["p"]}]],
    "empty array": [[[], "a", {"k": "v", "l": ["p"]}]],
    "text that reads as missing": [[["", "nan", "None", "NaN"], "nan", {"k": "None", "l": ["NaN", ""]}]],
    "number in an array of text": [[[1, "a"], "a", {"k": "v", "l": ["p"]}]],
    "empty and non-ASCII strings": [[["x"], "", {"k": "", "l": ["é"]}], [["y"], "é€ ☃", {"k": "w", "l": ["q"]}]],
    "null in an object's array": [[["x"], "a", {"k": "v", "l": ["abc", None]}]],
    "null in an object": [[["x"], "a", {"k": None, "l": ["p"]}]],
    "number in an object's text": [[["x"], "a", {"k": 3, "l": ["p"]}]],
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """(Triton server, MLflow scoring server, the package, its model directory)."""
    root = tmp_path_factory.mktemp("serving-env-answers")
    package = root / "package"
    pyfunc.save_model(echo_model(), package, input_example=EXAMPLE, triton_model_name=NAME)
    model_dir = package / "model_repository" / NAME
    installation = TritonInstallation.bundled(progress=None)
    env = ensure_serving_env(model_dir / "requirements.txt", installation.serving_constraints, progress=None)
    with (
        TritonServer(package / "model_repository", NAME, installation=installation, serving_env=env) as triton,
        MlflowServe(package, root / "mlflow-models-serve.log") as mlflow_serve,
    ):
        yield triton, mlflow_serve, package, model_dir


def _mlflow_answer(mlflow_serve, rows):
    body = json.dumps({"dataframe_split": {"columns": list(COLUMNS), "data": rows}}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{mlflow_serve.port}/invocations", data=body, headers={"Content-Type": "application/json"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, json.loads(response.read())["predictions"]
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _triton_answer(triton, rows):
    inputs = []
    for position, (column, (_, as_json)) in enumerate(COLUMNS.items()):
        values = [row[position] for row in rows]
        data = [json.dumps(value) if as_json else value for value in values]
        inputs.append({"name": column, "datatype": "BYTES", "shape": [len(rows)], "data": data})
    status, body = post_infer(triton, NAME, inputs)
    if status != 200:
        return status, body
    outputs = {output["name"]: output["data"] for output in body["outputs"]}
    predictions = [
        {
            column: json.loads(outputs[tensor][row]) if as_json else outputs[tensor][row]
            for column, (tensor, as_json) in COLUMNS.items()
        }
        for row in range(len(rows))
    ]
    return status, predictions


def _canonical(value):
    """JSON text in which NaN equals NaN (both servers write Python's ``NaN``)."""
    return json.dumps(value, sort_keys=True, allow_nan=True, default=lambda v: math.nan)


@pytest.mark.parametrize("label", list(HOSTILE))
def test_triton_answers_like_mlflow_models_serve_when_text_array_and_object_rows_hold_hostile_values(servers, label):
    triton, mlflow_serve, _, _ = servers
    rows = HOSTILE[label]

    mlflow_status, mlflow_body = _mlflow_answer(mlflow_serve, rows)
    triton_status, triton_body = _triton_answer(triton, rows)

    if mlflow_status == 200:
        assert (triton_status, _canonical(triton_body)) == (200, _canonical(mlflow_body))
    else:
        assert 400 <= mlflow_status < 500 and 400 <= triton_status < 500, (mlflow_body, triton_body)


def test_requirements_and_validation_json_name_the_versions_the_example_was_predicted_with_when_logged(servers):
    _, _, _, model_dir = servers
    here = installed_versions(ANSWER_DISTRIBUTIONS)
    lines = (model_dir / "requirements.txt").read_text(encoding="utf-8").splitlines()
    recorded = json.loads((model_dir / "validation.json").read_text(encoding="utf-8"))[PREDICTED_WITH]

    assert {name: recorded[name] for name in ANSWER_DISTRIBUTIONS} == here
    # this environment runs the bundled Triton, so its numpy is a 1.x and is pinned like the others
    assert [f"{name}=={version}" for name, version in here.items() if version] == [
        line for line in lines if line.split("==")[0] in ANSWER_DISTRIBUTIONS
    ]
