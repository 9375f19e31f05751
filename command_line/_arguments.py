"""Arguments that several commands take, declared once so that they read and behave the same everywhere."""

from __future__ import annotations

import argparse

__all__ = ["TRACKING_URI_HELP", "add_tracking_uri"]

TRACKING_URI_HELP = (
    "MLflow tracking URI for runs:/ and models:/ URIs (default: $MLFLOW_TRACKING_URI or MLflow's default)"
)


def add_tracking_uri(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--tracking-uri URI`` (``args.tracking_uri``, ``None`` when not given: MLflow's own choice stands)."""
    parser.add_argument("--tracking-uri", metavar="URI", help=TRACKING_URI_HELP)
