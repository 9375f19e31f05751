"""``mlflow_triton.transformers``: log a Transformers pipeline with a Triton repository.

Use ``log_model`` instead of ``mlflow.transformers.log_model``. The MLflow
package holds the native ``transformers`` and ``python_function`` flavors
(model, tokenizer/processor, chat template and configuration saved by MLflow),
a ``triton`` flavor pointing at ``model_repository/<triton_model_name>/`` and
``architecture.json`` (component classes, structure, shapes and dtypes; no
weights).

Serving follows MLflow's transformers pyfunc interface for the pipeline's task
(text-generation returns strings, text-classification ``label``/``score``
columns), which can differ from the raw pipeline or ``forward()`` outputs.

MLflow's LLM inference tasks (``task="llm/v1/chat"``, ``"llm/v1/completions"``,
``"llm/v1/embeddings"``) log with the OpenAI-style signature MLflow sets for
them: the request's generation fields (``max_tokens``, ``temperature``, ...) are
optional input columns a request may leave out, and the answer is one row per
request row, with ``id`` and ``created`` filled by MLflow on every call.
"""

from __future__ import annotations

import importlib.util
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from mlflow.models.model import DEFAULT_AWAIT_MAX_SLEEP_SECONDS
from mlflow.pyfunc import PyFuncModel

from . import _architecture, _framework, _options, _packaging, flavors, mlflow_private
from ._repository_files import FLAVOR_NAME as TRITON_FLAVOR_NAME
from .errors import BatchingRefusedError, InvalidArgumentError, require_extra
from .pytorch import _check_eval_mode, _module_device

if TYPE_CHECKING:
    from mlflow.models import Model, ModelSignature
    from mlflow.models.model import ModelInfo
    from mlflow.models.utils import ModelInputExample
    from transformers import Pipeline

FLAVOR_NAME = "transformers"
_LLM_INFERENCE_TASK_PREFIX = "llm/"
# Where mlflow.transformers.save_model records an LLM task in the flavor configuration its pyfunc reads.
_LLM_INFERENCE_TASK_KEY = "inference_task"

__all__ = ["FLAVOR_NAME", "TRITON_FLAVOR_NAME", "log_model", "save_model"]


def _llm_task(options: dict[str, Any]) -> str | None:
    """``options["task"]`` when it names one of MLflow's LLM inference tasks (``llm/v1/...``), else None."""
    task = options.get("task")
    return task if isinstance(task, str) and task.startswith(_LLM_INFERENCE_TASK_PREFIX) else None


def _import_transformers() -> ModuleType:
    """``transformers``, or a ``MissingExtraError`` that names the extra to install (imported on first use)."""
    return require_extra(
        "transformers",
        "transformers",
        "mlflow_triton.transformers needs Hugging Face Transformers",
        "or the versions your model needs",
    )


def _mlflow_transformers() -> ModuleType:
    _import_transformers()
    import mlflow.transformers

    return mlflow.transformers


