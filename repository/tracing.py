"""Proofs predict without MLflow tracing: logging's prediction of the example, ``check``'s oracle and its server.

MLflow traces every prediction of a model built on its tracing (a ``ResponsesAgent``, a ``ChatAgent``, a
``PythonModel`` whose ``predict`` is decorated with ``@mlflow.trace``) into the tracking store's active experiment
(``Default``), with the trace files under that experiment's artifact location (``./mlruns`` of a sqlite store).
A proof is not a prediction the user asked for: ``add-repository``, the wrappers' ``log_model`` / ``save_model`` and
``check`` predict inside :func:`untraced`, and ``check`` starts Triton with :data:`UNTRACED_SERVER_ENVIRONMENT`, so
the model there writes no trace either.

Tracing comes back as it was, and no sooner than it was: where MLflow had not set its tracer provider up yet (no
trace so far in the process, the usual case), :func:`untraced` leaves it not set up, as MLflow's own ``reset`` of it
does. ``mlflow.tracing.enable()`` would set it up at once, which opens the tracking store of the default URI: a
``save_model`` called in a fresh process left ``./mlflow.db`` in the caller's directory. Whether it was set up is
MLflow's private state (``mlflow.tracing.provider.provider.once``, MLflow 3.14 to 3.17); where a release lacks it,
``enable()`` is called as before.
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
    from mlflow.tracing import provider as tracing_provider

    holder = tracing_provider.provider
    was_on = tracing_provider.is_tracing_enabled()
    set_up = getattr(getattr(holder, "once", None), "_done", True)
    if was_on:
        mlflow.tracing.disable()
    try:
        yield
    finally:
        if was_on and not set_up and hasattr(holder, "reset"):
            holder.reset()  # not set up again until the next trace, with the tracking URI of that moment
        elif was_on:
            mlflow.tracing.enable()
