"""``mlflow-triton add-repository`` stopped by a real SIGINT at each of its stages, in a process of its own.

The child runs the command line (``mlflow_triton.cli:console``, what the console program runs once started) and
sends SIGINT to itself at the stage asked: the moment is exact, the signal real (Python's own handler raises
``KeyboardInterrupt`` where it lands).

* ``starting``: while the command line imports MLflow, before the command's frame;
* ``reading``: the source downloaded, before anything is logged;
* ``logging``: the new LoggedModel created and its artifacts uploaded, not yet registered;
* ``registered``: right after MLflow printed ``Created version 'N' of model …``;
* ``done``: right after the command printed ``prove it: …``, the version complete;
* ``ended``: after the command returned, while the interpreter shuts down (the last atexit callback).

:func:`outcome` is what each must leave: nothing new (the last line says so, exit 130) or one complete, READY
version (the last line names it; 130 when the stop came inside the command, 0 when it came after its last line).
"""

import subprocess
import sys

STAGES = ("starting", "reading", "logging", "registered", "done", "ended")
NOTHING_NEW = {"starting", "reading", "logging", "registered"}

STOPPED_AT = """
import atexit, os, signal, sys, time

stage, argv = sys.argv[1], sys.argv[2:]


def ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)


def then_ctrl_c(owner, name):
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        ctrl_c()
        return result

    setattr(owner, name, wrapped)


class CtrlCAfter:  # the stream; SIGINT once the line holding the marker is written whole (print ends it apart)

    def __init__(self, stream, marker):
        self._stream, self._marker, self._state = stream, marker, "waiting"

    def write(self, text):
        written = self._stream.write(text)
        if self._state == "waiting" and self._marker in text:
            self._state = "seen"
        if self._state == "seen" and text.endswith("\\n"):
            self._state = "sent"
            self._stream.flush()
            ctrl_c()
        return written

    def __getattr__(self, name):
        return getattr(self._stream, name)


class CtrlCOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == "mlflow":
            sys.meta_path.remove(self)
            ctrl_c()
        return None


if stage == "starting":
    sys.meta_path.insert(0, CtrlCOnImport())
elif stage == "reading":
    import mlflow.artifacts
    then_ctrl_c(mlflow.artifacts, "download_artifacts")
elif stage == "logging":
    import mlflow
    then_ctrl_c(mlflow.MlflowClient, "log_model_artifacts")
elif stage == "registered":
    sys.stderr = CtrlCAfter(sys.stderr, "Created version")
elif stage == "done":
    sys.stdout = CtrlCAfter(sys.stdout, "prove it:")
elif stage == "ended":
    atexit.register(lambda: (ctrl_c(), time.sleep(0.5)))

from mlflow_triton.cli import console

sys.argv = ["mlflow-triton", *argv]
sys.exit(console())
"""


def add_repository_stopped_at(stage, argv, *, env, cwd, timeout=600):
    """``mlflow-triton add-repository ARGV`` stopped by SIGINT at ``stage``; the completed process."""
    return subprocess.run(
        [sys.executable, "-c", STOPPED_AT, stage, "add-repository", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_outcome(stage, completed, registered_name, new_version):
    """The exit status and the last line ``stage`` must give; ``new_version``: the version a complete model got."""
    err = completed.stderr.splitlines()
    out = completed.stdout.splitlines()
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    if stage == "starting":
        assert (completed.returncode, err) == (
            130,
            ["mlflow-triton add-repository: interrupted (Ctrl-C) while starting; nothing was done"],
        )
    elif stage in NOTHING_NEW:
        assert completed.returncode == 130, completed.stderr[-3000:]
        assert err[-1] == "mlflow-triton add-repository: interrupted (Ctrl-C); nothing was logged"
    elif stage == "done":
        assert completed.returncode == 130, completed.stderr[-3000:]
        assert err[-1].startswith(
            f"mlflow-triton add-repository: interrupted (Ctrl-C); models:/{registered_name}/{new_version} is complete "
            "and stays: models:/m-"
        ), err[-1]
    else:  # ended: the command's own outcome stands
        assert completed.returncode == 0, completed.stderr[-3000:]
        assert out[-1] == f"prove it: mlflow-triton check models:/{registered_name}/{new_version}"
