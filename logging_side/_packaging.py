"""The packaging flow every framework wrapper shares.

Data flows one way: example -> in-memory prediction -> signature -> contract ->
native MLflow package in a staging directory -> Triton repository beside it ->
rename into place -> ``mlflow.models.Model.log``.

Everything that can fail runs before ``Model.log``: arguments are checked
before the first byte is written, and any failure removes the whole workspace,
so nothing reaches the tracking store or the Registry. A failure inside
``Model.log`` itself deletes the LoggedModel it created (``_undo``).
"""

import copy
import dataclasses
import inspect
import json
import os
import pathlib
import shutil
import tempfile
import warnings

import mlflow
import numpy as np
import pandas as pd
from mlflow.models import Model, ModelSignature, infer_signature

from mlflow_triton.repository import config as _config
from mlflow_triton.repository import request_files as _requests
from mlflow_triton.repository.layout import ARTIFACT_DIRECTORY, REPOSITORY_DIRECTORY, VERSION_DIRECTORY, codecs_for
from mlflow_triton.repository.names import check_model_name, default_model_name
from mlflow_triton.repository.staging import staged_directory
from mlflow_triton.runtime import RUNTIME_VERSION
from mlflow_triton.runtime.parameters import PARAMS_CHANNEL
from mlflow_triton.shared_contract import MAPPING_VERSION

from . import _batching, _model_py, _model_requirements, _saved_check, _serving_requirements, _undo
from ._examples import (
    DATAFRAME_REMEDY,
    check_example,
    example_columns,
    for_prediction,
    for_request,
    input_schema,
    lists_in_one_row,
)
from ._schema import is_any_schema, layout_from_signature, may_be_a_scalar_prediction, signature_for_pyfunc
from .errors import (
    BatchingWarning,
    CustomCodeWarning,
    ExamplePredictionError,
    InvalidArgumentError,
    MlflowTritonError,
    ValidationError,
)

FLAVOR_NAME = "triton"
DEVICES = ("cpu", "gpu")
# save_model parameters this package sets itself; callers use the wrapper's own arguments.
MANAGED_NATIVE_OPTIONS = frozenset(
    {"path", "mlflow_model", "signature", "input_example", "sk_model", "pytorch_model", "transformers_model"}
)


class Framework:
    """What differs between sklearn, PyTorch and Transformers; subclassed per wrapper."""

    flavor: str | None = None  # MLflow flavor name, e.g. "sklearn"
    model_argument: str | None = None  # the wrapper's positional parameter, e.g. "sk_model"
    supports_gpu = False
    describes_architecture = False  # True where architecture() writes architecture.json

    def native_module(self):
        raise NotImplementedError

    def check_model(self, model):
        """Reject a model that cannot be packaged; default: accept."""

    def native_options(self, options):
        """The options for ``mlflow.<flavor>.save_model``, with this package's defaults."""
        return dict(options)

    def check_native_options(self, options: dict[str, object]) -> None:
        """Reject options ``mlflow.<flavor>.save_model`` does not take, before any work is done."""
        save_model = self.native_module().save_model
        named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        parameters = inspect.signature(save_model).parameters.values()
        managed = MANAGED_NATIVE_OPTIONS | {self.model_argument}
        accepted = {p.name for p in parameters if p.kind in named} - managed  # never "**kwargs"
        unknown = sorted(set(options) - accepted)
        if "artifact_path" in unknown:
            raise InvalidArgumentError("artifact_path is not supported; use name= for the MLflow model name")
        if unknown:
            raise InvalidArgumentError(
                f"Unknown option(s) {', '.join(unknown)} for {save_model.__module__}.save_model "
                f"(MLflow {mlflow.__version__}); accepted: {', '.join(sorted(accepted))}"
            )

    def pyfunc_adapter(self, model, options, model_meta):
        """MLflow's pyfunc wrapper around the in-memory model: ``PyFuncModel``."""
        raise NotImplementedError

    def current_device(self, model):
        return "cpu"

    def task_signature(self, options):
        """The signature the native flavor sets itself for these options (and refuses any other), or None."""
        return None

    def check_batching(self, model, options, params_schema):
        """Refuse ``max_batch_size`` where the model's own calls join rows in a way the proof cannot rule out;
        default: the proof decides."""

    def save_native(
        self, model: object, path: object, signature: object, input_example: object, options: dict[str, object]
    ) -> None:
        self.native_module().save_model(
            model, path=str(path), signature=signature, input_example=input_example, **options
        )

    def architecture(self, model, package_path, declared_init_kwargs):
        """architecture.json content, or None for flavors without one."""
        return None

    def custom_code_warnings(self, model, options):
        """Messages about custom code the saved model needs and Triton certainly cannot import (``_custom_code``)."""
        return []

    def requirement_sources(self, model, options):
        """Classes, functions, values and modules the saved model needs at load time (``_model_requirements``)."""
        return []