class _Transformers(_framework.Framework):
    flavor = FLAVOR_NAME
    model_argument = "transformers_model"
    supports_gpu = True
    describes_architecture = True
    device_index = True
    exporter = "text"

    def native_module(self) -> ModuleType:
        return _mlflow_transformers()

    def check_native_options(self, options: dict[str, Any]) -> None:
        super().check_native_options(options)
        if options.get("save_pretrained") is False or options.get("base_model_path") is not None:
            raise InvalidArgumentError(
                "save_pretrained=False and base_model_path leave the weights outside the package; the Triton "
                "repository must be self-contained (it loads offline), so save the weights with the model"
            )

    def native_options(self, options: dict[str, Any]) -> dict[str, Any]:
        options = dict(options)
        if isinstance(options.get("model_config"), dict):
            options["model_config"] = dict(options["model_config"])  # MLflow may add to it while saving
        return options

    def task_signature(self, options: dict[str, Any]) -> ModelSignature | None:
        """The signature MLflow sets for an LLM inference task (it refuses any other), else None."""
        task = _llm_task(options)
        if task is None:
            return None
        from mlflow.transformers.llm_inference_utils import infer_signature_from_llm_inference_task

        try:
            return infer_signature_from_llm_inference_task(task)
        except KeyError:
            raise InvalidArgumentError(
                f"task {task!r} is not one of MLflow's LLM inference tasks; supported: llm/v1/chat, "
                "llm/v1/completions, llm/v1/embeddings (or the pipeline's own task)"
            ) from None

    def check_model(self, model: Any) -> None:
        transformers = _import_transformers()
        if not isinstance(model, transformers.Pipeline):
            raise InvalidArgumentError(
                "transformers_model must be a transformers.Pipeline with its tokenizer/processor, got "
                f"{type(model).__name__}; build one with transformers.pipeline(task, model=..., tokenizer=...)"
            )
        if not mlflow_private.transformers_pipeline_has_pyfunc(model):
            raise InvalidArgumentError(
                f"{type(model).__name__} (task {model.task!r}) has no MLflow pyfunc interface, which the Triton "
                "runtime serves through; this pipeline needs a separate serving adapter"
            )
        if hasattr(model.model, "named_modules"):
            _check_eval_mode(model.model, what="pipeline's model")
            _module_device(model.model)

    def check_batching(self, model: Pipeline, options: dict[str, Any], params_schema: Any) -> None:
        # MLflow calls the pipeline with its model_config, overridden by a request's params: a batch_size there pads
        # the texts of a joined batch to one length, and that changed a score by a float32 ulp in 1 of 150 random
        # batches of a tiny BERT (docs/batching.md) while a 3-text example showed nothing. The proof cannot rule it
        # out, so batching is refused; without batch_size the pipeline runs text by text and joins exactly.
        model_config = options.get("model_config")
        configured = model_config.get("batch_size") if isinstance(model_config, dict) else None
        declared = params_schema is not None and "batch_size" in {spec.name for spec in params_schema.params}
        if declared or (configured is not None and configured != 1):
            where = "the params schema declares batch_size" if declared else f"model_config has batch_size={configured}"
            raise BatchingRefusedError(
                f"Batching refused: {where}, so the pipeline pads the texts of a joined batch to one length, which "
                "can change their answers in ways no example rules out (docs/batching.md#text-models-padding); "
                "log without batch_size (the pipeline then runs text by text and joined requests answer exactly), "
                "or with max_batch_size=0"
            )

    def current_device(self, model: Pipeline) -> str:
        return str(getattr(model, "device", "cpu"))

    def pyfunc_adapter(self, model: Pipeline, options: dict[str, Any], model_meta: Model) -> PyFuncModel:
        """MLflow's ``_TransformersWrapper`` around the in-memory pipeline, configured as saving will."""
        from mlflow.transformers.flavor_config import build_flavor_config

        flavor_config = build_flavor_config(model, options.get("processor"), options.get("torch_dtype"))
        task = _llm_task(options)
        if task is not None:
            _check_llm_task_fits(task, model.task)
            flavor_config[_LLM_INFERENCE_TASK_KEY] = task
        model_config = dict(options.get("model_config") or {})
        prompt_template = options.get("prompt_template")
        if prompt_template is not None and model.task == "text-generation":
            model_config.setdefault("return_full_text", False)  # what mlflow.transformers.save_model records
        wrapper = mlflow_private.transformers_wrapper(
            model, flavor_config=flavor_config, model_config=model_config, prompt_template=prompt_template
        )
        return PyFuncModel(model_meta, wrapper)

    def save_native(
        self, model: Pipeline, path: Any, signature: ModelSignature, input_example: Any, options: dict[str, Any]
    ) -> None:
        # The defaults depend on the model (its engine, PEFT) and the pipeline (an image processor), so they are
        # settled here.
        reads_images = getattr(model, "image_processor", None) is not None
        options = _framework.with_default_requirements(
            options, lambda _options: _default_requirements(model.model, reads_images=reads_images)
        )
        if _labels_are_an_array(model, signature):
            # MLflow saves a zero-shot example's candidate_labels as JSON text (for its default string signature),
            # which its own schema enforcement then refuses for an Array column: the example is saved as given.
            super().save_native(model, path, signature, None, options)
            _framework.save_example(path, input_example)
            return
        super().save_native(model, path, signature, input_example, options)

    def architecture(self, model: Pipeline, package_path: Any, declared_init_kwargs: Any) -> dict[str, Any]:
        return _architecture.describe_transformers(model, package_path, declared_init_kwargs)


def _check_llm_task_fits(task: str, pipeline_task: str) -> None:
    """MLflow's own refusal of an LLM task the pipeline does not support, before anything is saved, in the error
    family (its message names the tasks the pipeline takes)."""
    from mlflow.exceptions import MlflowException

    try:
        mlflow_private.validate_llm_inference_task(task, pipeline_task)
    except MlflowException as error:
        raise InvalidArgumentError(
            f"task {task!r}: {error.message} (llm/v1/chat and llm/v1/completions take a text-generation pipeline, "
            "llm/v1/embeddings a feature-extraction one)"
        ) from None


def _labels_are_an_array(model: Any, signature: Any) -> bool:
    """A zero-shot classification pipeline whose signature types ``candidate_labels`` as an Array."""
    if getattr(model, "task", None) != "zero-shot-classification" or not signature:
        return False
    from mlflow.types.schema import Array

    inputs = signature.inputs
    spec = inputs.input_dict().get("candidate_labels") if inputs is not None and inputs.has_input_names() else None
    return spec is not None and isinstance(spec.type, Array)


