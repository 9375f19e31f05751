"""The ``mlflow-triton`` program's entry point (``python -m mlflow_triton`` too).

Ctrl-C while the program starts is the one line and the 130 of every other early stop
(:func:`mlflow_triton.command_line.interrupted_while_starting`), never a traceback. Until the command line and numpy
are imported, a first Ctrl-C is held (:class:`_HeldCtrlC`) and acted on as soon as they are: an import interrupted
half-way can fail with another error than ``KeyboardInterrupt`` (numpy's extension modules print the interrupt's
traceback and raise ``ImportError: numpy._core.umath failed to import`` in every module that needs them). After
that, the command's own modules are imported with Ctrl-C as Python raises it, and the command line says the stop
(:func:`mlflow_triton.command_line.stop_behind`). Python's own start-up and the package's first lines, before this
module runs (a few hundredths of a second), are not covered.
"""

import signal
import sys


class _HeldCtrlC:
    """The SIGINT handler while the program starts: the first Ctrl-C is recorded, a second one raises."""

    def __init__(self) -> None:
        self.arrived = False

    def __call__(self, signum: int, frame: object) -> None:
        if self.arrived:
            raise KeyboardInterrupt
        self.arrived = True


def console() -> int:
    """Run ``mlflow-triton`` (:func:`mlflow_triton.cli.console`) and return its exit status."""
    held = _HeldCtrlC()
    try:
        previous = signal.signal(signal.SIGINT, held)
    except ValueError:  # not the main thread (a test harness): nothing to hold
        previous = None
    try:
        import numpy  # noqa: F401  every command needs it; imported whole here, never interrupted half-way

        from mlflow_triton.cli import console as run  # the command line with it
    except KeyboardInterrupt:
        held.arrived = True
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if held.arrived:
        from mlflow_triton.command_line import ignore_stops, interrupted_while_starting

        status = interrupted_while_starting("")
        ignore_stops()
        return status
    return run()


if __name__ == "__main__":
    sys.exit(console())
