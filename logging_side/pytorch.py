"""``mlflow_triton.pytorch``: log an eval-mode PyTorch model with a Triton repository.

Use ``log_model`` instead of ``mlflow.pytorch.log_model``. The MLflow package
holds the native ``pytorch`` and ``python_function`` flavors, a ``triton``
flavor pointing at ``model_repository/<triton_model_name>/`` and
``architecture.json`` (structure, shapes and dtypes; no weights).

The model is packaged with Python pickle by default (``serialization_format=
"pickle"``), not exported to PT2: the classes of a custom architecture must be
importable when the artifact is reloaded, so package them with ``code_paths``
(``validate_saved_model=True`` proves it in a clean interpreter).
"""

from __future__ import annotations

import inspect
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from mlflow.models.model import DEFAULT_AWAIT_MAX_SLEEP_SECONDS
from mlflow.pyfunc import PyFuncModel

from . import _architecture, _custom_code, _framework, _options, _packaging, flavors, mlflow_private
from ._repository_files import FLAVOR_NAME as TRITON_FLAVOR_NAME
from .errors import InvalidArgumentError, require_extra

if TYPE_CHECKING:
    from mlflow.models import Model, ModelSignature
    from mlflow.models.model import ModelInfo
    from mlflow.models.utils import ModelInputExample
    from torch.nn import Module

FLAVOR_NAME = "pytorch"
_DEFAULT_SERIALIZATION_FORMAT = "pickle"
# nn.Module attributes holding tensors and submodules (torch, a default requirement, and covered by modules()).
_TENSOR_ATTRIBUTES = frozenset({"_parameters", "_buffers", "_modules"})

__all__ = ["FLAVOR_NAME", "TRITON_FLAVOR_NAME", "log_model", "save_model"]


def _import_torch() -> ModuleType:
    """``torch``, or a ``MissingExtraError`` that names the extra to install (imported on first use)."""
    return require_extra(
        "torch", "torch", "mlflow_triton.pytorch needs PyTorch", "or the torch version your model needs"
    )


def _mlflow_pytorch() -> ModuleType:
    _import_torch()
    import mlflow.pytorch  # imports torch itself: loaded on first use, not with this module

    return mlflow.pytorch


def _check_eval_mode(model: Module, what: str = "model") -> None:
    """Reject a module with any submodule still in training mode (dropout, batch norm...)."""
    in_training = [name for name, module in model.named_modules() if module.training]
    if not in_training:
        return
    submodules = [name for name in in_training if name]
    if submodules:
        raise InvalidArgumentError(
            f"Submodule `{submodules[0]}` of the {what} is in training mode; call model.eval() before logging"
        )
    raise InvalidArgumentError(
        f"The {what} ({type(model).__name__}) is in training mode; call model.eval() before logging"
    )


def _module_device(model: Module) -> str:
    """The single device holding the module's parameters and buffers ("cpu" when it has none).

    A module spread over several devices (sharded / device-mapped) needs a
    separate serving adapter and is rejected.
    """
    devices: list[str] = []
    for tensor in [*model.parameters(), *model.buffers()]:
        device = str(tensor.device)
        if device not in devices:
            devices.append(device)
    if len(devices) > 1:
        raise InvalidArgumentError(
            f"The model's tensors are spread over several devices ({', '.join(devices)}); sharded or "
            "device-mapped models need a separate serving adapter; move the model to one device"
        )
    return devices[0] if devices else "cpu"


