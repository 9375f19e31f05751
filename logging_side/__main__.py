"""``python -m mlflow_triton``: the ``mlflow-triton`` command line (see ``cli.py``)."""

import sys

from mlflow_triton.cli import console

sys.exit(console())
