"""Where a logged model's Triton repository sits in MLflow's artifact store, as an address Triton reads.

:func:`locate_repository` turns a model URI (``models:/<name>/<version>``, ``models:/<name>@<alias>``,
``models:/m-<id>``, ``runs:/<run id>/<name>``, a local model directory) into a :class:`StoreLocation`:

* ``address``: what ``tritonserver --model-repository`` reads -- ``s3://host:port/bucket/…/model_repository``
  for an S3-compatible store with a custom endpoint (``MLFLOW_S3_ENDPOINT_URL``), ``s3://bucket/…`` for AWS,
  ``gs://bucket/…``, ``as://account/container/…`` for Azure, or a local path;
* ``storage_uri``: the same folder in the form other tools (KServe's storage initializer) read: ``s3://bucket/…``;
* ``model_name``: the model Triton sees in that repository.

The address is checked against Triton's object-storage path rules (``s3.h``, r24.10: bucket names
``[0-9a-z.-]``, path segments ``[0-9a-zA-Z._-]``); for S3 the repository's ``config.pbtxt`` is read with the
credentials Triton will use (the standard AWS variables). Errors name what to set; no credential is ever
put into a message, an address or a file.

A tracking server that proxies artifacts (``mlflow server --artifacts-destination s3://bucket/prefix``) gives
models ``mlflow-artifacts:/…`` locations, which Triton cannot read: the server's destination is then needed
(``artifacts_destination``, or ``$MLFLOW_TRITON_ARTIFACTS_DESTINATION``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
import urllib.parse
from pathlib import Path

from mlflow_triton.command_line import unreachable, without_user_info
from mlflow_triton.errors import require_extra

from .errors import DeployError, NotATritonModelError, StoreAccessError, StoreLocationError, StorePathError

__all__ = [
    "ARTIFACTS_DESTINATION_VARIABLE",
    "StoreLocation",
    "locate_repository",
    "s3_endpoint_url",
]

ARTIFACTS_DESTINATION_VARIABLE = "MLFLOW_TRITON_ARTIFACTS_DESTINATION"
_BUCKET = re.compile(r"^[0-9a-z.-]+$")
_SEGMENT = re.compile(r"^[0-9a-zA-Z._-]+$")
_ENDPOINT_VARIABLES = ("MLFLOW_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
_AZURE_HOST = re.compile(r"^(?P<account>[^.]+)\.(blob|dfs)\.core\.windows\.net$")


@dataclasses.dataclass(frozen=True)
class StoreLocation:
    """A logged model's Triton repository where MLflow stored it."""

    model_uri: str
    artifact_uri: str  # the repository folder as MLflow reads it (mlflow-artifacts:/… through a proxy)
    address: str  # the model repository, as tritonserver --model-repository reads it
    storage_uri: str  # the same folder as s3://bucket/…, gs://…, or a local path (KServe's storageUri)
    model_name: str  # the model Triton sees in that repository
    scheme: str  # "s3", "gs", "as" or "local"
    batched_model_name: str | None = None  # a guarded batched model: the model behind its front (load both)
    stream_model_name: str | None = None  # a streaming repository: the streaming model beside this one (load both)

    @property
    def models(self) -> tuple[str, ...]:
        """Every model Triton must load for this one (a guarded batched model: its front and the batched one; a
        streaming repository: the one-shot model and the streaming one)."""
        beside = self.batched_model_name or self.stream_model_name
        return (self.model_name, beside) if beside else (self.model_name,)

    @property
    def is_object_store(self) -> bool:
        return self.scheme != "local"


