"""Errors of ``mlflow-triton pack``; all derive from :class:`~mlflow_triton.deploy.DeployError`.

Each is raised before anything is written to ``--out`` and says what is wrong and what to do.
"""

from __future__ import annotations

from .errors import DeployError, OutputPathError

__all__ = [
    "PackError",
    "PackOutputError",
    "PackRequirementsError",
    "PackTargetError",
    "PackToolMissingError",
]


class PackError(DeployError):
    """Root of the errors of ``mlflow-triton pack``."""


class PackOutputError(PackError, OutputPathError):
    """``--out`` cannot receive the packed repository (it exists and is not empty, it is a file or a symbolic
    link, it lies inside a model it packs)."""


class PackTargetError(PackError, ValueError):
    """The target cannot be packed for here: unknown name, a ``--python`` that contradicts it, no interpreter."""


class PackRequirementsError(PackError):
    """A model's requirements cannot install on the target: a pin without a release for its Python (pip's own
    words are quoted), or a wheel that needs a newer glibc than the target has."""


class PackToolMissingError(PackError, ImportError):
    """The packer (``venv-pack2``, the ``deploy`` extra) is not installed."""
