"""``mlflow-triton kserve``: a KServe ``InferenceService`` (v1beta1, Triton predictor) for a logged model.

The manifest points ``storageUri`` at the model's repository where MLflow stored it (located and checked by
:func:`~mlflow_triton.deploy._store.locate_repository`, in the ``s3://bucket/…`` form KServe's storage
initializer reads), serves it with KServe's Triton runtime (``protocolVersion: v2``, the NGC
``tritonserver`` image tag ``<triton version>-py3``), loads only the model Triton will see, and asks for
resources. Nothing is applied to a cluster. No credential goes into it: the cluster's storage credentials
belong in a Kubernetes secret attached to ``--service-account``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from mlflow_triton.command_line import Progress, run_command, without_user_info
from mlflow_triton.repository.paths import checked_out, missing_ancestors

from ._store import locate_repository
from .errors import KServeManifestError, OutputPathError

__all__ = ["inference_service", "kserve_command"]

_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
#: KServe derives ``<name>-predictor-…`` services and hostnames from the name: it must stay a short DNS label.
MAX_NAME_LENGTH = 45
_TRITON_VERSION = re.compile(r"^\d{2}\.\d{2}$")
#: The option that lets ``--out`` replace an existing file.
OVERWRITE_FLAG = "--overwrite"


def inference_service(
    storage_uri: str,
    model_name: str,
    *,
    name: str | None = None,
    triton_version: str = "24.10",
    gpus: int = 0,
    cpu: str = "1",
    memory: str = "2Gi",
    service_account: str | None = None,
    models: tuple[str, ...] = (),
) -> dict:
    """The ``InferenceService`` as a plain dict (``yaml.safe_dump`` writes it). ``models``: every model Triton
    must load (a guarded batched model's front and the batched model behind it); ``(model_name,)`` by default."""
    name = name or _default_name(model_name)
    if not _NAME.match(name) or len(name) > MAX_NAME_LENGTH:
        raise KServeManifestError(
            f"--name {name!r}: KServe needs a DNS label of at most {MAX_NAME_LENGTH} characters: lowercase letters, "
            "digits and '-', starting with a letter and not ending with '-'"
        )
    if not _TRITON_VERSION.match(triton_version):
        raise KServeManifestError(f"--triton-version {triton_version!r}: give a Triton container release such as 24.10")
    if not isinstance(gpus, int) or gpus < 0:
        raise KServeManifestError(f"--gpus {gpus!r}: give a whole number >= 0")
    limits = {"cpu": cpu, "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    predictor: dict = {
        "triton": {
            "protocolVersion": "v2",
            "runtimeVersion": f"{triton_version}-py3",
            "storageUri": storage_uri,
            "args": ["--model-control-mode=explicit", *(f"--load-model={name}" for name in models or (model_name,))],
            "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": limits},
        },
    }
    if service_account:
        predictor["serviceAccountName"] = service_account
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/managed-by": "mlflow-triton"},
            "annotations": {"mlflow-triton/triton-model-name": model_name},
        },
        "spec": {"predictor": predictor},
    }


def kserve_command(
    model_uri: str,
    *,
    name: str | None = None,
    triton_version: str = "24.10",
    gpus: int = 0,
    service_account: str | None = None,
    artifacts_destination: str | None = None,
    tracking_uri: str | None = None,
    out_file: str | Path | None = None,
    overwrite: bool = False,
    out: Callable[[str], object] = print,
) -> int:
    """``mlflow-triton kserve``: write the manifest to ``out_file`` (or print it); 0, or 1 after an error.

    ``out_file`` follows the rules of every ``--out`` (``mlflow_triton.repository.paths.checked_out``), checked
    before the model is located: never a symbolic link or a directory, an existing file only with ``overwrite``;
    missing folders are created. The file is written whole or not at all.
    """
    import yaml

    target: Path | None = None

    def write(say: Progress) -> int:
        nonlocal target
        if out_file is not None:
            target = checked_out(
                out_file, kind="file", error=OutputPathError, replace_flag=OVERWRITE_FLAG, replace=overwrite
            )
        if tracking_uri is not None:
            import mlflow

            mlflow.set_tracking_uri(tracking_uri)
        location = locate_repository(model_uri, artifacts_destination=artifacts_destination)
        if not location.is_object_store:
            raise KServeManifestError(
                f"{model_uri}: stored on this machine's disk ({location.address}); a cluster cannot read it: log the "
                "model to an experiment whose artifact location is in object storage (s3://, gs://, Azure)"
            )
        manifest = inference_service(
            location.storage_uri,
            location.model_name,
            name=name,
            triton_version=triton_version,
            gpus=gpus,
            service_account=service_account,
            models=location.models,
        )
        text = f"# InferenceService for {without_user_info(model_uri)} (Triton model {location.model_name!r})\n"
        text += yaml.safe_dump(manifest, sort_keys=False)
        if target is None:
            out(text.rstrip("\n"))
        else:
            _write(target, text)
            out(f"wrote {out_file}")
        return 0

    def explain(error: Exception) -> str | None:
        if isinstance(error, OSError):  # a folder above --out that cannot be created, a file that cannot be written
            return f"cannot write {error.filename or target}: {error.strerror or error}"
        return None

    return run_command("kserve", write, explain=explain)


def _write(path: Path, text: str) -> None:
    """``text`` into ``path``, whole or not at all (a temporary file beside it, renamed over it)."""
    created = missing_ancestors(path.parent)
    staging = path.with_name(f".{path.name}.writing-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        for folder in reversed(created):
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _default_name(model_name: str) -> str:
    text = re.sub(r"[^a-z0-9-]+", "-", model_name.lower()).strip("-")
    if not text or not text[0].isalpha():
        text = f"model-{text}".rstrip("-")
    return text[:MAX_NAME_LENGTH].rstrip("-")
