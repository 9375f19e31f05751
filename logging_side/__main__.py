"""``python -m mlflow_triton``: the ``mlflow-triton`` command line (see ``cli.py``)."""

import sys

from mlflow_triton._console import console

sys.exit(console())
