"""Proofs predict without MLflow tracing: logging's prediction of the example, ``check``'s oracle and its server.

MLflow traces every prediction of a model built on its tracing (a ``ResponsesAgent``, a ``ChatAgent``, a
``PythonModel`` whose ``predict`` is decorated with ``@mlflow.trace``) into the tracking store's active experiment
(``Default``), with the trace files under that experiment's artifact location (``./mlruns`` of a sqlite store).
A proof is not a prediction the user asked for: ``add-repository``, the wrappers' ``log_model`` / ``save_model`` and
``check`` predict inside :func:`untraced`, and ``check`` starts Triton with :data:`UNTRACED_SERVER_ENVIRONMENT`, so
the model there writes no trace either.
"""

import contextlib
from collections.abc import Iterator

__all__ = ["UNTRACED_SERVER_ENVIRONMENT", "untraced"]

#: The server process's variables that keep tracing off in the model it loads: MLflow's tracer provider is
#: OpenTelemetry's, which hands out no-op tracers when the SDK is disabled.
UNTRACED_SERVER_ENVIRONMENT = {"OTEL_SDK_DISABLED": "true"}


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """MLflow tracing off in this process while the block runs, and back on after it where it was on before."""
    import mlflow.tracing
    from mlflow.tracing.provider import is_tracing_enabled

    was_on = is_tracing_enabled()
    if was_on:
        mlflow.tracing.disable()
    try:
        yield
    finally:
        if was_on:
            mlflow.tracing.enable()
