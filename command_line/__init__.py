"""``mlflow_triton.command_line``: the frame every ``mlflow-triton`` command runs in, standard library only.

* :mod:`~mlflow_triton.command_line.runner` -- :func:`run_command`: a command's body run with SIGTERM as Ctrl-C,
  its outcome turned into the exit status (0, 1, 130, 143) and an error into one line on stderr.
* :mod:`~mlflow_triton.command_line.signals` -- SIGTERM raised as an exception, so cleanup runs.
* :mod:`~mlflow_triton.command_line.progress` -- status lines for long work.
* :mod:`~mlflow_triton.command_line.urls` -- messages that never show the credentials a URL carries.
* :mod:`~mlflow_triton.command_line.download_bars` -- MLflow's download bars on terminals only.
* :mod:`~mlflow_triton.command_line.arguments` -- arguments several commands take (``--tracking-uri``).

Boundary: it imports the standard library and the contract's error base class only, so the parser, ``--help``
and every part (``local``, ``export``, ``deploy``, the logging side's ``add-repository``) can use it; it never
imports them.
"""

from .arguments import add_tracking_uri
from .progress import Progress, ProgressLike, as_progress
from .runner import os_error_text, run_command
from .signals import StopRequested, sigterm_raises, stop_on_sigterm
from .urls import unreachable, without_user_info

__all__ = [
    "Progress",
    "ProgressLike",
    "StopRequested",
    "add_tracking_uri",
    "as_progress",
    "os_error_text",
    "run_command",
    "sigterm_raises",
    "stop_on_sigterm",
    "unreachable",
    "without_user_info",
]
