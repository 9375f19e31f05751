"""``mlflow_triton.pyfunc``: log a custom pyfunc model with a Triton repository.

Use ``log_model`` instead of ``mlflow.pyfunc.log_model`` for the three kinds of
custom models MLflow's pyfunc flavor takes: a ``mlflow.pyfunc.PythonModel``
instance (or a function), a model from code (``python_model="model.py"``, a
file that calls ``mlflow.models.set_model``), and a ``loader_module`` with its
``data_path``. The MLflow package holds the ``python_function`` flavor plus a
``triton`` flavor pointing at ``model_repository/<triton_model_name>/``.

The example is predicted in memory before anything is written, as MLflow will
load the model: a ``PythonModel`` is copied through cloudpickle (as MLflow
stores it), given a context with the artifacts' local paths and the
``model_config``, and ``load_context`` runs before ``predict``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pathlib
import shutil
import tempfile
import weakref
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import cloudpickle
import mlflow.pyfunc
from mlflow.models.model import DEFAULT_AWAIT_MAX_SLEEP_SECONDS
from mlflow.pyfunc import PyFuncModel
from mlflow.pyfunc.model import PythonModel, PythonModelContext

from . import _custom_code, _framework, _options, _packaging, flavors, mlflow_private
from ._repository_files import FLAVOR_NAME as TRITON_FLAVOR_NAME
from .errors import InvalidArgumentError, ValidationError

if TYPE_CHECKING:
    from mlflow.models import Model, ModelSignature
    from mlflow.models.model import ModelInfo
    from mlflow.models.utils import ModelInputExample

FLAVOR_NAME = mlflow.pyfunc.FLAVOR_NAME

__all__ = ["FLAVOR_NAME", "TRITON_FLAVOR_NAME", "log_model", "save_model"]


class _PythonFunction(_framework.Framework):
    flavor = FLAVOR_NAME
    model_argument = "python_model"
    marks_native_models = False  # every MLflow model has the python_function flavor

    def native_module(self) -> ModuleType:
        return mlflow.pyfunc

    def native_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return _framework.with_default_requirements(options, lambda _: mlflow.pyfunc.get_default_pip_requirements())

    def check_model(self, model: Any) -> None:
        if model is not None and not isinstance(model, (PythonModel, str, os.PathLike)) and not callable(model):
            raise InvalidArgumentError(
                f"python_model must be a mlflow.pyfunc.PythonModel, a function, or the path of a Python file "
                f"that calls mlflow.models.set_model (models from code), got {type(model).__name__}"
            )

    def save_native(
        self, model: object, path: object, signature: object, input_example: object, options: dict[str, object]
    ) -> None:
        python_model = os.fspath(model) if isinstance(model, os.PathLike) else model
        mlflow.pyfunc.save_model(
            path=str(path), python_model=python_model, signature=signature, input_example=input_example, **options
        )

    def pyfunc_adapter(self, model: Any, options: dict[str, Any], model_meta: Model) -> PyFuncModel:
        model_config = options.get("model_config")
        if isinstance(model_config, (str, os.PathLike)):
            model_config = mlflow_private.model_config_from_file(os.fspath(model_config))
        if options.get("loader_module") is not None:
            if model is not None:
                raise InvalidArgumentError("python_model and loader_module exclude each other: pass one of them")
            return PyFuncModel(model_meta, _loaded_by_module(options["loader_module"], options.get("data_path")))
        if model is None:
            raise InvalidArgumentError(
                "python_model is required (a PythonModel, a function or a models-from-code file), "
                "or loader_module= with data_path="
            )
        python_model = _in_memory_copy(model, model_config, model_meta.signature)
        with tempfile.TemporaryDirectory(prefix="mlflow-triton-artifacts-") as downloads:
            artifacts = _local_artifacts(options.get("artifacts") or {}, downloads)
            context = PythonModelContext(artifacts=artifacts, model_config=model_config or {})
            try:
                python_model.load_context(context)
            except Exception as error:
                raise ValidationError(
                    f"python_model.load_context failed: {type(error).__name__}: {error}; it runs before predict "
                    "with context.artifacts (the artifacts= names and their local paths) and context.model_config"
                ) from error
            kept = _keep(downloads)
        adapter = PyFuncModel(
            model_meta, mlflow_private.python_model_wrapper(python_model, context, model_meta.signature)
        )
        if kept is not None:
            weakref.finalize(adapter, shutil.rmtree, kept, True)
        return adapter

    def custom_code_warnings(self, model: Any, options: dict[str, Any]) -> list[str]:
        if not isinstance(model, PythonModel) and not inspect.isfunction(model):
            return []  # a models-from-code file is stored as code; a loader_module must be in code_paths
        return _custom_code.unimportable_code_warnings(
            [_custom_code.CodeReference.of("class" if isinstance(model, PythonModel) else "function", _code(model))],
            options.get("code_paths"),
            main_stored_by_value=True,
            serializer="cloudpickle",
            remedy="or log it as a model from code: python_model='model.py'",
        )

    def requirement_sources(self, model: Any, options: dict[str, Any]) -> list[Any]:
        return [model] if isinstance(model, PythonModel) or inspect.isfunction(model) else []


def _code(model: Any) -> Any:
    return type(model) if isinstance(model, PythonModel) else model


def _in_memory_copy(model: Any, model_config: Any, signature: Any) -> PythonModel:
    """The model as MLflow will load it: a cloudpickle copy, or the object a models-from-code file sets."""
    if isinstance(model, (str, os.PathLike)):
        path = pathlib.Path(model)
        if not path.is_file():
            raise InvalidArgumentError(
                f"python_model {os.fspath(model)!r}: no such file; a model from code is the path of a Python file "
                "that calls mlflow.models.set_model(model)"
            )
        mlflow_private.forget_model_set_by_code()
        try:
            model = mlflow_private.load_model_code(str(path), model_config)
        except Exception as error:
            if mlflow_private.model_set_by_code() is None and "set_model" in str(error):
                raise InvalidArgumentError(
                    f"python_model {str(path)!r} does not call mlflow.models.set_model(model)"
                ) from None
            raise ValidationError(
                f"python_model {str(path)!r}: running the file failed: {type(error).__name__}: {error}"
            ) from error
    else:
        try:
            model = cloudpickle.loads(cloudpickle.dumps(model))
        except Exception as error:
            raise InvalidArgumentError(
                f"python_model cannot be stored with cloudpickle, as MLflow stores it: {type(error).__name__}: "
                f"{error}; create what cannot be pickled in load_context, or log it as a model from code: "
                "python_model='model.py'"
            ) from error
    if not isinstance(model, PythonModel):
        model = mlflow_private.function_python_model(model, signature)
    return model


def _loaded_by_module(loader_module: str, data_path: Any) -> Any:
    """``loader_module._load_pyfunc(data_path)``, as MLflow calls it when loading the saved model."""
    try:
        module = importlib.import_module(loader_module)
    except ImportError as error:
        raise InvalidArgumentError(
            f"loader_module {loader_module!r} cannot be imported here ({error}): MLflow imports it to load the "
            "model; pass its file in code_paths= and make it importable in this interpreter"
        ) from None
    if not hasattr(module, "_load_pyfunc"):
        raise InvalidArgumentError(f"loader_module {loader_module!r} has no _load_pyfunc(data_path) function")
    try:
        return module._load_pyfunc(None if data_path is None else os.fspath(data_path))
    except Exception as error:
        raise ValidationError(
            f"{loader_module}._load_pyfunc(data_path) failed: {type(error).__name__}: {error}"
        ) from error


def _local_artifacts(artifacts: Any, downloads: str) -> dict[str, str]:
    """``{name: local path}`` for ``artifacts`` (local paths as given; other URIs downloaded to ``downloads``)."""
    if not isinstance(artifacts, dict) or not all(isinstance(name, str) for name in artifacts):
        raise InvalidArgumentError("artifacts must be a dict of names to local paths or artifact URIs")
    local = {}
    for name, uri in artifacts.items():
        text = os.fspath(uri)
        if "://" not in text and not text.startswith(("runs:", "models:")):
            if not os.path.exists(text):
                raise InvalidArgumentError(f"artifacts[{name!r}]: {text!r} does not exist")
            local[name] = os.path.abspath(text)
        else:
            local[name] = mlflow.artifacts.download_artifacts(artifact_uri=text, dst_path=os.path.join(downloads, name))
    return local


def _keep(downloads: str) -> str | None:
    """Move what was downloaded out of the temporary directory, which is about to be removed."""
    if not os.listdir(downloads):
        return None
    kept = tempfile.mkdtemp(prefix="mlflow-triton-artifacts-")
    os.rmdir(kept)
    shutil.copytree(downloads, kept)
    return kept


_FRAMEWORK = flavors.register(_PythonFunction())


def _pyfunc_options(
    kwargs: dict[str, Any], artifacts: Any, loader_module: Any, data_path: Any, code_paths: Any, model_config: Any
) -> dict[str, Any]:
    named = dict(
        artifacts=artifacts,
        loader_module=loader_module,
        data_path=data_path,
        code_paths=code_paths,
        model_config=model_config,
    )
    return {**{key: value for key, value in named.items() if value is not None}, **kwargs}


@_options.documented
def log_model(
    python_model: Any = None,
    *,
    input_example: ModelInputExample,
    name: str = "model",
    artifacts: dict[str, str] | None = None,
    loader_module: str | None = None,
    data_path: str | os.PathLike[str] | None = None,
    code_paths: list[str] | None = None,
    model_config: str | dict[str, Any] | None = None,
    registered_model_name: str | None = None,
    await_registration_for: int = DEFAULT_AWAIT_MAX_SLEEP_SECONDS,
    run_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    tags: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    signature: ModelSignature | None = None,
    device: Literal["cpu"] = "cpu",
    triton_model_name: str | None = None,
    validate_saved_model: bool = False,
    max_batch_size: int = 0,
    max_queue_delay_microseconds: int | None = None,
    protocol: Literal["auto", "tensors", "mlflow"] = "auto",
    stream: bool = False,
    zero_row_guard: bool = True,
    **kwargs: Any,
) -> ModelInfo:
    """Log a custom pyfunc model with its Triton repository.

    Requirements default to ``mlflow.pyfunc.get_default_pip_requirements()`` plus the distributions the model's
    class comes from (MLflow's inference is skipped): add what ``load_context`` and ``predict`` import with
    ``extra_pip_requirements``. Batching works as in the framework wrappers.

    Args:
        python_model: A ``PythonModel`` instance, a function, or the path of a models-from-code file; or leave it
            out and pass ``loader_module`` and ``data_path``.
        input_example: {input_example}
        artifacts: Names to local paths or URIs; they reach ``load_context`` as ``context.artifacts``.
        loader_module: A module importable here (its file in ``code_paths``) with ``_load_pyfunc(data_path)``.
        data_path: What ``loader_module`` loads.
        code_paths: Local files and folders the model imports, shipped with it.
        model_config: The model's configuration (a dict or a YAML file), in ``context.model_config``.
        {destination}
        signature: {signature}
        {triton}
        **kwargs: Passed to ``mlflow.pyfunc.save_model`` (``pip_requirements``, ``extra_pip_requirements``,
            ``streamable``, ...).

    Returns:
        MLflow's ``ModelInfo`` of the logged model.
    """
    arguments = locals()
    options = _pyfunc_options(kwargs, artifacts, loader_module, data_path, code_paths, model_config)
    destination, triton = _options.Destination.of(arguments), _options.TritonOptions.of(arguments)
    return _packaging.log_model(_FRAMEWORK, python_model, input_example, signature, destination, triton, options)


@_options.documented
def save_model(
    python_model: Any,
    path: str | os.PathLike[str],
    *,
    input_example: ModelInputExample,
    artifacts: dict[str, str] | None = None,
    loader_module: str | None = None,
    data_path: str | os.PathLike[str] | None = None,
    code_paths: list[str] | None = None,
    model_config: str | dict[str, Any] | None = None,
    signature: ModelSignature | None = None,
    device: Literal["cpu"] = "cpu",
    triton_model_name: str | None = None,
    validate_saved_model: bool = False,
    max_batch_size: int = 0,
    max_queue_delay_microseconds: int | None = None,
    zero_row_guard: bool = True,
    protocol: Literal["auto", "tensors", "mlflow"] = "auto",
    stream: bool = False,
    **kwargs: Any,
) -> None:
    """Write the same package as ``log_model`` to a new local directory ``path`` (it must not exist;
    ``python_model=None`` with ``loader_module=``).

    Args:
        python_model: As in ``log_model``.
        path: The new directory.
        input_example: {input_example}
        artifacts: As in ``log_model``.
        loader_module: As in ``log_model``.
        data_path: As in ``log_model``.
        code_paths: As in ``log_model``.
        model_config: As in ``log_model``.
        signature: {signature}
        {triton}
        **kwargs: Passed to ``mlflow.pyfunc.save_model``.
    """
    triton = _options.TritonOptions.of(locals())
    options = _pyfunc_options(kwargs, artifacts, loader_module, data_path, code_paths, model_config)
    _packaging.save_model(_FRAMEWORK, python_model, path, input_example, signature, triton, options)