class _PyTorch(_framework.Framework):
    flavor = FLAVOR_NAME
    model_argument = "pytorch_model"
    supports_gpu = True
    describes_architecture = True
    dict_input = False
    exporter = "pytorch"

    def native_module(self) -> ModuleType:
        return _mlflow_pytorch()

    def check_native_options(self, options: dict[str, Any]) -> None:
        # mlflow.pytorch.save_model passes its remaining keyword arguments to torch.save.
        torch_save_options = set(inspect.signature(_import_torch().save).parameters) - {"obj", "f"}
        super().check_native_options({k: v for k, v in options.items() if k not in torch_save_options})

    def check_model(self, model: Any) -> None:
        torch = _import_torch()
        if not isinstance(model, torch.nn.Module):
            raise InvalidArgumentError(
                f"pytorch_model must be a torch.nn.Module (eager or scripted), got {type(model).__name__}"
            )
        _check_eval_mode(model)
        _module_device(model)

    def native_options(self, options: dict[str, Any]) -> dict[str, Any]:
        options = dict(options)
        if options.get("serialization_format") is None and not options.get("export_model"):
            options["serialization_format"] = _DEFAULT_SERIALIZATION_FORMAT
        return _framework.with_default_requirements(
            options, lambda _options: _mlflow_pytorch().get_default_pip_requirements()
        )

    def current_device(self, model: Module) -> str:
        return _module_device(model)

    def pyfunc_adapter(self, model: Module, options: dict[str, Any], model_meta: Model) -> PyFuncModel:
        wrapper = mlflow_private.pytorch_wrapper(model, self.current_device(model))
        return PyFuncModel(model_meta, wrapper)

    def architecture(self, model: Module, package_path: Any, declared_init_kwargs: Any) -> dict[str, Any]:
        return _architecture.describe_pytorch(model, package_path, declared_init_kwargs)

    def custom_code_warnings(self, model: Module, options: dict[str, Any]) -> list[str]:
        """The module classes a pickled model needs at load time (an exported model needs none)."""
        if options.get("export_model") or options.get("serialization_format") != _DEFAULT_SERIALIZATION_FORMAT:
            return []
        pickle_module = options.get("pickle_module")
        name = getattr(pickle_module, "__name__", "cloudpickle") if pickle_module is not None else "cloudpickle"
        return _custom_code.unimportable_code_warnings(
            [_custom_code.CodeReference.of("class", type(module)) for module in model.modules()],
            options.get("code_paths"),
            main_stored_by_value=pickle_module is None or _pickles_by_value(pickle_module),
            serializer=f"pickle_module={name}",
            remedy="or leave pickle_module unset (MLflow's cloudpickle stores __main__ classes by value)",
        )

    def requirement_sources(self, model: Any, options: dict[str, Any]) -> list[Any]:
        """The module classes and attribute values a pickled model needs at load time, and the pickle module."""
        if options.get("export_model") or options.get("serialization_format") != _DEFAULT_SERIALIZATION_FORMAT:
            return []
        sources = [options["pickle_module"]] if options.get("pickle_module") is not None else []
        for module in model.modules():
            sources.append(type(module))
            sources.extend(_attribute_values(module))
        return sources


def _attribute_values(module: Any) -> list[Any]:
    """The values a module's attributes hold (containers opened one level), besides parameters and submodules."""
    values: list[Any] = []
    for name, value in vars(module).items():
        if name in _TENSOR_ATTRIBUTES:
            continue
        if isinstance(value, dict):
            items = list(value.values())
        else:
            items = list(value) if isinstance(value, (list, tuple, set)) else [value]
        values.extend(item for item in items if item is not None)
    return values


def _pickles_by_value(pickle_module: Any) -> bool:
    """Whether ``torch.save(..., pickle_module=...)`` stores ``__main__`` classes by value: cloudpickle's Pickler.

    torch.save pickles with ``pickle_module.Pickler``; ``mlflow.pytorch.pickle_module`` is cloudpickle's
    under another module name, so the Pickler is compared, not the name.
    """
    import cloudpickle  # MLflow's PyTorch flavor requires it

    pickler = getattr(pickle_module, "Pickler", None)
    return isinstance(pickler, type) and issubclass(pickler, cloudpickle.Pickler)


_FRAMEWORK = flavors.register(_PyTorch())


@_options.documented
def log_model(
    pytorch_model: Module,
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
    """Log an eval-mode ``torch.nn.Module`` (weights loaded) with its Triton repository.

    A model with any submodule in training mode is rejected before anything is written. The example is predicted
    through MLflow's PyTorch pyfunc wrapper on the model's current device (the model is neither moved nor
    reloaded). Dimensions other than the first stay fixed unless an explicit ``signature`` declares them ``-1``.
    Requirements default to ``mlflow.pytorch.get_default_pip_requirements()`` (MLflow's inference is skipped):
    add custom dependencies yourself.

    Args:
        pytorch_model: The module, in eval mode, its weights loaded.
        input_example: {input_example} For PyTorch: a numpy array.
        {destination}
        signature: {signature}
        {triton}
        architecture_init_kwargs: JSON-serializable constructor arguments, recorded in architecture.json as
            declared, unverified.
        **kwargs: Passed to ``mlflow.pytorch.save_model`` (``code_paths``, ``pip_requirements``,
            ``extra_pip_requirements``, ``serialization_format`` (default ``"pickle"``), ``pickle_module``,
            ``extra_files``, ...).

    Returns:
        MLflow's ``ModelInfo`` of the logged model.
    """
    arguments = locals()
    options = _architecture.with_init_kwargs(kwargs, architecture_init_kwargs)
    destination, triton = _options.Destination.of(arguments), _options.TritonOptions.of(arguments)
    return _packaging.log_model(_FRAMEWORK, pytorch_model, input_example, signature, destination, triton, options)


@_options.documented
def save_model(
    pytorch_model: Module,
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
        pytorch_model: The module, in eval mode.
        path: The new directory.
        input_example: {input_example}
        signature: {signature}
        {triton}
        architecture_init_kwargs: Recorded in architecture.json as declared.
        **kwargs: Passed to ``mlflow.pytorch.save_model``.
    """
    triton = _options.TritonOptions.of(locals())
    options = _architecture.with_init_kwargs(kwargs, architecture_init_kwargs)
    _packaging.save_model(_FRAMEWORK, pytorch_model, path, input_example, signature, triton, options)
