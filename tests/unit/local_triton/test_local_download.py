"""`check` and `serve` fetch each model into an emptied directory: nothing of an older model is served with it."""

import os
import re

import pytest

from mlflow_triton import sklearn as triton_sklearn
from mlflow_triton.local import check as check_module
from mlflow_triton.local import serve_models
from mlflow_triton.local._download import empty_download_dir
from mlflow_triton.local.errors import ModelSourceError, OraclePredictionError, RepositoryAssemblyError
from mlflow_triton.local.installation import TritonInstallation
from tests.support import ports
from tests.support.fake_triton import fake_triton


@pytest.fixture
def saved_model(fitted_pipeline, example_frame, tmp_path):
    def save(directory):
        path = tmp_path / directory
        triton_sklearn.save_model(fitted_pipeline, path, input_example=example_frame, triton_model_name="clf")
        return path

    return save


@pytest.fixture
def unused_installation(tmp_path):
    """A Triton installation on disk that these tests must never start."""
    return TritonInstallation.custom(*fake_triton(tmp_path))


def stale_files(download):
    return sorted(path.name for path in download.rglob("stale-*"))


def test_validate_model_fetches_into_an_emptied_download_dir_when_the_work_dir_is_reused(
    saved_model, unused_installation, tmp_path, monkeypatch
):
    model, work = saved_model("model"), tmp_path / "work"
    (work / "download" / "old" / "model_repository" / "clf").mkdir(parents=True)
    (work / "download" / "stale-top.json").write_text("{}")
    (work / "download" / "old" / "model_repository" / "clf" / "stale-request.json").write_text("{}")

    def stop_after_the_fetch(source, input_file, work_dir):
        raise OraclePredictionError(f"fetched {source.repository}")

    monkeypatch.setattr(check_module, "_expected_answers", stop_after_the_fetch)

    report = check_module.validate_model(str(model), work, unused_installation, progress=None)

    assert report.reason.startswith(f"fetched {work / 'download'}")
    assert stale_files(work / "download") == []


def test_serve_fetches_each_model_into_an_emptied_download_dir_when_the_work_dir_is_reused(
    saved_model, unused_installation, tmp_path
):
    first, second, work = saved_model("first"), saved_model("second"), tmp_path / "work"
    (work / "download" / "1").mkdir(parents=True)
    (work / "download" / "1" / "stale-request.json").write_text("{}")
    (work / "download" / "2").mkdir(parents=True)
    (work / "download" / "2" / "stale-request.json").write_text("{}")
    free = dict(zip(("http_port", "grpc_port", "metrics_port"), ports.free_ports(3)))

    with pytest.raises(RepositoryAssemblyError, match="both have the Triton model name 'clf'"):
        serve_models([str(first), str(second)], work, unused_installation, progress=None, **free)
    assert stale_files(work / "download") == []


def test_empty_download_dir_refuses_when_the_model_lies_inside_it(tmp_path):
    model = tmp_path / "download" / "1" / "model"
    model.mkdir(parents=True)

    with pytest.raises(
        ModelSourceError,
        match=re.escape(f"{model}: lies inside {tmp_path / 'download'}, which is emptied before each fetch"),
    ):
        empty_download_dir(tmp_path / "download", str(model))
    assert model.is_dir()


def test_download_bars_turn_off_when_stderr_is_not_a_terminal(monkeypatch):
    from mlflow_triton.command_line import _download_bars as bars

    monkeypatch.delenv(bars.DOWNLOAD_BAR_VARIABLE, raising=False)
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)

    with bars.download_bars_on_terminals_only():
        inside = os.environ.get(bars.DOWNLOAD_BAR_VARIABLE)

    assert inside == "false"
    assert bars.DOWNLOAD_BAR_VARIABLE not in os.environ


def test_download_bars_keep_the_users_setting_when_one_is_set(monkeypatch):
    from mlflow_triton.command_line import _download_bars as bars

    monkeypatch.setenv(bars.DOWNLOAD_BAR_VARIABLE, "true")

    with bars.download_bars_on_terminals_only():
        inside = os.environ.get(bars.DOWNLOAD_BAR_VARIABLE)

    assert inside == "true"