def locate_repository(
    model_uri: str, *, artifacts_destination: str | None = None, check_access: bool = True
) -> StoreLocation:
    """Locate ``model_uri``'s Triton repository in the artifact store and check Triton can read it there.

    Raises [NotATritonModelError][], [StorePathError][], [StoreAccessError][] or
    [StoreLocationError][], each saying what to do.
    """
    artifact_uri = _model_artifact_uri(str(model_uri))
    flavor = _triton_flavor(str(model_uri), artifact_uri)
    relative = str(flavor.get("data", "")).strip("/")
    model_name = str(flavor.get("model_name") or relative.rsplit("/", 1)[-1])
    if "/" not in relative or relative.rsplit("/", 1)[-1] != model_name:
        raise StoreLocationError(
            f"{model_uri}: the triton flavor's data path {relative!r} is not "
            f"<repository>/{model_name}; log the model again with mlflow_triton"
        )
    empty = flavor.get("empty_directories") or []
    store_uri = _store_uri(str(model_uri), artifact_uri, artifacts_destination)
    repository_folder = relative.rsplit("/", 1)[0]
    repository_uri = f"{store_uri.rstrip('/')}/{repository_folder}"
    if empty and not repository_uri.startswith("/"):
        raise StoreLocationError(
            f"{model_uri}: the repository needs empty directories ({', '.join(empty)}), which an object store cannot "
            "hold, so Triton cannot load it from there; serve it with mlflow-triton serve (a local copy) instead"
        )
    location = _address(str(model_uri), f"{artifact_uri.rstrip('/')}/{repository_folder}", repository_uri, model_name)
    if flavor.get("batched_model_name"):
        location = dataclasses.replace(location, batched_model_name=str(flavor["batched_model_name"]))
    if flavor.get("stream_model_name"):
        location = dataclasses.replace(location, stream_model_name=str(flavor["stream_model_name"]))
    if check_access and location.scheme == "s3":
        _check_s3_readable(location)
    return location


def s3_endpoint_url() -> str | None:
    """The S3 endpoint MLflow and Triton are pointed at (``MLFLOW_S3_ENDPOINT_URL`` …), ``None`` for AWS."""
    for name in _ENDPOINT_VARIABLES:
        if os.environ.get(name):
            return os.environ[name].rstrip("/")
    return None


# --- the MLflow model's folder ----------------------------------------------------------------------


def _model_artifact_uri(model_uri: str) -> str:
    from mlflow.store.artifact.models_artifact_repo import ModelsArtifactRepository
    from mlflow.store.artifact.runs_artifact_repo import RunsArtifactRepository

    local = Path(model_uri).expanduser()
    if local.is_dir():
        return str(local.resolve())
    try:
        if ModelsArtifactRepository.is_models_uri(model_uri):
            return ModelsArtifactRepository.get_underlying_uri(model_uri)
        if RunsArtifactRepository.is_runs_uri(model_uri):
            return _run_model_uri(model_uri)
    except DeployError:
        raise
    except Exception as error:  # MLflow raises several kinds for a missing model, version, alias or run
        raise StoreLocationError(
            f"{model_uri}: {unreachable(error) or f'model not found ({_first_line(error)})'}"
        ) from None
    if "://" in model_uri or model_uri.startswith("mlflow-artifacts:"):
        return model_uri
    raise StoreLocationError(
        f"{model_uri}: no such model directory, and not a model URI (models:/<name>/<version>, "
        "models:/<name>@<alias>, models:/m-<id>, runs:/<run id>/<name>)"
    )


def _run_model_uri(model_uri: str) -> str:
    """``runs:/<run id>/<name>``: the LoggedModel of that name logged by the run (MLflow 3), else the run's folder."""
    from mlflow import MlflowClient
    from mlflow.store.artifact.runs_artifact_repo import RunsArtifactRepository

    run_id, name = RunsArtifactRepository.parse_runs_uri(model_uri)
    client = MlflowClient()
    experiment_id = client.get_run(run_id).info.experiment_id
    token = None
    while True:
        page = client.search_logged_models(
            experiment_ids=[experiment_id], filter_string=f"name = '{name}'", page_token=token
        )
        for logged in page:
            if logged.source_run_id == run_id:
                return logged.artifact_location
        token = page.token
        if not token:
            return RunsArtifactRepository.get_underlying_uri(model_uri)


