"""The commands behind ``mlflow-triton check`` and ``mlflow-triton serve``, as plain functions.

Each takes what the command line parsed (``python``: ``--python X.Y`` or an interpreter path, the
serving environments' interpreter and, for the bundled server, the stub's Python) and returns the
exit status (:func:`~mlflow_triton.command_line.run_command`): 0 success; 1 a FAIL or an
error (printed as ``mlflow-triton <command>: error: ...``); 130 after Ctrl-C and 143 after
SIGTERM during ``check`` (``serve`` returns 0 when stopped that way: stopping is how it ends).
Results go to ``out`` (default ``print``: stdout); status lines to ``progress`` (a
:class:`~mlflow_triton.command_line.Progress` or a callable; default: stderr, rewriting one line
in place on a terminal).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow_triton.command_line import Progress, ProgressLike, run_command

from .errors import InputFileError, LocalTritonError
from .installation import choose_installation

if TYPE_CHECKING:
    from ._server import TritonServer

__all__ = ["check_command", "serve_command", "workspace"]

#: What a temporary work directory holds besides logs and the report: copies of the models.
MODEL_COPIES = ("download", "repository", "requests")


def check_command(
    model_uris: Sequence[str],
    *,
    device: str = "cpu",
    tritonserver: str | os.PathLike[str] | None = None,
    backend_directory: str | os.PathLike[str] | None = None,
    serving_constraints: Iterable[str] | None = None,
    python: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    input_file: str | os.PathLike[str] | None = None,
    tracking_uri: str | None = None,
    out: Callable[[str], object] = print,
    progress: ProgressLike = None,
    repository_addresses: Mapping[str, str] | None = None,
    server_environment: dict[str, str] | None = None,
) -> int:
    """``mlflow-triton check``: one PASS/FAIL line per model, a JSON report; 0 only if all passed.

    ``repository_addresses`` and ``server_environment``: see [check_models][mlflow_triton.local.check_models].
    """
    from .check import check_models, write_report
    from .sources import expand_repositories

    model_uris = expand_repositories(model_uris)

    def run(directory: Path, say: Progress) -> int:
        if input_file is not None and len(model_uris) != 1:
            raise InputFileError(f"--input {input_file} holds one model's input: give exactly one MODEL_URI with it")
        report_path = Path(report) if report is not None else directory / "report.json"
        if report_path.is_dir():
            raise LocalTritonError(f"--report {report_path}: a directory; give the path of the JSON file to write")
        _use_tracking_uri(tracking_uri)
        installation = choose_installation(
            tritonserver, backend_directory, serving_constraints, python=python, progress=say
        )
        say.say(f"using {installation.describe()}")
        reports = check_models(
            model_uris,
            directory,
            installation,
            device=device,
            input_file=input_file,
            progress=say,
            out=out,
            repository_addresses=repository_addresses,
            server_environment=server_environment,
        )
        write_report(reports, report_path)
        out(f"report: {report_path}")
        return 0 if reports and all(r.passed for r in reports) else 1

    return _run("check", work_dir, progress, run)


def serve_command(
    model_uris: Sequence[str],
    *,
    host: str = "127.0.0.1",
    http_port: int = 8000,
    grpc_port: int = 8001,
    metrics_port: int = 8002,
    tritonserver: str | os.PathLike[str] | None = None,
    backend_directory: str | os.PathLike[str] | None = None,
    serving_constraints: Iterable[str] | None = None,
    python: str | os.PathLike[str] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    tracking_uri: str | None = None,
    out: Callable[[str], object] = print,
    progress: ProgressLike = None,
    wait: Callable[[TritonServer], object] | None = None,
    fetch: Callable[..., Any] | None = None,
    repository_addresses: Mapping[str, str] | None = None,
    server_environment: dict[str, str] | None = None,
) -> int:
    """``mlflow-triton serve``: Triton in the foreground with every model loaded, until Ctrl-C or SIGTERM.

    ``fetch``, ``repository_addresses`` and ``server_environment``: see
    [serve_models][mlflow_triton.local.serve_models].
    """
    from ._serve import serve_models

    def run(directory: Path, say: Progress) -> int:
        _use_tracking_uri(tracking_uri)
        installation = choose_installation(
            tritonserver, backend_directory, serving_constraints, python=python, progress=say
        )
        say.say(f"using {installation.describe()}")
        return serve_models(
            model_uris,
            directory,
            installation,
            host=host,
            http_port=http_port,
            grpc_port=grpc_port,
            metrics_port=metrics_port,
            progress=say,
            out=out,
            wait=wait,
            fetch=fetch,
            repository_addresses=repository_addresses,
            server_environment=server_environment,
        )

    return _run("serve", work_dir, progress, run)


def _run(
    command: str, work_dir: str | os.PathLike[str] | None, progress: ProgressLike, body: Callable[[Path, Progress], int]
) -> int:
    def in_workspace(say: Progress) -> int:
        with workspace(work_dir, command) as directory:
            say.say(f"work directory: {directory}")
            return body(directory, say)

    return run_command(
        command,
        in_workspace,
        progress=progress,
        stopped="every process it started is stopped and nothing half-built is left in the cache",
    )


@contextlib.contextmanager
def workspace(work_dir: str | os.PathLike[str] | None, command: str) -> Iterator[Path]:
    """The given work directory (everything in it is kept), or a new temporary one.

    In a temporary one, the model copies (``download/``, ``repository/``, ``requests/``) are
    removed at the end; logs and the report stay for reading.
    """
    if work_dir is not None:
        directory = Path(work_dir).expanduser().resolve()
        directory.mkdir(parents=True, exist_ok=True)
        yield directory
        return
    directory = Path(tempfile.mkdtemp(prefix=f"mlflow-triton-{command}-"))
    try:
        yield directory
    finally:
        for name in MODEL_COPIES:
            for copy in list(directory.glob(f"**/{name}")):
                shutil.rmtree(copy, ignore_errors=True)


def _use_tracking_uri(tracking_uri: str | None) -> None:
    if tracking_uri is not None:
        import mlflow

        mlflow.set_tracking_uri(tracking_uri)
