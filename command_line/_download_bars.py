"""MLflow's artifact download bars, for the commands that fetch models.

MLflow draws a progress bar per artifact download. On a terminal it rewrites one line; written to a
log or a pipe, each bar becomes one long line of carriage returns. The commands turn the bars off
there, unless the user set ``MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR`` themselves.
"""

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["DOWNLOAD_BAR_VARIABLE", "download_bars_on_terminals_only"]

DOWNLOAD_BAR_VARIABLE = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


@contextlib.contextmanager
def download_bars_on_terminals_only() -> Iterator[None]:
    if sys.stderr.isatty() or DOWNLOAD_BAR_VARIABLE in os.environ:
        yield
        return
    os.environ[DOWNLOAD_BAR_VARIABLE] = "false"
    try:
        yield
    finally:
        os.environ.pop(DOWNLOAD_BAR_VARIABLE, None)
