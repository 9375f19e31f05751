"""`check` gives every model a PASS/FAIL line and writes the report, whatever one model's failure raised."""

import importlib.metadata
import json
from pathlib import Path

import mlflow.pyfunc
import numpy as np
import pytest
from mlflow.exceptions import MlflowException
from tritonclient.utils import InferenceServerException

from mlflow_triton import pyfunc as triton_pyfunc
from mlflow_triton import sklearn as triton_sklearn
from mlflow_triton.local import check as check_module
from mlflow_triton.local import check_command
from mlflow_triton.local._compare import expected_outputs
from mlflow_triton.local.send import ShippedResponse
from mlflow_triton.local.serving_env import ENV_RECORD
from tests.support.fake_triton import fake_triton


@pytest.fixture
def saved_model(fitted_pipeline, example_frame, tmp_path):
    def save(directory):
        path = tmp_path / directory
        triton_sklearn.save_model(fitted_pipeline, path, input_example=example_frame, triton_model_name=directory)
        return str(path)

    return save


@pytest.fixture
def triton_options(tmp_path):
    binary, backends = fake_triton(tmp_path)
    return {"tritonserver": binary, "backend_directory": backends}


class FakeServer:
    """Stands in for a started Triton: these tests are about what happens to the answer."""

    url = "http://127.0.0.1:1"
    ready_seconds = 0.0

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def version(self):
        return "2.51.0"

    def log_tail(self, n=40):
        return ""


@pytest.fixture
def served_by_a_fake_server(monkeypatch, tmp_path):
    """``answers``: what each send_request call raises or returns, in turn."""
    answers = []

    def send_request(url, model, request):
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    env = tmp_path / "env"
    env.mkdir()
    # a serving environment that installs what this interpreter does: no NOTE line before the verdict
    installed = [f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()]
    (env / ENV_RECORD).write_text(json.dumps({"installed": installed}))
    monkeypatch.setattr(check_module, "ensure_serving_env", lambda *args, **kwargs: env)
    monkeypatch.setattr(check_module, "env_summary", lambda env: {})
    monkeypatch.setattr(check_module, "TritonServer", FakeServer)
    monkeypatch.setattr(check_module, "send_request", send_request)
    return answers


def run_check(uris, triton_options, tmp_path):
    lines = []
    status = check_command(
        uris,
        work_dir=tmp_path / "work",
        report=tmp_path / "report.json",
        out=lines.append,
        progress=lambda text: None,
        **triton_options,
    )
    return status, [line for line in lines if line.startswith(("PASS", "FAIL"))]


def test_check_fails_each_model_with_the_error_type_and_writes_the_report_when_answers_raise_unexpected_errors(
    saved_model, triton_options, served_by_a_fake_server, tmp_path
):
    first, second = saved_model("first"), saved_model("second")
    served_by_a_fake_server.extend([KeyError("outputs"), InferenceServerException("unexpected output 'x'")])

    status, verdicts = run_check([first, second], triton_options, tmp_path)

    assert status == 1
    assert verdicts == [
        f"FAIL {first}: KeyError: 'outputs'",
        f"FAIL {second}: InferenceServerException: unexpected output 'x'",
    ]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [(entry["model"], entry["passed"]) for entry in report] == [(first, False), (second, False)]


def test_check_fails_the_model_and_goes_on_when_mlflow_cannot_load_its_input_example(
    saved_model, triton_options, served_by_a_fake_server, tmp_path, monkeypatch
):
    broken, fine = saved_model("broken"), saved_model("fine")
    real_loader = check_module.load_input_example

    def load_input_example(model_dir):
        if model_dir.name == "broken":
            raise MlflowException("input example file is corrupt")
        return real_loader(model_dir)

    monkeypatch.setattr(check_module, "load_input_example", load_input_example)
    served_by_a_fake_server.append(KeyError("outputs"))

    status, verdicts = run_check([broken, fine], triton_options, tmp_path)

    assert (status, verdicts) == (
        1,
        [f"FAIL {broken}: MlflowException: input example file is corrupt", f"FAIL {fine}: KeyError: 'outputs'"],
    )
    assert len(json.loads((tmp_path / "report.json").read_text())) == 2


def test_check_stops_with_status_130_when_ctrl_c_arrives_during_a_models_check(
    saved_model, triton_options, served_by_a_fake_server, tmp_path
):
    served_by_a_fake_server.append(KeyboardInterrupt())

    status, verdicts = run_check([saved_model("first"), saved_model("second")], triton_options, tmp_path)

    assert (status, verdicts) == (130, [])


class Dice(mlflow.pyfunc.PythonModel):
    """A fresh random draw per row on every call, as a generation pipeline that samples answers."""

    def predict(self, context, model_input, params=None):
        return np.random.default_rng().random(len(model_input))


def _answer_of(path, change=lambda outputs: outputs):
    """What a server answers for the model saved at ``path``: its own prediction of the example, changed."""
    (repository,) = (Path(path) / "model_repository").iterdir()
    return ShippedResponse(change(expected_outputs(path, repository)), "json")


def test_check_says_the_model_is_not_deterministic_when_pyfunc_answers_its_example_differently_on_a_second_call(
    example_frame, triton_options, served_by_a_fake_server, tmp_path
):
    path = str(tmp_path / "dice")
    triton_pyfunc.save_model(Dice(), path, input_example=example_frame, triton_model_name="dice")
    served_by_a_fake_server.append(_answer_of(path))

    status, [verdict] = run_check([path], triton_options, tmp_path)

    assert status == 1
    assert verdict.startswith(f"FAIL {path}: outputs differ from pyfunc.predict: ")
    assert verdict.endswith(
        "; but pyfunc.predict itself answered the saved example differently on a second call (output_0): the "
        "model is not deterministic (a generation pipeline that samples, a random draw), so no server can answer "
        "like it; make it deterministic to check it (a Transformers pipeline: model_config={'do_sample': False})"
    )


def test_check_blames_only_the_answer_when_a_deterministic_model_is_answered_otherwise(
    saved_model, triton_options, served_by_a_fake_server, tmp_path
):
    path = saved_model("steady")
    served_by_a_fake_server.append(_answer_of(path, lambda outputs: {n: a + 1 for n, a in outputs.items()}))

    status, [verdict] = run_check([path], triton_options, tmp_path)

    assert status == 1
    assert verdict.startswith(f"FAIL {path}: outputs differ from pyfunc.predict: ")
    assert "deterministic" not in verdict