def _default_requirements(model: Any, *, reads_images: bool = False) -> list[str]:
    """MLflow's default transformers requirements for ``model``, pinned to the installed versions.

    ``mlflow.transformers.get_default_pip_requirements`` lists torchvision (and
    accelerate where installed) for every PyTorch model and fails where
    torchvision is not installed; the same list is then pinned without the
    optional packages that are absent here. Without torchvision, a pipeline that
    ``reads_images`` (it has an image processor) gets Pillow, which torchvision
    would have brought: Transformers' "vision" backend, which such a pipeline and
    its processor need to load and to read an image (a base64 PNG).
    """
    mlflow_transformers = _mlflow_transformers()
    try:
        return mlflow_transformers.get_default_pip_requirements(model)
    except ImportError:
        pass
    from mlflow.transformers.peft import is_peft_model

    packages = ["transformers", mlflow_private.transformers_engine(model)]
    if packages[-1] == "torch":
        packages += [name for name in ("torchvision", "accelerate") if importlib.util.find_spec(name)]
    if is_peft_model(model):
        packages.append("peft")
    if reads_images and "torchvision" not in packages:
        packages.append("pillow")
    return [mlflow_private.pinned_requirement(package) for package in packages]


_FRAMEWORK = flavors.register(_Transformers())


@_options.documented
def log_model(
    transformers_model: Pipeline,
    *,
    input_example: ModelInputExample,
    name: str = "model",
    registered_model_name: str | None = None,
    await_registration_for: int = DEFAULT_AWAIT_MAX_SLEEP_SECONDS,
    run_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    tags: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    signature: ModelSignature | None = None,
    device: Literal["cpu", "gpu"] = "cpu",
    triton_model_name: str | None = None,
    validate_saved_model: bool = False,
    architecture_init_kwargs: dict[str, Any] | None = None,
    max_batch_size: int = 0,
    max_queue_delay_microseconds: int | None = None,
    zero_row_guard: bool = True,
    protocol: Literal["auto", "tensors", "mlflow"] = "auto",
    stream: bool = False,
    **kwargs: Any,
) -> ModelInfo:
    """Log a Transformers pipeline (model plus tokenizer/processor) with its Triton repository.

    The example is predicted through MLflow's transformers pyfunc wrapper around the pipeline, on the pipeline's
    current device (nothing is reloaded). Requirements default to MLflow's transformers defaults for the model
    (MLflow's inference is skipped). Measured on a text pipeline, ``max_queue_delay_microseconds`` pays only where
    16 or more clients call at once (1 ms there), and not otherwise.

    Args:
        transformers_model: The pipeline.
        input_example: {input_example} For a pipeline: a task input such as ``["Example input"]``.
        {destination}
        signature: {signature}
        {triton}
        architecture_init_kwargs: Recorded in architecture.json as declared, unverified.
        **kwargs: Passed to ``mlflow.transformers.save_model``: ``task``, ``processor``, ``model_config``
            (generation settings such as ``{"max_new_tokens": 32, "do_sample": False}``), ``prompt_template``,
            ``code_paths``, ``pip_requirements``, ``extra_pip_requirements``, ... (``params`` are tracking
            metadata, never generation settings).

    Returns:
        MLflow's ``ModelInfo`` of the logged model.
    """
    arguments = locals()
    options = _architecture.with_init_kwargs(kwargs, architecture_init_kwargs)
    destination, triton = _options.Destination.of(arguments), _options.TritonOptions.of(arguments)
    return _packaging.log_model(_FRAMEWORK, transformers_model, input_example, signature, destination, triton, options)


@_options.documented
def save_model(
    transformers_model: Pipeline,
    path: str | os.PathLike[str],
    *,
    input_example: ModelInputExample,
    signature: ModelSignature | None = None,
    device: Literal["cpu", "gpu"] = "cpu",
    triton_model_name: str | None = None,
    validate_saved_model: bool = False,
    max_batch_size: int = 0,
    max_queue_delay_microseconds: int | None = None,
    zero_row_guard: bool = True,
    protocol: Literal["auto", "tensors", "mlflow"] = "auto",
    stream: bool = False,
    architecture_init_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> None:
    """Write the same package as ``log_model`` to a new local directory ``path`` (it must not exist).

    Args:
        transformers_model: The pipeline.
        path: The new directory.
        input_example: {input_example}
        signature: {signature}
        {triton}
        architecture_init_kwargs: Recorded in architecture.json as declared.
        **kwargs: Passed to ``mlflow.transformers.save_model``.
    """
    triton = _options.TritonOptions.of(locals())
    options = _architecture.with_init_kwargs(kwargs, architecture_init_kwargs)
    _packaging.save_model(_FRAMEWORK, transformers_model, path, input_example, signature, triton, options)
