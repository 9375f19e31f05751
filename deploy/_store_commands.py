"""``mlflow-triton locate`` and ``check|serve --from-store``: the repository read where MLflow stored it.

``locate_command`` prints the address Triton can read (:func:`~mlflow_triton.deploy._store.locate_repository`).
``check_from_store_command`` and ``serve_from_store_command`` run the local part's ``check`` and ``serve``
with Triton started on that address (``tritonserver --model-repository s3://…``) instead of a local copy:
the serving environment is built from the model's ``requirements.txt`` as usual, Triton downloads the
repository into a temporary mount directory (``TRITON_AWS_MOUNT_DIRECTORY``, removed afterwards) and
writes nothing to the store. Credentials come from the caller's environment (the standard AWS variables),
are passed to nothing else and never printed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mlflow_triton.command_line import Progress, run_command, unreachable, without_user_info
from mlflow_triton.repository.layout import CONFIG_FILE, REQUIREMENTS_FILE

from ._store import StoreLocation, locate_repository
from .errors import StoreLocationError

__all__ = ["check_from_store_command", "locate_command", "serve_from_store_command", "server_environment"]

#: Files of a model directory that ``serve --from-store`` fetches: what builds the serving environment and
#: the shipped request listed with a curl command. The model itself is read by Triton from the store.
SERVE_FILES = (CONFIG_FILE, REQUIREMENTS_FILE)
OPTIONAL_SERVE_FILES = ("request.json", "request.bin", "request.headers")


def locate_command(
    model_uri: str,
    *,
    artifacts_destination: str | None = None,
    tracking_uri: str | None = None,
    check_access: bool = True,
    out: Callable[[str], object] = print,
) -> int:
    """``mlflow-triton locate``: print the address (alone on stdout, for ``$(…)``) and, on stderr, the model name
    Triton sees with a ``tritonserver`` command line; 0, or 1 after an error."""

    def locate(say: Progress) -> int:
        _use_tracking_uri(tracking_uri)
        location = locate_repository(model_uri, artifacts_destination=artifacts_destination, check_access=check_access)
        out(location.address)
        loads = " ".join(f"--load-model={name}" for name in location.models)
        behind = ""
        if location.batched_model_name:
            behind = f" (behind it: {location.batched_model_name!r}, load both)"
        elif location.stream_model_name:
            behind = f" (beside it, streaming: {location.stream_model_name!r}, load both)"
        say.say(
            f"Triton model {location.model_name!r}{behind}: tritonserver --model-repository {location.address} "
            f"--model-control-mode=explicit {loads}"
        )
        return 0

    return run_command("locate", locate)


def check_from_store_command(
    model_uris: list[str], *, artifacts_destination: str | None = None, tracking_uri: str | None = None, **check_options
) -> int:
    """``mlflow-triton check --from-store``: ``check`` with Triton reading each repository from the store."""
    from mlflow_triton.local import check_command

    return _from_store("check", check_command, model_uris, artifacts_destination, tracking_uri, check_options)


def serve_from_store_command(
    model_uris: list[str], *, artifacts_destination: str | None = None, tracking_uri: str | None = None, **serve_options
) -> int:
    """``mlflow-triton serve --from-store``: ``serve`` with Triton reading each repository from the store; only
    the files that build the serving environment (and the shipped request) are fetched."""
    from mlflow_triton.local import serve_command

    return _from_store(
        "serve", serve_command, model_uris, artifacts_destination, tracking_uri, serve_options, fetch_serving_files=True
    )


def _from_store(
    command: str,
    local_command: Callable[..., int],
    model_uris: list[str],
    artifacts_destination: str | None,
    tracking_uri: str | None,
    options: dict[str, Any],
    fetch_serving_files: bool = False,
) -> int:
    """Run the local part's ``command`` with Triton started on each repository's address in the store."""

    def run(say: Progress) -> int:
        locations = _locate_all(command, model_uris, artifacts_destination, tracking_uri)
        fetch = {}  # serve: only the serving files come from the store; check reads the whole model with MLflow
        if fetch_serving_files:
            fetch["fetch"] = lambda uri, download_dir: _fetch_serving_files(locations[uri], Path(download_dir))
        with _mount_directory() as mount:
            return local_command(
                model_uris,
                tracking_uri=tracking_uri,
                repository_addresses={uri: location.address for uri, location in locations.items()},
                server_environment=server_environment(mount),
                **options,
                **fetch,
            )

    return run_command(command, run)


def server_environment(mount_directory: str | os.PathLike[str]) -> dict[str, str]:
    """What ``tritonserver`` needs besides the caller's credentials: where it downloads S3 repositories to,
    and a region when none is set (the AWS SDK needs one; S3-compatible servers ignore it)."""
    environment = {"TRITON_AWS_MOUNT_DIRECTORY": str(mount_directory)}
    if not (os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION")):
        environment["AWS_DEFAULT_REGION"] = "us-east-1"
    return environment


def _locate_all(
    command: str, model_uris: list[str], artifacts_destination: str | None, tracking_uri: str | None
) -> dict[str, StoreLocation]:
    """Each model's location in the object store, located before anything is fetched or started."""
    _use_tracking_uri(tracking_uri)
    locations = {}
    for uri in model_uris:
        location = locate_repository(uri, artifacts_destination=artifacts_destination)
        if not location.is_object_store:
            raise StoreLocationError(
                f"{uri}: stored on this machine's disk ({location.address}), not in an object store: run "
                f"mlflow-triton {command} without --from-store (it serves a copy; Triton writes __pycache__ into "
                "a local repository it serves)"
            )
        locations[uri] = location
    return locations


def _fetch_serving_files(location: StoreLocation, download_dir: Path):
    """A local folder named after the model holding only :data:`SERVE_FILES` (and the shipped request, if any),
    as a ``ModelSource``."""

    from mlflow_triton.local import ModelSource

    target = download_dir / location.model_name
    for model in location.models:  # a guarded batched model: the front's config, the batched model's files
        _fetch_model_files(location, download_dir / model, front=model != location.models[-1])
    return ModelSource(uri=location.model_uri, repository=target, pyfunc_uri=None, generated=True)


def _fetch_model_files(location: StoreLocation, target: Path, front: bool) -> None:
    """:data:`SERVE_FILES` (a front: its config only) and the optional ones of one model directory."""
    import mlflow.artifacts

    target.mkdir(parents=True, exist_ok=True)
    model_folder = f"{location.artifact_uri}/{target.name}"
    for name in (CONFIG_FILE,) if front else (*SERVE_FILES, *OPTIONAL_SERVE_FILES):
        try:
            mlflow.artifacts.download_artifacts(artifact_uri=f"{model_folder}/{name}", dst_path=str(target))
        except Exception as error:  # MLflow's and boto3's errors; the request files are optional
            if name in SERVE_FILES:
                text = unreachable(error) or (without_user_info(str(error)).strip() or type(error).__name__)
                raise StoreLocationError(
                    f"{location.model_uri}: cannot fetch {name} from {model_folder}: {text.splitlines()[0]}"
                ) from None


@contextlib.contextmanager
def _mount_directory() -> Iterator[str]:
    """A fresh directory for Triton's downloads from object storage, removed afterwards."""
    path = tempfile.mkdtemp(prefix="mlflow-triton-store-mount-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _use_tracking_uri(tracking_uri: str | None) -> None:
    if tracking_uri is not None:
        import mlflow

        mlflow.set_tracking_uri(tracking_uri)