def _triton_flavor(model_uri: str, artifact_uri: str) -> dict:
    """The ``triton`` flavor of the model's MLmodel file, read through MLflow (one small file)."""
    import mlflow.artifacts
    from mlflow.models import Model

    with tempfile.TemporaryDirectory(prefix="mlflow-triton-locate-") as scratch:
        try:
            path = mlflow.artifacts.download_artifacts(
                artifact_uri=f"{artifact_uri.rstrip('/')}/MLmodel", dst_path=scratch
            )
            model = Model.load(path)
        except Exception as error:  # MLflow's and boto3's errors for a missing file, endpoint or credentials
            raise _access_error(model_uri, error, reading=f"{model_uri}'s MLmodel") from None
    flavor = model.flavors.get("triton")
    if not flavor:
        raise NotATritonModelError(
            f"{model_uri} has no triton flavor (flavors: {', '.join(model.flavors) or 'none'}), so it holds no Triton "
            "repository: log the model with mlflow_triton.sklearn|pytorch|transformers.log_model, or package a "
            "Triton model directory with mlflow_triton.triton.log_model"
        )
    return flavor


def _store_uri(model_uri: str, artifact_uri: str, artifacts_destination: str | None) -> str:
    """``artifact_uri`` with ``mlflow-artifacts:`` replaced by the server's artifacts destination."""
    if not artifact_uri.startswith("mlflow-artifacts:"):
        return artifact_uri
    destination = artifacts_destination or os.environ.get(ARTIFACTS_DESTINATION_VARIABLE)
    if not destination:
        raise StoreLocationError(
            f"{model_uri} is stored through the tracking server's artifact proxy ({artifact_uri}), which Triton cannot "
            "read: give the server's --artifacts-destination (for example --artifacts-destination "
            f"s3://my-bucket/mlartifacts, or set {ARTIFACTS_DESTINATION_VARIABLE})"
        )
    path = urllib.parse.urlparse(artifact_uri).path.lstrip("/")
    return f"{destination.rstrip('/')}/{path}"


# --- the address Triton reads ---------------------------------------------------------------------------


