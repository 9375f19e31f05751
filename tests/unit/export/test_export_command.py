"""``export_command`` (``mlflow-triton export-onnx``): what it prints, its exit status, and what it leaves behind."""

import os
import signal
import sys

import pytest

from mlflow_triton.export import _command, _handoff, export_command
from tests.support import tiny_models
from tests.support.export_models import digest, read_handoff, save_sklearn_example

COMMAND = "mlflow-triton export-onnx"


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """The example Pipeline saved with mlflow-triton (predict_proba)."""
    return save_sklearn_example(tmp_path_factory.mktemp("logged") / "classifier")


def test_export_command_prints_the_directory_and_the_parity_summary_when_exported(logged, tmp_path, capsys):
    printed = []

    status = export_command(str(logged), tmp_path / "out", backend="python", max_batch_size=8, out=printed.append)

    directory = tmp_path / "out" / "classifier_onnx"
    handoff = read_handoff(directory)
    assert status == 0
    assert (handoff["backend"], handoff["max_batch_size"], handoff["exported_model"]) == ("python", 8, directory.name)
    assert printed[0] == f"exported: {directory}"
    assert "backend python, max_batch_size 8, dynamic batching; converted with skl2onnx" in printed[1]
    assert printed[2].startswith("  parity with pyfunc.predict: passed on ")
    assert printed[3:] == [
        f"  request: {directory / 'request.json'}",
        f"  hand-off: {directory / 'handoff.json'} (what was compared and what was not verified)",
    ]
    assert f"{COMMAND}: exporting {logged} (backend python, max batch size 8) ..." in capsys.readouterr().err


@pytest.mark.parametrize("zero_row_guard", [True, False])
def test_export_command_writes_one_model_directory_whatever_the_zero_row_guard_says(logged, tmp_path, zero_row_guard):
    """Triton core refuses a 0-row request to the export itself: no front model is written (it was, before)."""
    printed = []

    status = export_command(
        str(logged), tmp_path / "out", backend="python", zero_row_guard=zero_row_guard, out=printed.append
    )

    directory = tmp_path / "out" / "classifier_onnx"
    assert status == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["classifier_onnx"]
    assert printed[0] == f"exported: {directory}"
    assert read_handoff(directory)["backend"] == "python"


def test_export_command_exits_1_with_the_error_on_stderr_when_the_target_exists(logged, tmp_path, capsys):
    (tmp_path / "classifier_onnx").mkdir()
    before = digest(tmp_path)

    status = export_command(str(logged), tmp_path, out=pytest.fail)

    err = capsys.readouterr().err
    assert status == 1
    assert f"{COMMAND}: error: '{tmp_path / 'classifier_onnx'}' already exists; choose another output directory" in err
    assert "Traceback" not in err
    assert digest(tmp_path) == before


@pytest.mark.parametrize("dangling", [False, True], ids=["link-to-folder", "dangling-link"])
def test_export_command_exits_1_writing_nothing_when_out_is_a_symbolic_link(logged, tmp_path, capsys, dangling):
    target = tmp_path / "elsewhere"
    if not dangling:
        target.mkdir()
    link = tmp_path / "out"
    link.symlink_to(target)

    status = export_command(str(logged), link, out=pytest.fail)

    err = capsys.readouterr().err
    assert status == 1
    assert f"{COMMAND}: error: out_dir {link}: a symbolic link (to {target}); give the real path of a new or " in err
    if dangling:
        assert not target.exists()
    else:
        assert list(target.iterdir()) == []  # nothing written where the link points
    assert sorted(p.name for p in tmp_path.iterdir()) == (["out"] if dangling else ["elsewhere", "out"])


def test_export_command_exits_1_naming_the_file_when_out_lies_below_a_file(logged, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("")

    status = export_command(str(logged), tmp_path / "notes.txt" / "out", out=pytest.fail)

    assert status == 1
    err = capsys.readouterr().err
    assert f"out_dir {tmp_path / 'notes.txt' / 'out'}: {tmp_path / 'notes.txt'} is not a folder" in err


def test_export_command_exits_1_naming_the_uri_when_the_registry_has_no_such_model(tmp_path, capsys):
    with tiny_models.sqlite_tracking(tmp_path):
        import mlflow

        tracking_uri = mlflow.get_tracking_uri()
    status = export_command("models:/missing/1", tmp_path / "out", tracking_uri=tracking_uri, out=pytest.fail)

    err = capsys.readouterr().err
    assert status == 1
    assert (
        f"{COMMAND}: error: models:/missing/1: Registered Model with name=missing not found; nothing was written" in err
    )
    assert not (tmp_path / "out").exists()


def test_export_command_exits_1_naming_the_extra_when_onnxruntime_is_missing(logged, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now raises ImportError

    status = export_command(str(logged), tmp_path / "out", out=pytest.fail)

    err = capsys.readouterr().err
    assert status == 1
    assert (
        f"{COMMAND}: error: mlflow_triton.export needs onnxruntime for the parity check: "
        "pip install 'mlflow-triton[onnx]'" in err
    )
    assert not (tmp_path / "out").exists()


def test_export_command_removes_the_staging_directory_and_exits_143_when_sigterm_arrives_mid_write(
    logged, tmp_path, monkeypatch, capsys
):
    real_handoff = _handoff.handoff

    def handoff_then_sigterm(**kwargs):  # called while the staging directory is being filled
        report = real_handoff(**kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return report

    monkeypatch.setattr(_handoff, "handoff", handoff_then_sigterm)
    previous = signal.getsignal(signal.SIGTERM)

    status = export_command(str(logged), tmp_path / "out", out=pytest.fail)

    assert status == 143
    assert f"{COMMAND}: stopped by SIGTERM; nothing was written" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert signal.getsignal(signal.SIGTERM) is previous


def test_export_command_exits_130_when_interrupted(monkeypatch, tmp_path, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_command, "export_onnx", interrupted)

    status = export_command("models:/a/1", tmp_path, out=pytest.fail)

    assert status == 130
    assert f"{COMMAND}: interrupted (Ctrl-C); nothing was written" in capsys.readouterr().err


def test_export_command_lets_an_unexpected_error_through_when_it_is_not_a_user_error(monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(_command, "export_onnx", broken)

    with pytest.raises(ZeroDivisionError, match="a bug"):
        export_command("models:/a/1", tmp_path, out=pytest.fail)
