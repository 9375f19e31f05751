"""`run_command`: the frame of every `mlflow-triton` command -- exit statuses, one-line errors, SIGTERM as Ctrl-C."""

import os
import signal

import pytest

from mlflow_triton.command_line import StopRequested, run_command, sigterm_raises, stop_behind
from mlflow_triton.command_line._download_bars import DOWNLOAD_BAR_VARIABLE
from mlflow_triton.shared_contract import MlflowTritonError


def raising(error):
    def body(say):
        raise error

    return body


def test_run_command_returns_the_bodys_status_and_passes_it_the_given_progress_when_the_body_returns():
    lines = []

    status = run_command("demo", lambda say: say.say("working") or 5, progress=lines.append)

    assert (status, lines) == (5, ["working"])


def test_run_command_prints_one_line_without_credentials_and_returns_1_when_the_body_raises_a_user_error(capsys):
    status = run_command("demo", raising(MlflowTritonError("http://KEY:SECRET@host:5000 refused")))

    assert (status, capsys.readouterr().err) == (1, "mlflow-triton demo: error: http://host:5000 refused\n")


def test_run_command_says_the_reason_and_the_file_when_the_body_raises_an_os_error(capsys):
    status = run_command("demo", raising(IsADirectoryError(21, "Is a directory", "/tmp/report.json")))

    assert (status, capsys.readouterr().err) == (1, "mlflow-triton demo: error: Is a directory: /tmp/report.json\n")


def test_run_command_uses_the_commands_words_when_explain_gives_some(capsys):
    status = run_command("demo", raising(ValueError("bad")), explain=lambda error: f"{error}; nothing was written")

    assert (status, capsys.readouterr().err) == (1, "mlflow-triton demo: error: bad; nothing was written\n")


def test_run_command_lets_an_error_through_when_nobody_explains_it():
    with pytest.raises(ZeroDivisionError):
        run_command("demo", raising(ZeroDivisionError("a bug")), explain=lambda error: None)


def test_run_command_returns_130_saying_what_holds_when_ctrl_c_interrupts(capsys):
    status = run_command("demo", raising(KeyboardInterrupt()), stopped="nothing was written")

    assert (status, capsys.readouterr().err) == (130, "mlflow-triton demo: interrupted (Ctrl-C); nothing was written\n")


def imported_while(stop):
    """The ImportError an importer raises when ``stop`` lands in a module it imports (numpy's extension modules)."""
    try:
        try:
            raise stop
        except KeyboardInterrupt as caught:
            raise ImportError("numpy._core.umath failed to import") from caught
    except ImportError as error:
        return error


def test_run_command_returns_130_when_ctrl_c_lands_in_an_import_that_then_fails_with_an_import_error(capsys):
    status = run_command("demo", raising(imported_while(KeyboardInterrupt())), stopped="nothing was written")

    assert (status, capsys.readouterr().err) == (130, "mlflow-triton demo: interrupted (Ctrl-C); nothing was written\n")


def test_stop_behind_finds_the_stop_an_import_error_came_from_and_nothing_else():
    sigterm = StopRequested("SIGTERM")

    assert stop_behind(imported_while(sigterm)) is sigterm
    assert stop_behind(ImportError("No module named 'skops'")) is None
    assert stop_behind(ZeroDivisionError("a bug")) is None


def test_run_command_says_an_error_raised_while_a_ctrl_c_was_handled_as_that_error(capsys):
    def body(say):
        try:
            raise KeyboardInterrupt
        finally:
            raise MlflowTritonError("the clean-up failed")

    status = run_command("demo", body)

    assert (status, capsys.readouterr().err) == (1, "mlflow-triton demo: error: the clean-up failed\n")


def test_run_command_unwinds_returns_143_and_restores_the_handler_when_sigterm_arrives(capsys):
    previous = signal.getsignal(signal.SIGTERM)
    unwound = []

    def body(say):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            unwound.append(True)
        return 0

    status = run_command("demo", body)

    assert (status, unwound, capsys.readouterr().err) == (143, [True], "mlflow-triton demo: stopped by SIGTERM\n")
    assert signal.getsignal(signal.SIGTERM) is previous


def test_run_command_turns_download_bars_off_in_the_body_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.delenv(DOWNLOAD_BAR_VARIABLE, raising=False)
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    seen = []

    run_command("demo", lambda say: seen.append(os.environ.get(DOWNLOAD_BAR_VARIABLE)) or 0)

    assert seen == ["false"] and DOWNLOAD_BAR_VARIABLE not in os.environ


def test_sigterm_raises_leaves_a_handler_in_place_when_unless_handled_and_one_is_set():
    def own(signum, frame):
        raise StopRequested("own")

    previous = signal.signal(signal.SIGTERM, own)
    try:
        with sigterm_raises(lambda signum: SystemExit(128 + signum), unless_handled=True):
            assert signal.getsignal(signal.SIGTERM) is own
        with pytest.raises(SystemExit) as exited, sigterm_raises(lambda signum: SystemExit(128 + signum)):
            os.kill(os.getpid(), signal.SIGTERM)
        assert (exited.value.code, signal.getsignal(signal.SIGTERM)) == (143, own)
    finally:
        signal.signal(signal.SIGTERM, previous)