def log_model(
    framework,
    model,
    *,
    input_example,
    name,
    registered_model_name,
    await_registration_for,
    run_id,
    metadata,
    tags,
    params,
    signature,
    device,
    triton_model_name,
    validate_saved_model,
    extra_options,
    max_batch_size=0,
    max_queue_delay_microseconds=None,
    lineage=None,
    experiment_id=None,
):
    """Prepare the complete package, then hand it to ``Model.log``; returns ``ModelInfo``.

    ``lineage`` (a JSON-ready dict) is recorded as ``source`` in validation.json; ``experiment_id`` places the
    LoggedModel in that experiment instead of the active one (``add_repository``: beside its source).
    """
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"name must be a non-empty string, got {name!r}")
    for label, value in (("tags", tags), ("params", params), ("metadata", metadata)):
        if value is not None and not isinstance(value, dict):
            raise InvalidArgumentError(f"{label} must be a dict or None, got {type(value).__name__}")
    options = dict(extra_options or {})
    if metadata is not None:
        options["metadata"] = metadata  # also in 1/artifact/MLmodel, not only the logged MLmodel
    plan = _plan(
        framework,
        model,
        input_example=input_example,
        signature=signature,
        device=device,
        triton_model_name=default_model_name(name) if triton_model_name is None else triton_model_name,
        validate_saved_model=validate_saved_model,
        options=options,
        batching=_batching.check_arguments(max_batch_size, max_queue_delay_microseconds),
        lineage=lineage,
    )
    with tempfile.TemporaryDirectory(prefix="mlflow-triton-") as workspace:
        package = pathlib.Path(workspace) / "model"
        _build(plan, package)
        adopter = _AdoptPreparedPackage(framework.flavor, package)
        created = []
        with _undo.undone_on_failure(registered_model_name, lambda: adopter.model_id or next(iter(created), None)):
            if experiment_id is not None:
                created.append(_logged_model_in(experiment_id, name, run_id, tags, params, adopter.__name__))
            return Model.log(
                artifact_path=None,
                name=name,
                flavor=adopter,
                registered_model_name=registered_model_name,
                await_registration_for=await_registration_for,
                run_id=run_id,
                metadata=metadata,
                tags=tags,
                params=params,
                model_id=next(iter(created), None),
                validate_serving_input=False,
            )


def _logged_model_in(experiment_id, name, run_id, tags, params, flavor):
    """Create the LoggedModel in ``experiment_id`` (``Model.log`` alone would use the active experiment)."""
    from mlflow.tracking.fluent import _create_logged_model

    run_params = mlflow.MlflowClient().get_run(run_id).data.params if run_id else {}
    return _create_logged_model(
        name=name,
        source_run_id=run_id,
        experiment_id=experiment_id,
        params={key: str(value) for key, value in {**(params or {}), **run_params}.items()},
        tags={key: str(value) for key, value in (tags or {}).items()},
        flavor=flavor,
    ).model_id


