"""``mlflow_triton.command_line``: the frame every ``mlflow-triton`` command runs in, standard library only.

The package offers what a command is made of (``__all__``); :mod:`~mlflow_triton.command_line.children` (child
processes that do not outlive this one) is the module other parts import by name. Within the part:

* ``_runner`` -- :func:`run_command`: a command's body run with SIGTERM as Ctrl-C, its outcome turned into the
  exit status (0, 1, 130, 143) and an error into one line on stderr.
* ``_signals`` -- SIGTERM raised as an exception, so cleanup runs; stops ignored once the program's command ended.
* ``_progress`` -- status lines for long work.
* ``_urls`` -- messages that never show the credentials a URL carries.
* ``_download_bars`` -- MLflow's download bars on terminals only.
* ``_arguments`` -- arguments several commands take (``--tracking-uri``).
* ``_quiet`` -- another library's warnings kept off the terminal while one call runs (``quiet_logger``).

Boundary: it imports the standard library and the contract's error base class only, so the parser, ``--help``
and every part (``local``, ``export``, ``deploy``, the logging side's ``add-repository``) can use it; it never
imports them.
"""

from ._arguments import add_tracking_uri
from ._progress import Progress, ProgressLike, as_progress
from ._quiet import quiet_logger
from ._runner import interrupted_while_starting, os_error_text, run_command, stop_behind
from ._signals import StopRequested, ignore_stops, sigterm_raises, stop_on_sigterm
from ._urls import unreachable, without_user_info

__all__ = [
    "Progress",
    "ProgressLike",
    "StopRequested",
    "add_tracking_uri",
    "as_progress",
    "ignore_stops",
    "interrupted_while_starting",
    "os_error_text",
    "quiet_logger",
    "run_command",
    "sigterm_raises",
    "stop_behind",
    "stop_on_sigterm",
    "unreachable",
    "without_user_info",
]
