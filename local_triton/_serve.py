"""``mlflow-triton serve``: one Triton server with several models, in the foreground.

The models' repositories are copied side by side into one model repository, served with one
serving environment that satisfies all their requirements (a cached environment whose packages
already do is reused), and listed with a ready-to-paste ``curl`` command each. The server runs
until Ctrl-C or SIGTERM, or until it exits by itself, and is then stopped with every stub.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from mlflow_triton.command_line import ProgressLike, as_progress
from mlflow_triton.repository.guard import files_directory, served_directories, stream_model
from mlflow_triton.repository.layout import STREAM_REQUEST_FILE

from ._download import empty_download_dir
from ._server import LOOPBACK, TritonServer, check_port_free, is_loopback
from ._stream import stream_commands
from .errors import PortInUseError, RepositoryAssemblyError, ServingEnvError
from .installation import TritonInstallation
from .send import RequestFiles, curl_command, shipped_request
from .serving_env import ensure_env_for_requirements, requirement_lines
from .sources import ModelSource, resolve_model

__all__ = [
    "DEFAULT_PORTS",
    "ServedModel",
    "assemble_repository",
    "check_unique_names",
    "serve_models",
    "shared_requirements",
]

DEFAULT_PORTS = {"http": 8000, "grpc": 8001, "metrics": 8002}


@dataclasses.dataclass(frozen=True)
class ServedModel:
    source: ModelSource
    directory: Path  # the copy inside the served repository

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def loaded(self) -> list[str]:
        """The models Triton loads for it: a guarded batched model's front and the batched model behind it."""
        return [directory.name for directory in served_directories(self.directory)]

    def request(self) -> RequestFiles | None:
        """The shipped request (``None`` for a directory that ships none)."""
        try:
            return shipped_request(files_directory(self.directory))
        except FileNotFoundError:
            return None


def serve_models(
    model_uris: Sequence[str],
    work_dir: str | os.PathLike[str],
    installation: TritonInstallation,
    *,
    host: str = LOOPBACK,
    http_port: int = DEFAULT_PORTS["http"],
    grpc_port: int = DEFAULT_PORTS["grpc"],
    metrics_port: int = DEFAULT_PORTS["metrics"],
    progress: ProgressLike = print,
    out: Callable[[str], object] = print,
    wait: Callable[[TritonServer], object] | None = None,
    startup_timeout: float = 600.0,
    fetch: Callable[..., Any] | None = None,
    repository_addresses: Mapping[str, str] | None = None,
    server_environment: dict[str, str] | None = None,
) -> int:
    """Serve the models until a stop is requested; returns 0 then, 1 if the server exits by itself.

    ``fetch(uri, download_dir)`` returns a model's [ModelSource][] (default [resolve_model][]: the
    whole model). ``repository_addresses`` (``{model URI: address}``): Triton reads those models from that
    model repository address (``s3://…``) instead of a local copy; then the fetched directory needs only
    ``requirements.txt`` and the shipped request. ``server_environment`` adds variables to the server's
    environment.

    ``wait(server)`` blocks while serving (default: until Ctrl-C / SIGTERM or the server's exit).
    Errors before the server is up raise ([ModelSourceError][mlflow_triton.errors.ModelSourceError],
    [RepositoryAssemblyError][], [PortInUseError][], [ServingEnvError][],
    [TritonStartError][mlflow_triton.errors.TritonStartError]) with nothing left running.
    """
    say = as_progress(progress)
    work_dir = Path(work_dir)
    _check_listening(
        host, (("--http-port", http_port), ("--grpc-port", grpc_port), ("--metrics-port", metrics_port)), say
    )
    sources = _fetch_models(model_uris, work_dir, fetch or resolve_model, say)
    lines = shared_requirements(sources)
    if repository_addresses:
        served = [ServedModel(source, source.repository) for source in sources]
        repositories: list[str] | Path = list(dict.fromkeys(repository_addresses[source.uri] for source in sources))
    else:
        served = assemble_repository(sources, work_dir / "repository")
        repositories = work_dir / "repository"
    say.say(f"serving environment for {len(served)} model(s) + {list(installation.serving_constraints)}")
    try:
        env = ensure_env_for_requirements(
            lines,
            installation.serving_constraints,
            progress=say,
            reuse_superset=True,
            python=installation.python_executable,
            source=", ".join(f"{s.uri} ({s.name})" for s in sources),
        )
    except ServingEnvError as error:
        if not error.conflict:
            raise
        raise _conflict_error(sources, error) from None

    log_path = work_dir / "tritonserver.log"
    say.say(f"starting tritonserver with {', '.join(m.name for m in served)} (log: {log_path}) ...")
    with TritonServer(
        repositories,
        [name for m in served for name in m.loaded],
        installation=installation,
        serving_env=env,
        log_path=log_path,
        host=host,
        http_port=http_port,
        grpc_port=grpc_port,
        metrics_port=metrics_port,
        startup_timeout=startup_timeout,
        environment=server_environment,
    ) as server:
        out(_listing(server, served, log_path))
        try:
            status = (wait or _wait_for_stop)(server)
        except KeyboardInterrupt as stop:
            say.say(f"{str(stop) or 'Ctrl-C'} received: stopping tritonserver ...")  # Ctrl-C's own str() is ''
            return_code = 0
        else:
            tail = server.log_tail(30).rstrip()
            say.say(f"tritonserver exited by itself with status {status}; last lines of {log_path}:\n{tail}")
            return_code = 1
    say.say("tritonserver stopped")
    return return_code


