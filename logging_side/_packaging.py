"""The packaging flow every framework wrapper shares.

Data flows one way, one stage per module: example -> in-memory prediction -> signature -> contract
(``_prediction``) -> the example as Triton tensors, checked through the runtime codecs (``_validation``) -> native
MLflow package in a staging directory -> Triton repository beside it (``_repository_files``) -> rename into place
(``_build``) -> ``mlflow.models.Model.log`` (``_model_log``). This module checks the arguments and decides
everything into a ``Plan`` before the first byte is written; ``Framework`` (``_framework``) is what differs between
the wrappers.

Everything that can fail runs before ``Model.log``: arguments are checked
before the first byte is written, and any failure removes the whole workspace,
so nothing reaches the tracking store or the Registry. A failure inside
``Model.log`` itself deletes the LoggedModel it created (``_undo``).
"""

import json
import pathlib

import numpy as np
import pandas as pd
from mlflow.models import ModelSignature

from mlflow_triton.repository.guard import stream_model_name
from mlflow_triton.repository.names import check_model_name, default_model_name
from mlflow_triton.repository.tracing import untraced
from mlflow_triton.runtime.protocol import outside_serving_environment

from . import _batching, _build, _caller, _model_log, _model_requirements, _protocol
from ._examples import check_example, for_request
from ._plan import Plan
from ._prediction import predict, predict_and_map, request_dependent_outputs
from ._validation import codecs_for, example_tensors, validate_in_memory
from .errors import (
    CustomCodeWarning,
    ExampleFormError,
    InvalidArgumentError,
    UnsupportedSchemaError,
    ValidationError,
)

DEVICES = ("cpu", "gpu")


def log_model(
    framework, model, input_example, signature, destination, triton, extra_options, *, lineage=None, on_built=None
):
    """Prepare the complete package, then hand it to ``Model.log`` at ``destination``; returns ``ModelInfo``.

    ``destination`` and ``triton`` are the wrapper's arguments as values (``_options``); ``extra_options`` go to
    ``mlflow.<flavor>.save_model``. ``lineage`` (a JSON-ready dict) is recorded as ``source`` in validation.json.
    ``on_built(directory)``: called with the repository's model directory once it is written, before it is logged.
    Every prediction of the proof (MLflow's own in ``Model.log`` included) runs untraced (``repository.tracing``).
    """
    _check_destination(destination)
    options = dict(extra_options or {})
    if destination.metadata is not None:
        options["metadata"] = destination.metadata  # also in 1/artifact/MLmodel, not only the logged MLmodel
    with untraced():
        plan = _prepared(framework, model, input_example, signature, triton, options, destination.name, lineage)
        return _model_log.log_prepared(plan, destination, on_built)


def save_model(framework, model, path, input_example, signature, triton, extra_options):
    """Write the complete MLflow package (native flavor + triton flavor) to ``path``.

    The package is built in a hidden sibling of ``path`` and renamed into place
    once complete; on any failure the sibling is removed and ``path`` is untouched.
    """
    path = pathlib.Path(path).resolve()
    if path.exists():
        raise InvalidArgumentError(f"path {str(path)!r} already exists; choose a new directory")
    with untraced():
        plan = _prepared(framework, model, input_example, signature, triton, dict(extra_options or {}), path.name, None)
        _build.build(plan, path)


def _check_destination(destination):
    if not isinstance(destination.name, str) or not destination.name:
        raise InvalidArgumentError(f"name must be a non-empty string, got {destination.name!r}")
    for label in ("tags", "params", "metadata"):
        value = getattr(destination, label)
        if value is not None and not isinstance(value, dict):
            raise InvalidArgumentError(f"{label} must be a dict or None, got {type(value).__name__}")


def _prepared(framework, model, input_example, signature, triton, options, default_name, lineage):
    """The ``Plan`` of one logging call: the Triton model's name defaults to the MLflow model's (or the path's)."""
    triton_model_name = triton.triton_model_name
    return _decide(
        framework,
        model,
        input_example=input_example,
        signature=signature,
        device=triton.device,
        triton_model_name=default_model_name(default_name) if triton_model_name is None else triton_model_name,
        validate_saved_model=triton.validate_saved_model,
        options=options,
        batching=_batching.check_arguments(
            triton.max_batch_size, triton.max_queue_delay_microseconds, triton.zero_row_guard
        ),
        lineage=lineage,
        protocol=triton.protocol,
        stream=triton.stream,
    )


