"""Log a custom-architecture PyTorch network with its Triton repository.

The architecture lives in its own package, ``examples/pytorch_architecture/``,
which travels with the model through ``code_paths``; the network is built with
seeded weights (no training) and put in eval mode. Run directly to log into a
local sqlite MLflow store::

    python examples/pytorch_example.py
"""

import importlib
import pathlib
import sys

import mlflow
import numpy as np
import torch

from mlflow_triton import pytorch as triton_pytorch

ARCHITECTURE_DIR = pathlib.Path(__file__).resolve().parent / "pytorch_architecture"
INIT_KWARGS = {"input_size": 4, "hidden_size": 16, "classes": 3, "dropout": 0.1}


def import_architecture():
    """Import the architecture package by its own top-level name, as a user's script would.

    The pickle records the class as ``pytorch_architecture.network.TabularNet``;
    that is the name ``code_paths`` makes importable when the model is reloaded.
    """
    if str(ARCHITECTURE_DIR.parent) not in sys.path:
        sys.path.insert(0, str(ARCHITECTURE_DIR.parent))
    return importlib.import_module(ARCHITECTURE_DIR.name)


def build_network(seed=0):
    """The network with seeded (untrained) weights, in eval mode."""
    architecture = import_architecture()
    torch.manual_seed(seed)
    return architecture.TabularNet(**INIT_KWARGS).eval()


def example_input(rows=3):
    return np.linspace(-1.0, 1.0, rows * INIT_KWARGS["input_size"], dtype=np.float32).reshape(rows, -1)


def log_example(tracking_uri, registered_model_name="demo-network", device="cpu"):
    """Build the demo network and log it; returns ModelInfo."""
    mlflow.set_tracking_uri(tracking_uri)
    return triton_pytorch.log_model(
        build_network(),
        input_example=example_input(),
        name="network",
        registered_model_name=registered_model_name,
        device=device,
        code_paths=[str(ARCHITECTURE_DIR)],
        architecture_init_kwargs=INIT_KWARGS,
    )


if __name__ == "__main__":
    info = log_example("sqlite:///mlruns.db")
    print(info.model_uri)