def _check_listening(host, ports, say):
    """Warn when ``host`` is not loopback; refuse ports (``(option, port)`` pairs) that repeat or are taken."""
    if not is_loopback(host):
        say.say(
            f"WARNING: listening on {host}, not loopback: anyone who can reach this machine can call these "
            "models. Triton 2.51 is not hardened against untrusted clients (see docs/limits.md)."
        )
    if len({port for _, port in ports}) != len(ports):
        raise PortInUseError(f"HTTP, gRPC and metrics need three different ports, got {[port for _, port in ports]}")
    for option, port in ports:
        check_port_free(host, port, option)


def _fetch_models(model_uris, work_dir, fetch, say):
    """Each model's source, fetched into its own download folder; names must not repeat."""
    sources = []
    for number, uri in enumerate(model_uris, start=1):
        say.say(f"[{uri}] fetching the model's Triton repository ...")
        empty_download_dir(work_dir / "download" / str(number), uri)
        sources.append(fetch(uri, work_dir / "download" / str(number)))
    check_unique_names(sources)
    return sources


def check_unique_names(sources: Iterable[ModelSource]) -> None:
    """Raise naming both URIs when two models have the same Triton name."""
    seen: dict[str, ModelSource] = {}
    for source in sources:
        if source.name in seen:
            first = seen[source.name]
            raise RepositoryAssemblyError(
                f"{first.uri} and {source.uri} both have the Triton model name {source.name!r}; one repository can "
                "hold only one model of a name. Re-log one of them with another name, e.g. "
                f'mlflow_triton.<flavor>.log_model(..., triton_model_name="{source.name}_2"), or serve them with '
                "two mlflow-triton serve commands on other ports"
            )
        seen[source.name] = source


def shared_requirements(sources: Iterable[ModelSource]) -> list[str]:
    """The union of the models' requirement lines; raise when two of them pin a package differently."""
    per_model: dict[ModelSource, list[str]] = {}
    for source in sources:
        if not source.requirements_file.is_file():
            raise RepositoryAssemblyError(
                f"{source.uri}: the Triton directory {source.name!r} ships no requirements.txt, so its serving "
                "environment cannot be built"
            )
        per_model[source] = requirement_lines(source.requirements_file.read_text(encoding="utf-8"))
    _check_pins(per_model)
    return sorted(set().union(*per_model.values()))