def _decide(
    framework,
    model,
    *,
    input_example,
    signature,
    device,
    triton_model_name,
    validate_saved_model,
    options,
    batching=_batching.NO_BATCHING,
    lineage=None,
    protocol=_protocol.AUTO_PROTOCOL,
    stream=False,
):
    """Check the arguments, predict the example in memory and derive the mapping; writes nothing."""
    _protocol.check_protocol(protocol, batching.max_batch_size, stream)
    options = dict(options)
    declared_init_kwargs = options.pop("architecture_init_kwargs", None)
    example_input, example_params = _split_example(input_example)
    _check_arguments(framework, example_input, device, validate_saved_model, signature, declared_init_kwargs)
    check_example(example_input)
    triton_model_name = check_model_name(triton_model_name)
    if stream:
        check_model_name(stream_model_name(triton_model_name))
    framework.check_native_options(options)
    forced = framework.task_signature(options)
    if forced is not None:
        if signature is not None:
            raise InvalidArgumentError(
                f"signature: MLflow sets the signature of task {options.get('task')!r} itself and refuses any "
                "other; leave signature unset"
            )
        signature = forced
    framework.check_model(model)
    declared_by_caller = options.get("pip_requirements") is not None or options.get("conda_env") is not None
    options = framework.native_options(options)
    needed = _model_requirements.distributions_needed(framework.requirement_sources(model, options))
    options, missing = _model_requirements.complete_requirements(options, needed, declared_by_caller)
    # Custom code only with the in-memory validation: validate_saved_model=True reloads the package in a clean
    # interpreter, which fails on the same code. Missing requirements always: that reload uses this environment.
    custom_code = tuple(framework.custom_code_warnings(model, options)) if not validate_saved_model else ()
    recorded_warnings = custom_code + tuple(missing)
    for message in recorded_warnings:
        _caller.warn(message, CustomCodeWarning)
    if stream or protocol == _protocol.MLFLOW_PROTOCOL:
        why = _protocol.STREAMS if stream else f"{_protocol.ASKED}{protocol!r}"
        signature, layout, tensors, validation, typed = _protocol_parts(
            framework, model, signature, input_example, options, why, stream
        )
    elif protocol == _protocol.TENSORS_PROTOCOL or batching.enabled:  # MLflow's protocol does not batch
        try:
            signature, layout, tensors, validation, typed = _typed_parts(
                framework, model, example_input, example_params, signature, options, batching, validate_saved_model
            )
            typed["protocol_reason"] = (
                f"{_protocol.ASKED}{protocol!r}"
                if protocol == _protocol.TENSORS_PROTOCOL
                else f"max_batch_size={batching.max_batch_size}: {_protocol.UNBATCHED}"
            )
        except (UnsupportedSchemaError, ValidationError, ExampleFormError) as refusal:
            interface = _protocol.interface(model)
            if interface is None:
                raise
            raise type(refusal)(
                f"MLflow's {interface} takes MLflow's chat or agent request bodies, which the typed tensor mapping "
                f"cannot frame from this example; log it with protocol={_protocol.AUTO_PROTOCOL!r} (the default) or "
                f"{_protocol.MLFLOW_PROTOCOL!r}{' and max_batch_size=0' if batching.enabled else ''}: the repository "
                f"then answers MLflow's bodies as `mlflow models serve` does (the typed mapping said: {refusal})"
            ) from refusal
    else:
        signature, layout, tensors, validation, typed = _chosen_parts(
            framework, model, input_example, signature, options, validate_saved_model
        )
    return Plan(
        framework=framework,
        model=model,
        input_example=input_example,
        options=options,
        declared_init_kwargs=declared_init_kwargs,
        signature=signature,
        layout=layout,
        tensors=tensors,
        validation=validation,
        device=device,
        triton_model_name=triton_model_name,
        recorded_warnings=recorded_warnings,
        lineage=lineage,
        **typed,
    )


def _chosen_parts(framework, model, input_example, signature, options, validate_saved_model):
    """``protocol="auto"``: MLflow's serving protocol for a chat or agent interface, and for a model the typed mapping
    refuses (``probe``: also where the output columns depend on the request) while MLflow's own scoring code answers
    its serving example; the typed mapping otherwise. Where both refuse, the typed mapping's refusal is raised; an
    argument the typed mapping refuses (``InvalidArgumentError``, but for an example's form: ``ExampleFormError``)
    is refused at once."""
    interface = _protocol.interface(model)
    if interface is not None:
        why = f"the model is MLflow's {interface}, whose requests and answers are MLflow's chat or agent bodies"
        return _protocol_parts(framework, model, signature, input_example, options, why)
    example_input, example_params = _split_example(input_example)
    try:
        signature, layout, tensors, validation, typed = _typed_parts(
            framework,
            model,
            example_input,
            example_params,
            signature,
            options,
            _batching.NO_BATCHING,
            validate_saved_model,
            probe=True,
        )
        return signature, layout, tensors, validation, {**typed, "protocol_reason": _protocol.TYPED_CARRIES}
    except (UnsupportedSchemaError, ValidationError, ExampleFormError) as error:  # the caller's other mistakes stay
        refusal = error
    try:
        return _protocol_parts(
            framework, model, signature, input_example, options, f"the typed mapping refuses it: {refusal}"
        )
    except Exception as error:  # MLflow cannot save, load or answer it either: the typed refusal says what to do
        said = str(error) if isinstance(error, ValidationError) else f"{type(error).__name__}: {error}"
        raise type(refusal)(f"{refusal} (MLflow's serving protocol cannot serve it either: {said})") from refusal


