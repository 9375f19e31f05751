"""The Triton repository written beside the native MLflow package, and the triton flavor that points at it.

``model_repository/<name>/`` holds ``config.pbtxt``, ``1/model.py`` (the runtime), ``1/artifact/`` (a copy of the
native package), the lean ``requirements.txt``, the example request files and ``validation.json`` (what was checked
and how); the MLmodel's ``triton`` flavor names it.
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING

import mlflow
from mlflow.models import Model

from mlflow_triton.repository.config import build_config, decoupled_config, wire_arrays, write_config
from mlflow_triton.repository.guard import STREAM_PARAMETER, forward_target, stream_model, stream_model_name
from mlflow_triton.repository.layout import (
    ARTIFACT_DIRECTORY,
    CONFIG_FILE,
    MLMODEL_FILE,
    MODEL_FILE,
    REPOSITORY_DIRECTORY,
    REQUIREMENTS_FILE,
    STREAM_REQUEST_FILE,
    VALIDATION_FILE,
    VERSION_DIRECTORY,
)
from mlflow_triton.repository.request_files import wire_parameters, write_request
from mlflow_triton.repository.serving_pins import ANSWER_DISTRIBUTIONS, PREDICTED_WITH, installed_versions
from mlflow_triton.runtime import RUNTIME_VERSION
from mlflow_triton.shared_contract import REQUEST_TENSOR

from . import _batching, _model_py, _model_requirements, _serving_requirements, _text_stream

if TYPE_CHECKING:
    from ._plan import Plan

FLAVOR_NAME = "triton"


def copy_native_package(source, destination):
    """Copy the native MLflow package (not model_repository/ itself) into 1/artifact/."""
    destination.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name == REPOSITORY_DIRECTORY:
            continue
        target = destination / entry.name
        if entry.is_dir():
            shutil.copytree(entry, target, symlinks=False)
        else:
            shutil.copy2(entry, target)


def write_repository(repository, plan: Plan, validation):
    """Write the repository's files for ``plan``; ``validation`` is the check's record (``_validation``). With
    ``plan.stream``, also the streaming model beside it (:func:`_write_stream_model`)."""
    layout = plan.layout
    config = build_config(plan.triton_model_name, layout, plan.device, plan.batching.max_queue_delay_microseconds)
    streaming = stream_model_name(plan.triton_model_name) if plan.stream else None
    if streaming is not None:  # Triton loads both: the one-shot model names the streaming one
        config.parameters[STREAM_PARAMETER].string_value = streaming
    write_config(config, repository / CONFIG_FILE)
    (repository / VERSION_DIRECTORY / MODEL_FILE).write_text(_model_py.compose_model_py(), encoding="utf-8")
    environment = _write_requirements(repository)
    datatypes = {d.name: d.data_type for d in layout.inputs}
    contents = {f.tensor: f.content for f in layout.contract.inputs.fields}
    request_files = write_request(
        repository,
        wire_arrays(config, "input", plan.tensors),
        datatypes,
        contents,
        {d.name: d.data_type for d in layout.outputs},
        {f.tensor: f.content for f in layout.contract.outputs.fields},
        parameters=wire_parameters(plan.example_params),
    )
    report = {
        "mode": validation["mode"],
        "saved_artifact_checked": validation["mode"] == "saved-artifact",
        "validation_device": validation["device"],
        "target_device": plan.device,
        "tensor_mapping": {
            "validated": True,
            "where": "local",
            "how": validation.get("how")
            or "example encoded to Triton tensors, decoded by the runtime codecs, predicted, "
            "prediction encoded to the configured outputs",
            "outputs": {name: list(array.shape) for name, array in validation["outputs"].items()},
        },
        "triton": {
            "validated": False,
            "note": "logging does not start Triton; run `mlflow-triton check <model URI>` to validate on a real server",
        },
        "request_files": request_files,
        "warnings": list(plan.recorded_warnings),
        "mlflow_version": mlflow.__version__,
        "runtime_version": RUNTIME_VERSION,
        "mapping_version": layout.contract.version,
        "protocol": layout.contract.protocol,
        **environment,
    }
    if plan.lineage is not None:
        report["source"] = plan.lineage
    if plan.output_mapping is not None:
        report["output_mapping"] = plan.output_mapping
    if plan.protocol_reason is not None:
        report["protocol_chosen_because"] = plan.protocol_reason
    if streaming is not None:
        report["stream"] = {"model": streaming, **validation["stream"]}
    if plan.batching.enabled:
        report["batching"] = {
            "max_batch_size": plan.batching.max_batch_size,
            "max_queue_delay_microseconds": plan.batching.max_queue_delay_microseconds,
            "row_independence": plan.batching_proof,
            "zero_row_requests": _batching.ZERO_ROW_REQUESTS,
        }
    (repository / VALIDATION_FILE).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if streaming is not None:
        _write_stream_model(repository, config, streaming, plan.tensors)


def _write_stream_model(repository, config, name, tensors):
    """``<name>_stream`` beside the one-shot model directory ``repository``: its copy, decoupled (``config``, the
    one-shot model's, renamed, without ``STREAM_PARAMETER``), with the shipped body as a ``generate_stream`` request
    (``STREAM_REQUEST_FILE``). A Transformers text-generation package is served there through the MLflow model that
    streams it (``_text_stream``), the package whole inside."""
    streaming = repository.with_name(name)
    shutil.copytree(repository, streaming, symlinks=False)
    artifact = streaming / VERSION_DIRECTORY / ARTIFACT_DIRECTORY
    if _text_stream.streams_generated_text(Model.load(str(artifact / MLMODEL_FILE))):
        package = artifact.with_name(_text_stream.PIPELINE_ARTIFACT)
        artifact.rename(package)
        _text_stream.save_stream_package(package, artifact)
        shutil.rmtree(package)
    decoupled = decoupled_config(config, name)
    del decoupled.parameters[STREAM_PARAMETER]
    write_config(decoupled, streaming / CONFIG_FILE)
    [body] = tensors[REQUEST_TENSOR].tolist()
    (streaming / STREAM_REQUEST_FILE).write_text(
        json.dumps({REQUEST_TENSOR: body.decode("utf-8")}) + "\n", encoding="utf-8"
    )


def _write_requirements(repository):
    """Write the repository's lean ``requirements.txt`` (``_serving_requirements``) from the MLflow package's, with
    the distributions that decide the answers pinned to this interpreter's versions (the example was predicted here).

    Returns validation.json's record of them: ``predicted_with``, ``requirements_added`` (what the package's saved
    format loads with and no line brought) and, where a line does not pin that version, ``not_pinned`` (why).
    """
    artifact = repository / VERSION_DIRECTORY / ARTIFACT_DIRECTORY
    native = artifact / REQUIREMENTS_FILE
    lines = native.read_text(encoding="utf-8").splitlines() if native.exists() else []
    answer_versions = installed_versions(ANSWER_DISTRIBUTIONS)
    unpinnable = _serving_requirements.beside_no_stub(answer_versions)
    pins = _serving_requirements.answer_pins(answer_versions, _serving_requirements.mlflow_bounds(), unpinnable)
    added = _format_requirements(artifact, lines)
    lean = _serving_requirements.serving_requirements([*lines, *added], mlflow.__version__, pins)
    (repository / REQUIREMENTS_FILE).write_text(
        _serving_requirements.SERVING_REQUIREMENTS_HEADER + "".join(f"{line}\n" for line in lean), encoding="utf-8"
    )
    versions = _serving_requirements.predicted_versions(lean)
    record = {PREDICTED_WITH: versions}
    if added:
        record[_serving_requirements.ADDED] = added
    reasons = _serving_requirements.not_pinned(lean, versions, unpinnable)
    if reasons:
        record["not_pinned"] = reasons
    return record


def _format_requirements(artifact, lines):
    """``{requirement line: why}`` for what the native package's saved format loads with
    (``_serving_requirements.format_distributions``) and no line of ``lines`` brings, itself or as a dependency, nor
    the ``mlflow-skinny`` the serving requirements always name: pinned to the version installed here, where the
    package was saved or loaded."""
    flavors = Model.load(str(artifact / "MLmodel")).flavors
    needed = {name: [why] for name, why in _serving_requirements.format_distributions(flavors).items()}
    missing = _model_requirements.missing_from(needed, [*lines, "mlflow-skinny"])
    return {_pinned(name): f"{needed[name][0]}; the model's requirements do not bring {name}" for name in missing}


def _pinned(name):
    try:
        return _model_requirements.pinned(name)
    except Exception:  # not installed here: MLflow cannot pin it
        return name


def add_triton_flavor(package, triton_model_name, mapping_version):
    """Add the ``triton`` flavor, which names the repository, to the MLmodel of the package at ``package``; a
    guarded batched model also names the batched model behind its front (``batched_model_name``), a streaming
    repository its streaming model (``stream_model_name``): Triton loads both (``mlflow_triton.repository.guard``)."""
    mlmodel_path = package / "MLmodel"
    model = Model.load(str(mlmodel_path))
    behind = forward_target(package / REPOSITORY_DIRECTORY / triton_model_name)
    streaming = stream_model(package / REPOSITORY_DIRECTORY / triton_model_name)
    model.add_flavor(
        FLAVOR_NAME,
        data=f"{REPOSITORY_DIRECTORY}/{triton_model_name}",
        model_name=triton_model_name,
        mapping_version=mapping_version,
        runtime_version=RUNTIME_VERSION,
        **({"batched_model_name": behind} if behind else {}),
        **({"stream_model_name": streaming} if streaming else {}),
    )
    model.save(str(mlmodel_path))
