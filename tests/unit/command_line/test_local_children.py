"""``die_with_parent``: children get SIGTERM when this process dies, without loading a library after fork."""

import ctypes
import signal
import subprocess
import sys

from mlflow_triton.command_line.children import die_with_parent

READ_PDEATHSIG = (
    "import ctypes; value = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(value)); print(value.value)"
)


def test_die_with_parent_sets_sigterm_without_loading_a_library_when_run_in_the_forked_child(monkeypatch):
    def no_dlopen_after_fork(*args, **kwargs):
        raise RuntimeError("ctypes.CDLL called in the forked child")

    monkeypatch.setattr(ctypes, "CDLL", no_dlopen_after_fork)

    completed = subprocess.run(
        [sys.executable, "-c", READ_PDEATHSIG], preexec_fn=die_with_parent, capture_output=True, text=True, timeout=60
    )

    assert (completed.returncode, completed.stdout.strip()) == (0, str(int(signal.SIGTERM))), completed.stderr