def save_model(
    framework,
    model,
    path,
    *,
    input_example,
    signature=None,
    device="cpu",
    triton_model_name=None,
    validate_saved_model=False,
    extra_options=None,
    max_batch_size=0,
    max_queue_delay_microseconds=None,
):
    """Write the complete MLflow package (native flavor + triton flavor) to ``path``.

    The package is built in a hidden sibling of ``path`` and renamed into place
    once complete; on any failure the sibling is removed and ``path`` is untouched.
    """
    path = pathlib.Path(path).resolve()
    if path.exists():
        raise InvalidArgumentError(f"path {str(path)!r} already exists; choose a new directory")
    plan = _plan(
        framework,
        model,
        input_example=input_example,
        signature=signature,
        device=device,
        triton_model_name=default_model_name(path.name) if triton_model_name is None else triton_model_name,
        validate_saved_model=validate_saved_model,
        options=dict(extra_options or {}),
        batching=_batching.check_arguments(max_batch_size, max_queue_delay_microseconds),
    )
    _build(plan, path)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """Everything decided and checked before the first byte is written."""

    framework: Framework
    model: object
    input_example: object
    options: dict
    declared_init_kwargs: object
    signature: "ModelSignature | None | bool"  # as MLflow records it (False: none)
    layout: object
    tensors: dict
    validation: "dict | None"  # None: validate the saved artifact once it exists
    device: str
    triton_model_name: str
    warnings: tuple  # custom-code and missing-requirement warnings, recorded in validation.json
    batching: _batching.Batching = _batching.Batching()
    batching_proof: "dict | None" = None  # the row-independence record of a batched model
    example_params: "dict | None" = None  # the params of an ``(input, params)`` example, shipped with the request
    lineage: "dict | None" = None  # where the model came from (add_repository), recorded in validation.json
    output_mapping: "dict | None" = None  # outputs mapped from the example's prediction: why (validation.json)


def _plan(
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
):
    """Check the arguments, predict the example in memory and derive the mapping; writes nothing."""
    options = dict(options)
    declared_init_kwargs = options.pop("architecture_init_kwargs", None)
    data, example_params = _split_example(input_example)
    _check_arguments(framework, data, device, validate_saved_model, signature, declared_init_kwargs)
    check_example(data)
    triton_model_name = check_model_name(triton_model_name)
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
    found = (tuple(framework.custom_code_warnings(model, options)) if not validate_saved_model else ()) + tuple(missing)
    _warn(found)
    adapter, signature, mapped, layout, output_mapping = _predict_and_map(
        framework, model, data, example_params, signature, options
    )
    layout = _batching.batched_layout(layout, batching)
    tensors = _example_tensors(layout, for_request(data, mapped.inputs))
    _batching.check_example_rows(tensors, batching)
    validation = None
    if not validate_saved_model:
        validation = _validate_in_memory(layout, tensors, adapter, framework.current_device(model), example_params)
    proof = None
    if batching.enabled:
        framework.check_batching(model, options, mapped.params)
        predict = _batching.predictor_of_tensors(
            lambda value: _predict(adapter, value, "batching proof", example_params), *codecs_for(layout)
        )
        proof = _batching.prove_row_independence(predict, tensors)
        # stacklevel 4: past _packaging.log_model and <framework>.log_model, at their caller
        warnings.warn(f"max_batch_size={batching.max_batch_size}: {_batching.ZERO_ROW_REQUESTS}", BatchingWarning, 4)
    return _Plan(
        framework,
        model,
        input_example,
        options,
        declared_init_kwargs,
        signature,
        layout,
        tensors,
        validation,
        device,
        triton_model_name,
        found,
        batching,
        proof,
        example_params,
        lineage,
        output_mapping,
    )


def _split_example(input_example):
    """``(input, params)`` from an example MLflow accepts: the input alone, or an ``(input, params dict)`` tuple."""
    if isinstance(input_example, tuple) and len(input_example) == 2 and isinstance(input_example[1], dict):
        data, params = input_example
        if not all(isinstance(name, str) for name in params):
            raise InvalidArgumentError("input_example: the params of an (input, params) example need string names")
        return data, params
    return input_example, None