def _address(model_uri: str, artifact_uri: str, repository_uri: str, model_name: str) -> StoreLocation:
    parsed = urllib.parse.urlparse(repository_uri)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file"):
        path = parsed.path if scheme == "file" else repository_uri
        return StoreLocation(model_uri, artifact_uri, path, path, model_name, "local")
    if scheme in ("s3", "s3a", "gs") and "@" in parsed.netloc:
        raise StorePathError(
            f"{model_uri}: stored at {without_user_info(repository_uri)} with user info (user:password@) before the "
            "bucket, which Triton's paths cannot carry: give the artifact location (or --artifacts-destination) "
            "without it, and the credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    if scheme in ("s3", "s3a"):
        bucket, key = parsed.netloc, parsed.path.strip("/")
        _check_rules(model_uri, bucket, key, "bucket")
        endpoint = s3_endpoint_url()
        storage_uri = f"s3://{bucket}/{key}"
        address = storage_uri if endpoint is None else f"s3://{_triton_endpoint(model_uri, endpoint)}/{bucket}/{key}"
        return StoreLocation(model_uri, artifact_uri, address, storage_uri, model_name, "s3")
    if scheme == "gs":
        bucket, key = parsed.netloc, parsed.path.strip("/")
        _check_rules(model_uri, bucket, key, "bucket")
        address = f"gs://{bucket}/{key}"
        return StoreLocation(model_uri, artifact_uri, address, address, model_name, "gs")
    if scheme in ("wasbs", "wasb", "abfss", "abfs"):
        container, _, host = parsed.netloc.partition("@")
        match = _AZURE_HOST.match(host)
        if not container or match is None:
            raise StoreLocationError(f"{model_uri}: cannot read the Azure account and container from {repository_uri}")
        key = parsed.path.strip("/")
        _check_rules(model_uri, container, key, "container")
        address = f"as://{match['account']}/{container}/{key}"
        return StoreLocation(model_uri, artifact_uri, address, repository_uri, model_name, "as")
    raise StoreLocationError(
        f"{model_uri}: stored at {repository_uri}, which Triton cannot read (it reads local paths, s3://, gs:// and "
        "Azure Storage); log it to an experiment whose artifact location is one of these"
    )


def _triton_endpoint(model_uri: str, endpoint: str) -> str:
    """``host:port`` (``https://host:port`` for TLS) of a custom S3 endpoint, as Triton's S3 path takes it."""
    parsed = urllib.parse.urlparse(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise StoreAccessError(
            f"{model_uri}: the S3 endpoint {without_user_info(endpoint)!r} is not an http(s)://host[:port] URL; "
            f"set {_ENDPOINT_VARIABLES[0]} to one"
        )
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return f"{'https://' if parsed.scheme == 'https' else ''}{parsed.hostname}:{port}"


def _check_rules(model_uri: str, bucket: str, key: str, what: str) -> None:
    """Triton's object-storage path rules (``s3.h``): bucket ``[0-9a-z.-]``, segments ``[0-9a-zA-Z._-]``."""
    advice = (
        "log the model to an experiment whose artifact location Triton can read, e.g. "
        'mlflow.create_experiment("name", artifact_location="s3://my-bucket/mlartifacts")'
    )
    if not _BUCKET.match(bucket):
        raise StorePathError(
            f"{model_uri}: Triton cannot read the {what} name {bucket!r}: Triton allows only lowercase letters, "
            f"digits, '.' and '-' there; {advice}"
        )
    for segment in key.split("/"):
        if not _SEGMENT.match(segment):
            raise StorePathError(
                f"{model_uri}: Triton cannot read the path segment {segment!r} (in {bucket}/{key}): Triton allows only "
                f"letters, digits, '.', '_' and '-' in each segment; {advice}"
            )


# --- can Triton read it? ------------------------------------------------------------------------------------


def _check_s3_readable(location: StoreLocation) -> None:
    """HEAD ``<model>/config.pbtxt`` with the credentials and endpoint Triton will get."""
    boto3 = require_extra("boto3", "s3", "reading an S3 artifact store needs boto3")
    config = require_extra("botocore.config", "s3", "reading an S3 artifact store needs boto3")

    bucket, _, key = location.storage_uri[len("s3://") :].partition("/")
    session = boto3.session.Session()  # a new one: the credentials of the environment now, never cached ones
    client = session.client(
        "s3",
        endpoint_url=s3_endpoint_url(),
        config=config.Config(retries={"max_attempts": 1}, connect_timeout=10, read_timeout=30),
    )
    try:
        client.head_object(Bucket=bucket, Key=f"{key}/{location.model_name}/config.pbtxt")
    except Exception as error:  # botocore's errors: no credentials, unreachable endpoint, denied, missing
        raise _access_error(
            location.model_uri, error, reading=f"{location.storage_uri}/{location.model_name}"
        ) from None


def _access_error(model_uri: str, error: Exception, *, reading: str) -> StoreLocationError:
    """One line naming what to set; never the credentials' values, nor the user info of a URL."""
    name = type(error).__name__
    cannot_reach = unreachable(error, reading=reading)
    if cannot_reach:
        return StoreAccessError(f"{model_uri}: {cannot_reach}")
    if name in ("NoCredentialsError", "PartialCredentialsError"):
        return StoreAccessError(
            f"{model_uri}: no AWS credentials to read {reading}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(and AWS_DEFAULT_REGION), the variables Triton reads too"
        )
    code = str(getattr(error, "response", {}).get("Error", {}).get("Code", "")) if hasattr(error, "response") else ""
    if code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        return StoreAccessError(
            f"{model_uri}: the store refused to let these credentials read {reading} ({code}): set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to a key allowed to read it"
        )
    if code in ("404", "NoSuchKey", "NoSuchBucket"):
        return StoreLocationError(
            f"{model_uri}: {reading} is not in the store ({code}); check the artifacts destination and "
            f"{_ENDPOINT_VARIABLES[0]}"
        )
    return StoreLocationError(f"{model_uri}: cannot read {reading}: {name}: {_first_line(error)}")


def _first_line(error: Exception) -> str:
    text = without_user_info(str(error)).strip() or type(error).__name__
    return text.splitlines()[0]