def _protocol_parts(framework, model, signature, input_example, options, why, stream=False):
    """MLflow's serving protocol: ``(signature, layout, tensors, validation, the Plan's fields)``, the example's
    serving body answered in memory as Triton will answer it (``_protocol.prove_saved_model``), and streamed with
    ``stream``; params travel in the body: no mapping, no batching. ``why``: the reason it was chosen."""
    layout, tensors, validation = _protocol.prove_saved_model(
        framework, model, signature, input_example, options, framework.current_device(model), stream
    )
    return signature, layout, tensors, validation, {"protocol_reason": why, "stream": stream}


def _typed_parts(
    framework, model, example_input, example_params, signature, options, batching, validate_saved_model, probe=False
):
    """The typed tensor mapping: ``(signature, layout, tensors, validation, the Plan's batching and mapping fields)``
    from the example predicted in memory, outside MLflow's serving mark as the repository's model predicts (a
    caller's process may carry it: ``scoring_server.init`` sets it for good). ``probe``: refuse a model whose output
    columns depend on the request (``request_dependent_outputs``), which ``protocol="auto"`` then serves with MLflow's
    protocol."""
    with outside_serving_environment():
        return _typed_parts_here(
            framework, model, example_input, example_params, signature, options, batching, validate_saved_model, probe
        )


def _typed_parts_here(
    framework, model, example_input, example_params, signature, options, batching, validate_saved_model, probe
):
    adapter, signature, mapped, layout, output_mapping = predict_and_map(
        framework, model, example_input, example_params, signature, options
    )
    varies = request_dependent_outputs(adapter, example_input, example_params, mapped) if probe else None
    if varies is not None:
        raise UnsupportedSchemaError(varies)
    layout = _batching.batched_layout(layout, batching)
    tensors = example_tensors(layout, for_request(example_input, mapped.inputs))
    _batching.check_example_rows(tensors, batching)
    validation = None
    if not validate_saved_model:
        validation = validate_in_memory(layout, tensors, adapter, framework.current_device(model), example_params)
    batching_proof = None
    if batching.enabled:
        framework.check_batching(model, options, mapped.params)
        predictor = _batching.predictor_of_tensors(
            lambda value: predict(adapter, value, "batching proof", example_params), *codecs_for(layout)
        )
        batching_proof = _batching.prove_row_independence(predictor, tensors)
    typed = {
        "batching": batching,
        "batching_proof": batching_proof,
        "example_params": example_params,
        "output_mapping": output_mapping,
    }
    return signature, layout, tensors, validation, typed


def _split_example(input_example):
    """``(input, params)`` from an example MLflow accepts: the input alone, or an ``(input, params dict)`` tuple."""
    if isinstance(input_example, tuple) and len(input_example) == 2 and isinstance(input_example[1], dict):
        example_input, example_params = input_example
        if not all(isinstance(name, str) for name in example_params):
            raise InvalidArgumentError("input_example: the params of an (input, params) example need string names")
        return example_input, example_params
    return input_example, None


def _check_arguments(framework, example_input, device, validate_saved_model, signature, declared_init_kwargs):
    if _is_empty(example_input):
        raise InvalidArgumentError(
            "input_example is required (also with signature=) and must not be empty: pass a small, "
            "non-sensitive example of the model's prediction input"
        )
    if device not in DEVICES:
        raise InvalidArgumentError(f"device {device!r} is not supported; supported: {', '.join(DEVICES)}")
    if device == "gpu" and not framework.supports_gpu:
        raise InvalidArgumentError(
            f"device 'gpu' is not supported for {framework.flavor} models; supported: 'cpu' "
            "(KIND_GPU is available for PyTorch and Transformers)"
        )
    if not isinstance(validate_saved_model, bool):
        raise InvalidArgumentError(f"validate_saved_model must be True or False, got {validate_saved_model!r}")
    if signature is not None and signature is not False and not isinstance(signature, ModelSignature):
        raise InvalidArgumentError(
            "signature must be an mlflow.models.ModelSignature, None (inferred from the example and its prediction) "
            f"or False (none recorded), got {type(signature).__name__}"
        )
    if declared_init_kwargs is not None:
        if not framework.describes_architecture:
            raise InvalidArgumentError(
                f"architecture_init_kwargs is not supported for {framework.flavor} models; "
                "supported for: pytorch, transformers"
            )
        try:
            json.dumps(declared_init_kwargs, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidArgumentError(f"architecture_init_kwargs must be JSON-serializable: {error}") from None
        if not isinstance(declared_init_kwargs, dict):
            raise InvalidArgumentError("architecture_init_kwargs must be a dict of constructor arguments")


def _is_empty(example):
    if example is None:
        return True
    if isinstance(example, (pd.DataFrame, pd.Series)):
        return example.empty
    if isinstance(example, np.ndarray):
        return example.size == 0
    if isinstance(example, (list, tuple, dict, str, bytes)):
        return len(example) == 0
    return False