def _warn(messages):
    """Warn (``CustomCodeWarning``) about code or requirements the serving environment will lack."""
    for message in messages:
        # stacklevel: the caller of <framework>.log_model / save_model (-> log_model / save_model -> _plan -> here)
        warnings.warn(message, CustomCodeWarning, stacklevel=5)


def _build(plan, path):
    """Write the package planned by ``_plan`` into a staging sibling of ``path``, then rename it.

    On failure nothing is left: neither the staging directory nor the parents created for ``path``.
    """
    # create=False: the native flavor insists on creating the directory itself
    with staged_directory(path, create=False) as staging:
        plan.framework.save_native(plan.model, staging, plan.signature, plan.input_example, plan.options)
        architecture = plan.framework.architecture(plan.model, staging, plan.declared_init_kwargs)
        if architecture is not None:
            (staging / "architecture.json").write_text(json.dumps(architecture, indent=1) + "\n")
        repository = staging / REPOSITORY_DIRECTORY / plan.triton_model_name
        artifact = repository / VERSION_DIRECTORY / ARTIFACT_DIRECTORY
        _copy_native_package(staging, artifact)
        validation = plan.validation or _validate_saved_artifact(plan.layout, plan.tensors, artifact)
        _write_repository(
            repository,
            plan.triton_model_name,
            plan.layout,
            plan.device,
            plan.tensors,
            validation,
            plan.warnings,
            plan.batching,
            plan.batching_proof,
            plan.example_params,
            plan.lineage,
            plan.output_mapping,
        )
        _add_triton_flavor(staging, plan.triton_model_name, plan.layout.contract.version)


def save_example(package, input_example):
    """Save ``input_example`` as the example of the MLflow package saved at ``package`` (MLmodel rewritten), as it
    is: where a flavor's own saving would change it, or did not save one."""
    from mlflow.models.utils import _save_example

    mlmodel = Model.load(os.path.join(package, "MLmodel"))
    _save_example(mlmodel, input_example, str(package))
    mlmodel.save(os.path.join(package, "MLmodel"))


