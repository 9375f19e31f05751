"""The command behind ``mlflow-triton export-onnx``, as a plain function tests call too.

``export_command`` runs :func:`export_onnx` in the command frame
(:func:`~mlflow_triton.command_line.run_command`) and turns its outcome into what a
command line shows: the exported directory and what the parity check compared on
stdout (``out``); an error on stderr as ``mlflow-triton export-onnx: error: ...``
with no traceback. Exit status: 0 exported, 1 an error (nothing written), 130
after Ctrl-C, 143 after SIGTERM (the staging directory is removed either way).
"""

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from mlflow_triton.command_line import Progress, os_error_text, run_command, unreachable
from mlflow_triton.repository.guard import files_directory, served_directories
from mlflow_triton.repository.layout import CONFIG_FILE

from ._export import export_onnx

NAME = "export-onnx"
NOTHING_WRITTEN = "nothing was written"


def export_command(
    model_uri: str,
    out_dir: str | os.PathLike[str],
    *,
    max_batch_size: int = 64,
    backend: Literal["onnxruntime", "python"] = "onnxruntime",
    zero_row_guard: bool = True,
    tracking_uri: str | None = None,
    out: Callable[[str], object] = print,
) -> int:
    """``mlflow-triton export-onnx``: export ``model_uri`` under ``out_dir``; returns the exit status."""

    def export(say: Progress) -> int:
        if tracking_uri is not None:
            import mlflow

            mlflow.set_tracking_uri(tracking_uri)
        say.say(f"mlflow-triton {NAME}: exporting {model_uri} (backend {backend}, max batch size {max_batch_size}) ...")
        directory = export_onnx(
            model_uri, out_dir, max_batch_size=max_batch_size, backend=backend, zero_row_guard=zero_row_guard
        )
        for line in summary(directory):
            out(line)
        return 0

    def explain(error: Exception) -> str | None:
        if isinstance(error, OSError):  # e.g. --out not writable
            return f"{os_error_text(error)}; {NOTHING_WRITTEN}"
        from mlflow.exceptions import MlflowException

        if isinstance(error, MlflowException):
            return f"{model_uri}: {unreachable(error) or error.message}; {NOTHING_WRITTEN}"
        return None

    return run_command(NAME, export, stopped=NOTHING_WRITTEN, explain=explain)


def summary(directory: Path) -> list[str]:
    """What the command prints about an exported directory (read back from its ``handoff.json``)."""
    files = files_directory(directory)
    handoff = json.loads((files / "handoff.json").read_text(encoding="utf-8"))
    converter = handoff["converter"]
    differences = ", ".join(f"{name} {value:.3g}" for name, value in handoff["parity"]["largest_differences"].items())
    compared = sum(entry["requests"] for entry in handoff["parity"]["inputs_compared"])
    lines = [
        f"exported: {', '.join(str(d) for d in served_directories(directory))}",
        f"  backend {handoff['backend']}, max_batch_size {handoff['max_batch_size']}, dynamic batching; "
        f"converted with {converter['name']} {converter.get('version', '')}".rstrip(),
        f"  parity with pyfunc.predict: passed on {compared} requests; largest difference: {differences}",
    ]
    lines += [
        f"  note: {tensor['tensor']} is computed in {tensor['computed_as']} and widened to the logged "
        f"{tensor['data_type']} (see handoff.json)"
        for tensor in handoff.get("tensors", {}).get("outputs", [])
        if tensor.get("computed_as") and tensor["computed_as"] != tensor["data_type"]
    ]
    if "task" in handoff and files != directory:  # --backend onnxruntime: a front, the network behind it
        lines.append(
            f"  {handoff['task']}: {directory.name} tokenizes and post-processes (tokenizers + numpy) and sends the "
            f"network to {files.name} (dynamic batching); serve both (the folder holding them is the model repository)"
        )
    elif "task" in handoff:
        lines.append(
            f"  {handoff['task']}: one model: tokenizer, network (onnxruntime, in process) and post-processing"
            + ("; requests joined whatever their lengths" if handoff["max_batch_size"] and _joined(directory) else "")
        )
    lines += [f"  request: {files / name}" for name in handoff["request_files"]]
    lines.append(f"  hand-off: {files / 'handoff.json'} (what was compared and what was not verified)")
    return lines


def _joined(directory: Path) -> bool:
    return "dynamic_batching" in (directory / CONFIG_FILE).read_text(encoding="utf-8")