def _check_pins(per_model):
    """Exact pins (``==``) that another model's specifier excludes: a conflict, found without pip."""
    seen = {}  # canonical name -> [(source, line, Requirement)]
    for source, lines in per_model.items():
        for line in lines:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is not None:
                continue
            name = canonicalize_name(requirement.name)
            for other_source, other_line, other in seen.get(name, []):
                if other_source is not source and not _compatible(requirement, other):
                    raise RepositoryAssemblyError(
                        _conflict_text(
                            [(other_source, other_line), (source, line)],
                            "they pin different versions of the same package",
                        )
                    )
            seen.setdefault(name, []).append((source, line, requirement))


def _compatible(first, second):
    for pinned, other in ((first, second), (second, first)):
        for specifier in pinned.specifier:
            if (
                specifier.operator in ("==", "===")
                and "*" not in specifier.version
                and not other.specifier.contains(specifier.version, prereleases=True)
            ):
                return False
    return True


def _conflict_error(sources, error):
    pip_text = "\n".join(error.pip_lines)
    involved = []
    for source in sources:
        for line in requirement_lines(source.requirements_file.read_text(encoding="utf-8")):
            try:
                name = Requirement(line).name
            except InvalidRequirement:
                continue
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", pip_text, re.IGNORECASE):
                involved.append((source, line))
    why = "pip cannot install them together under the Triton installation's constraints.\npip said:\n" + "\n".join(
        f"  {line}" for line in error.pip_lines
    )
    return RepositoryAssemblyError(_conflict_text(involved, why))


def _conflict_text(lines, why):
    quoted = "\n".join(f"  {source.uri} ({source.name}) requirements.txt: {line}" for source, line in lines)
    return (
        f"the models' requirements cannot share one serving environment: {why}\n{quoted}\n"
        "Serve them with separate mlflow-triton serve commands (on other ports), or re-log one of them with "
        "requirements that agree (pip_requirements=...)"
    )


def assemble_repository(sources: Iterable[ModelSource], repository: str | os.PathLike[str]) -> list[ServedModel]:
    """Copy each model directory into ``repository`` (fresh); never serve an artifact store in place."""
    repository = Path(repository)
    shutil.rmtree(repository, ignore_errors=True)
    repository.mkdir(parents=True)
    served = []
    for source in sources:
        for directory in source.served:  # a guarded batched model: its front and the batched model behind it
            shutil.copytree(directory, repository / directory.name)
        served.append(ServedModel(source, repository / source.name))
    return served


def _listing(server, served, log_path):
    lines = [
        f"Triton {server.version()} is serving {len(served)} model(s) (ready in {server.ready_seconds:.1f}s; "
        f"log: {log_path})",
        f"  HTTP {server.url}   gRPC {server.grpc_url}   metrics {server.metrics_url}",
    ]
    for model in served:
        lines += ["", f"  {model.name}  ({model.source.uri})"]
        request = model.request()
        if request is None:
            lines.append("    (ships no request file)")
        else:
            lines.append(f"    {curl_command(server.url, model.name, request)}")
        streaming = stream_model(model.directory)
        if streaming is not None:  # its one-shot model's request, streamed: over HTTP, then over gRPC
            lines += ["", f"  {streaming}  (streams {model.name}'s answers chunk by chunk)"]
            request_path = model.directory.with_name(streaming) / STREAM_REQUEST_FILE
            lines += [f"    {line}" for line in stream_commands(server.url, server.grpc_url, streaming, request_path)]
    lines += ["", "Press Ctrl-C (or send SIGTERM) to stop the server."]
    return "\n".join(lines)


def _wait_for_stop(server):
    while True:
        status = server.poll()
        if status is not None:
            return status
        time.sleep(0.5)