def with_default_requirements(options, default_requirements):
    """Record the flavor's default requirements instead of letting MLflow infer them.

    MLflow's inference reloads the saved model in a subprocess. Requirements
    the caller passes (``pip_requirements`` or ``conda_env``) are used as given;
    otherwise the flavor's defaults plus any ``extra_pip_requirements`` are recorded.
    """
    options = dict(options)
    if options.get("pip_requirements") is None and options.get("conda_env") is None:
        extra = options.pop("extra_pip_requirements", None) or []
        if isinstance(extra, (str, os.PathLike)):
            extra = [
                line.strip()
                for line in pathlib.Path(extra).read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
        options["pip_requirements"] = [*default_requirements(options), *extra]
    return options


def _check_arguments(framework, input_example, device, validate_saved_model, signature, declared_init_kwargs):
    if _is_empty(input_example):
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


def _predict_and_map(framework, model, input_example, example_params, signature, options):
    """Predict the example (with the example's params, if any) in memory and derive the mapping.

    Returns ``(adapter, the signature to record, the signature mapped, layout, output_mapping)``. An explicit
    signature is recorded as given and enforced on the example by MLflow's own schema enforcement (a single named
    input tensor is recorded unnamed where the flavor takes no dict: ``signature_for_pyfunc``; the layout keeps the
    name). ``None``: MLflow's inference from the example and its prediction, recorded. A signature without outputs,
    or ``False`` (nothing recorded): the Triton outputs are mapped from the schema MLflow infers for the example's
    prediction, and ``output_mapping`` (for validation.json) says so; the recorded signature stays the caller's.
    """
    recorded = None if signature is False else signature
    model_meta = Model(signature=signature_for_pyfunc(recorded, framework.flavor))
    adapter = framework.pyfunc_adapter(model, options, model_meta)
    if recorded is not None and example_params and recorded.params is None:
        raise InvalidArgumentError(
            f"input_example carries params ({', '.join(sorted(example_params))}) but the signature has no params "
            "schema, so a request could not set them; declare them: infer_signature(input, output, params={...})"
        )
    examples = None
    mapped = recorded
    output_mapping = None
    outputs_any = recorded is not None and recorded.outputs is not None and is_any_schema(recorded.outputs)
    if recorded is not None and recorded.outputs is not None and may_be_a_scalar_prediction(recorded.outputs):
        # One unnamed output column: the prediction may be one value for the whole input, mapped as a scalar.
        prediction = _predict_example(adapter, input_example, recorded.inputs, example_params)
        examples = {"input": input_example, "output": prediction}
    if recorded is None or recorded.outputs is None or outputs_any:
        schema = recorded.inputs if recorded is not None else input_schema(input_example)
        prediction = _predict_example(adapter, input_example, schema, example_params)
        if signature is False:
            _refuse_unframed_prediction(adapter, input_example, prediction, example_params)
        inferred = infer_signature(input_example, prediction, params=example_params)
        examples = {"input": input_example, "output": prediction}
        # signature=False records none and maps the inferred one; a recorded signature keeps its inputs and params
        mapped = inferred if recorded is None else ModelSignature(recorded.inputs, inferred.outputs, recorded.params)
        if signature is None:  # MLflow's own inference, recorded
            model_meta.signature = mapped
        else:
            output_mapping = {
                "from": "the example's prediction",
                "why": _why_outputs_from_example(recorded, outputs_any),
                "how": "the output schema MLflow's infer_signature gives for the prediction of the input example; "
                "the MLflow model's own signature is left as given",
            }
    if mapped.params is not None and PARAMS_CHANNEL in {spec.name for spec in mapped.params.params}:
        raise InvalidArgumentError(
            f"The params schema declares a parameter `{PARAMS_CHANNEL}`: that request parameter carries all of a "
            "request's params as JSON text (docs/request-parameters.md), so a request could not set it; rename it"
        )
    layout = layout_from_signature(mapped, framework.flavor, examples, example_columns(input_example, mapped.inputs))
    return adapter, (False if signature is False else model_meta.signature), mapped, layout, output_mapping


def _why_outputs_from_example(recorded, outputs_any):
    if recorded is None:
        return "the MLflow model records no signature"
    if outputs_any:
        return "the signature's outputs are Any (MLflow could not infer their type)"
    return "the signature has no outputs"


def _predict_example(adapter, input_example, schema, params):
    """The prediction of ``input_example`` as MLflow's schema enforcement gives it to the model for the input
    ``schema`` (records, a list, a dict of scalars or a scalar as a DataFrame: ``_examples``), on a copy: a model
    may change its input (a transformer adding a column in place), never the caller's example. A dict of
    equal-length lists that MLflow makes one row of Array cells, which the model cannot predict, is refused with the
    remedy: the caller most likely meant one row per item."""
    try:
        return _as_plain(_predict(adapter, for_prediction(copy.deepcopy(input_example), schema), "example", params))
    except ValidationError as error:
        meant_rows = lists_in_one_row(input_example, schema)
        if meant_rows is None:
            raise ExamplePredictionError(str(error)) from error.__cause__
        raise InvalidArgumentError(
            f"{meant_rows}, which the model failed to predict ({error.__cause__!r}); {DATAFRAME_REMEDY}"
        ) from error.__cause__


def _refuse_unframed_prediction(adapter, input_example, framed_prediction, params):
    """Without a signature MLflow enforces nothing: ``pyfunc.predict`` hands the model its input as it is given,
    while a Triton request reaches it as the columns (or tensors) the mapping decodes, as MLflow's scoring server
    builds them. Where the two differ for the example (a text given as a str, a dict of lists), no request can be
    answered like ``pyfunc.predict`` of the same value, so the model is refused with the remedy."""
    try:
        as_given = _as_plain(_predict(adapter, copy.deepcopy(input_example), "example as given", params))
    except ValidationError as error:
        differ = f"the example as given fails to predict ({error.__cause__!r})"
    else:
        if _same_prediction(as_given, framed_prediction):
            return
        differ = "the two predictions of the example differ"
    raise ValidationError(
        f"The model has no signature, so MLflow hands predict the input as it is given (here a "
        f"{type(input_example).__name__}), while a Triton request reaches it as the "
        f"{type(for_prediction(copy.deepcopy(input_example), input_schema(input_example))).__name__} MLflow's "
        f"schema inference gives for it, and {differ}; log the model with a "
        "signature (infer_signature(input, prediction)), so that MLflow hands both the same value, or give an input "
        "that is already a DataFrame or an array (input_example=; mlflow-triton add-repository --input FILE)"
    )


def _same_prediction(first, second):
    """Whether two predictions are equal in type, shape and value (NaN equal to NaN)."""
    if type(first) is not type(second):
        return False
    if isinstance(first, (pd.DataFrame, pd.Series)):
        return first.equals(second) and list(first.dtypes if first.ndim == 2 else [first.dtype]) == list(
            second.dtypes if second.ndim == 2 else [second.dtype]
        )
    if isinstance(first, np.ndarray):
        return (
            first.shape == second.shape
            and first.dtype == second.dtype
            and bool(np.array_equal(first, second, equal_nan=first.dtype.kind in "fc"))
        )
    try:
        return bool(first == second)
    except (TypeError, ValueError):
        return repr(first) == repr(second)


def _predict(adapter, model_input, what, params=None):
    try:
        return adapter.predict(model_input) if params is None else adapter.predict(model_input, params=params)
    except MlflowTritonError:
        raise
    except Exception as error:
        raise ValidationError(f"Prediction of the {what} failed: {type(error).__name__}: {error}") from error


def _as_plain(prediction):
    """Predictions MLflow's signature inference understands (torch tensors -> numpy)."""
    if hasattr(prediction, "detach") and hasattr(prediction, "cpu"):
        return prediction.detach().cpu().numpy()
    return prediction


def _example_tensors(layout, input_example):
    """The example (as ``_examples.for_request`` gives it) as the Triton tensors a client sends, checked by
    decoding them back."""
    input_codec, _ = codecs_for(layout)
    try:
        tensors = input_codec.to_tensors(input_example)
        input_codec.from_tensors(tensors)
    except MlflowTritonError as error:
        raise ValidationError(f"The input example does not fit the signature's tensors: {error}") from None
    return tensors


def _validate_in_memory(layout, tensors, adapter, device, params=None):
    """Decode the example tensors with the runtime codecs, predict in memory, encode the outputs."""
    input_codec, output_codec = codecs_for(layout)
    # Decoded from copies: the arrays may share memory with the caller's example and the shipped request.
    decoded = input_codec.from_tensors({name: array.copy() for name, array in tensors.items()})
    prediction = _predict(adapter, decoded, "decoded example", params)
    try:
        outputs = output_codec.to_tensors(prediction)
    except MlflowTritonError as error:
        raise ValidationError(f"The prediction does not fit the signature's output tensors: {error}") from None
    return {"mode": "in-memory", "device": device, "outputs": outputs}


def _validate_saved_artifact(layout, tensors, artifact):
    """The same check on a CPU reload of the copied artifact, in a clean subprocess."""
    outputs = _saved_check.predict_saved_artifact(artifact, layout, tensors)
    return {"mode": "saved-artifact", "device": "cpu", "outputs": outputs}


def _copy_native_package(source, destination):
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


def _write_repository(
    repository,
    model_name,
    layout,
    device,
    tensors,
    validation,
    custom_code_warnings,
    batching=_batching.NO_BATCHING,
    batching_proof=None,
    example_params=None,
    lineage=None,
    output_mapping=None,
):
    config = _config.build_config(model_name, layout, device, batching.max_queue_delay_microseconds)
    _config.write_config(config, repository / "config.pbtxt")
    (repository / VERSION_DIRECTORY / "model.py").write_text(_model_py.compose_model_py(), encoding="utf-8")
    _write_requirements(repository)
    datatypes = {d.name: d.data_type for d in layout.inputs}
    contents = {f.tensor: f.content for f in layout.contract.inputs.fields}
    request_files = _requests.write_request(
        repository,
        _config.wire_arrays(config, "input", tensors),
        datatypes,
        contents,
        {d.name: d.data_type for d in layout.outputs},
        {f.tensor: f.content for f in layout.contract.outputs.fields},
        parameters=_requests.wire_parameters(example_params),
    )
    report = {
        "mode": validation["mode"],
        "saved_artifact_checked": validation["mode"] == "saved-artifact",
        "validation_device": validation["device"],
        "target_device": device,
        "tensor_mapping": {
            "validated": True,
            "where": "local",
            "how": "example encoded to Triton tensors, decoded by the runtime codecs, predicted, "
            "prediction encoded to the configured outputs",
            "outputs": {name: list(array.shape) for name, array in validation["outputs"].items()},
        },
        "triton": {
            "validated": False,
            "note": "logging does not start Triton; run `mlflow-triton check <model URI>` to validate on a real server",
        },
        "request_files": request_files,
        "warnings": list(custom_code_warnings),
        "mlflow_version": mlflow.__version__,
        "runtime_version": RUNTIME_VERSION,
        "mapping_version": layout.contract.version,
    }
    if lineage is not None:
        report["source"] = lineage
    if output_mapping is not None:
        report["output_mapping"] = output_mapping
    if batching.enabled:
        report["batching"] = {
            "max_batch_size": batching.max_batch_size,
            "max_queue_delay_microseconds": batching.max_queue_delay_microseconds,
            "row_independence": batching_proof,
            "zero_row_requests": _batching.ZERO_ROW_REQUESTS,
        }
    (repository / "validation.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def _write_requirements(repository):
    """Write the repository's lean ``requirements.txt`` (``_serving_requirements``) from the MLflow package's."""
    native = repository / VERSION_DIRECTORY / ARTIFACT_DIRECTORY / "requirements.txt"
    lines = native.read_text(encoding="utf-8").splitlines() if native.exists() else []
    lean = _serving_requirements.serving_requirements(lines, mlflow.__version__, _serving_requirements.mlflow_bounds())
    (repository / "requirements.txt").write_text(
        _serving_requirements.SERVING_REQUIREMENTS_HEADER + "".join(f"{line}\n" for line in lean), encoding="utf-8"
    )


def _add_triton_flavor(package, model_name, mapping_version=MAPPING_VERSION):
    mlmodel_path = package / "MLmodel"
    model = Model.load(str(mlmodel_path))
    add_triton_flavor(model, model_name, mapping_version)
    model.save(str(mlmodel_path))


def add_triton_flavor(model, model_name, mapping_version=MAPPING_VERSION):
    model.add_flavor(
        FLAVOR_NAME,
        data=f"{REPOSITORY_DIRECTORY}/{model_name}",
        model_name=model_name,
        mapping_version=mapping_version,
        runtime_version=RUNTIME_VERSION,
    )


class _AdoptPreparedPackage:
    """The ``flavor`` handed to ``Model.log``: moves the prepared package into place.

    ``Model.log`` supplies the ``Model`` that carries the LoggedModel's ids; the
    prepared MLmodel's flavors, signature and example are carried over to it.
    """

    def __init__(self, flavor, package):
        self.__name__ = f"mlflow_triton.{flavor}"
        self._package = package
        self._model_id = None

    def save_model(self, path, mlflow_model, validate_serving_input=False):
        self._model_id = mlflow_model.model_id
        prepared = Model.load(str(self._package / "MLmodel"))
        shutil.move(str(self._package), path)
        for attribute in ("flavors", "signature", "saved_input_example_info", "mlflow_version"):
            setattr(mlflow_model, attribute, getattr(prepared, attribute))
        mlflow_model.save(os.path.join(path, "MLmodel"))

    @property
    def model_id(self):
        """The id of the LoggedModel ``Model.log`` created, once it called ``save_model``."""
        return self._model_id
