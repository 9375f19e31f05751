"""Inference-only architecture code for examples/pytorch_example.py.

Packaged with the model through ``code_paths``: the pickled model refers to
``pytorch_architecture.network.TabularNet``, so this package must travel with
it (it is copied to ``code/pytorch_architecture/`` in the MLflow package).
"""

from .network import TabularNet

__all__ = ["TabularNet"]
