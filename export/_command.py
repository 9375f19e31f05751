"""The command behind ``mlflow-triton export-onnx``, as a plain function tests call too.

``export_command`` runs :func:`export_onnx` and turns its outcome into what a
command line shows: the exported directory and what the parity check compared on
stdout (``out``); an error on stderr as ``mlflow-triton export-onnx: error: ...``
with no traceback. Exit status: 0 exported, 1 an error (nothing written), 130
after Ctrl-C, 143 after SIGTERM (the staging directory is removed either way).
"""

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Literal

from mlflow_triton._download_bars import download_bars_on_terminals_only
from mlflow_triton._urls import unreachable, without_user_info
from mlflow_triton.errors import MlflowTritonError

from ._deps import MissingExtraError
from ._export import export_onnx

COMMAND = "mlflow-triton export-onnx"


class _Terminated(KeyboardInterrupt):
    """SIGTERM arrived: unwinds like Ctrl-C, so the writer removes its staging directory."""


def export_command(
    model_uri: str,
    out_dir: str | os.PathLike[str],
    *,
    max_batch_size: int = 64,
    backend: Literal["onnxruntime", "python"] = "onnxruntime",
    tracking_uri: str | None = None,
    out: Callable[[str], object] = print,
) -> int:
    """``mlflow-triton export-onnx``: export ``model_uri`` under ``out_dir``; returns the exit status."""
    try:
        with _sigterm_as_interrupt(), download_bars_on_terminals_only():
            if tracking_uri is not None:
                import mlflow

                mlflow.set_tracking_uri(tracking_uri)
            _error(f"{COMMAND}: exporting {model_uri} (backend {backend}, max batch size {max_batch_size}) ...")
            directory = export_onnx(model_uri, out_dir, max_batch_size=max_batch_size, backend=backend)
    except _Terminated:
        _error(f"{COMMAND}: stopped by SIGTERM; nothing was written")
        return 143
    except KeyboardInterrupt:
        _error(f"{COMMAND}: interrupted (Ctrl-C); nothing was written")
        return 130
    except (MlflowTritonError, MissingExtraError) as error:
        _error(f"{COMMAND}: error: {error}")
        return 1
    except OSError as error:  # e.g. --out not writable
        _error(f"{COMMAND}: error: {error}; nothing was written")
        return 1
    except Exception as error:
        from mlflow.exceptions import MlflowException

        if not isinstance(error, MlflowException):
            raise
        _error(f"{COMMAND}: error: {model_uri}: {unreachable(error) or error.message}; nothing was written")
        return 1
    for line in summary(directory):
        out(line)
    return 0


def summary(directory: Path) -> list[str]:
    """What the command prints about an exported directory (read back from its ``handoff.json``)."""
    handoff = json.loads((directory / "handoff.json").read_text(encoding="utf-8"))
    converter = handoff["converter"]
    differences = ", ".join(f"{name} {value:.3g}" for name, value in handoff["parity"]["largest_differences"].items())
    compared = sum(entry["requests"] for entry in handoff["parity"]["inputs_compared"])
    lines = [
        f"exported: {directory}",
        f"  backend {handoff['backend']}, max_batch_size {handoff['max_batch_size']}, dynamic batching; "
        f"converted with {converter['name']} {converter.get('version', '')}".rstrip(),
        f"  parity with pyfunc.predict: passed on {compared} requests; largest difference: {differences}",
    ]
    lines += [
        f"  note: {tensor['tensor']} is computed in {tensor['computed_as']} and widened to the logged "
        f"{tensor['data_type']} (see handoff.json)"
        for tensor in handoff["tensors"]["outputs"]
        if tensor.get("computed_as") and tensor["computed_as"] != tensor["data_type"]
    ]
    lines += [f"  request: {directory / name}" for name in handoff["request_files"]]
    lines.append(f"  hand-off: {directory / 'handoff.json'} (what was compared and what was not verified)")
    return lines


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _error(message: str) -> None:
    print(without_user_info(message), file=sys.stderr, flush=True)
