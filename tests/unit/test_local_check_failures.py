"""`check` gives every model a PASS/FAIL line and writes the report, whatever one model's failure raised."""

import json

import pytest
from mlflow.exceptions import MlflowException
from tritonclient.utils import InferenceServerException

from mlflow_triton import sklearn as triton_sklearn
from mlflow_triton.local import check as check_module
from mlflow_triton.local import check_command
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
    """``answers``: what each send_request call raises, in turn."""
    answers = []

    def send_request(url, model, request):
        raise answers.pop(0)

    monkeypatch.setattr(check_module, "ensure_serving_env", lambda *args, **kwargs: tmp_path / "env")
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
