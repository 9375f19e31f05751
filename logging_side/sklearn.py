"""``mlflow_triton.sklearn``: log a fitted scikit-learn model with a Triton repository.

Use ``log_model`` instead of ``mlflow.sklearn.log_model``. The MLflow package
holds the native ``sklearn`` and ``python_function`` flavors plus a ``triton``
flavor pointing at ``model_repository/<triton_model_name>/``.
"""

from __future__ import annotations

import functools
import inspect
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import mlflow.sklearn
from mlflow.models.model import DEFAULT_AWAIT_MAX_SLEEP_SECONDS
from mlflow.pyfunc import PyFuncModel

from . import _custom_code, _framework, _options, _packaging, flavors, mlflow_private
from ._repository_files import FLAVOR_NAME as TRITON_FLAVOR_NAME
from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from mlflow.models import Model, ModelSignature
    from mlflow.models.model import ModelInfo
    from mlflow.models.utils import ModelInputExample

FLAVOR_NAME = "sklearn"

__all__ = ["FLAVOR_NAME", "TRITON_FLAVOR_NAME", "log_model", "save_model"]


class _Sklearn(_framework.Framework):
    flavor = FLAVOR_NAME
    model_argument = "sk_model"
    dict_input = False
    exporter = "sklearn"

    def native_module(self) -> ModuleType:
        return mlflow.sklearn

    def native_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return _framework.with_default_requirements(options, self._default_requirements)

    @staticmethod
    def _default_requirements(options: dict[str, Any]) -> list[str]:
        serialization_format = options.get("serialization_format") or _default_serialization_format()
        return mlflow.sklearn.get_default_pip_requirements(
            include_cloudpickle=serialization_format == "cloudpickle",
            include_skops=serialization_format == "skops",
        )

    def pyfunc_adapter(self, model: Any, options: dict[str, Any], model_meta: Model) -> PyFuncModel:
        predict_fn = options.get("pyfunc_predict_fn", "predict")
        if not hasattr(model, predict_fn):
            raise InvalidArgumentError(
                f"pyfunc_predict_fn {predict_fn!r}: the model has no such method; supported: "
                + ", ".join(["predict", *mlflow_private.sklearn_custom_predict_functions()])
            )
        return PyFuncModel(model_meta, mlflow_private.sklearn_wrapper(model), predict_fn=predict_fn)

    def custom_code_warnings(self, model: Any, options: dict[str, Any]) -> list[str]:
        serialization_format = options.get("serialization_format") or _default_serialization_format()
        return _custom_code.unimportable_code_warnings(
            _code_references(model),
            options.get("code_paths"),
            main_stored_by_value=serialization_format == "cloudpickle",
            serializer=f"serialization_format={serialization_format!r}",
            remedy='or use serialization_format="cloudpickle", which stores __main__ definitions by value',
        )

    def requirement_sources(self, model: Any, options: dict[str, Any]) -> list[Any]:
        return [obj for _, obj in _code_objects(model)]


def _code_references(estimator: Any, depth_limit: int = 50) -> list[_custom_code.CodeReference]:
    """The estimator classes and functions (``FunctionTransformer(func=...)``, ...) inside ``estimator``.

    Follows ``get_params(deep=False)`` through pipelines, column transformers,
    meta-estimators and lists/tuples/dicts of them.
    """
    return [_custom_code.CodeReference.of(what, obj) for what, obj in _code_objects(estimator, depth_limit)]


def _code_objects(estimator: Any, depth_limit: int = 50) -> list[tuple[str, Any]]:
    """``(what, class or function)`` for each estimator class and function inside ``estimator``."""
    found: list[tuple[str, Any]] = []
    seen: set[int] = set()
    pending: list[tuple[Any, int]] = [(estimator, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > depth_limit or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, functools.partial):
            pending.append((item.func, depth + 1))
        elif inspect.isfunction(item):
            found.append(("function", item))
        elif inspect.isclass(item):
            found.append(("class", item))
        elif isinstance(item, (list, tuple)):
            pending.extend((value, depth + 1) for value in item)
        elif isinstance(item, dict):
            pending.extend((value, depth + 1) for value in item.values())
        elif hasattr(item, "get_params"):
            found.append(("class", type(item)))
            try:
                parameters = item.get_params(deep=False)
            except Exception:  # a broken custom get_params: nothing more to learn here
                continue
            pending.extend((value, depth + 1) for value in parameters.values())
    return found


def _default_serialization_format() -> str:
    default = inspect.signature(mlflow.sklearn.save_model).parameters["serialization_format"].default
    return default or "skops"


_FRAMEWORK = flavors.register(_Sklearn())


@_options.documented
def log_model(
    sk_model: Any,
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
    max_batch_size: int = 0,
    max_queue_delay_microseconds: int | None = None,
    zero_row_guard: bool = True,
    protocol: Literal["auto", "tensors", "mlflow"] = "auto",
    stream: bool = False,
    **kwargs: Any,
) -> ModelInfo:
    """Log a fitted scikit-learn model (e.g. a Pipeline) with its Triton repository.

    Args:
        sk_model: The fitted estimator: a Pipeline, a ColumnTransformer or any other scikit-learn model.
        input_example: {input_example}
        {destination}
        signature: {signature}
        {triton}
        **kwargs: Passed to ``mlflow.sklearn.save_model`` (``pyfunc_predict_fn``, ``code_paths``,
            ``pip_requirements``, ``serialization_format``, ...).

    Returns:
        MLflow's ``ModelInfo`` of the logged model.
    """
    arguments = locals()
    destination, triton = _options.Destination.of(arguments), _options.TritonOptions.of(arguments)
    return _packaging.log_model(_FRAMEWORK, sk_model, input_example, signature, destination, triton, kwargs)


@_options.documented
def save_model(
    sk_model: Any,
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
    **kwargs: Any,
) -> None:
    """Write the same package as ``log_model`` to a new local directory ``path`` (it must not exist).

    Args:
        sk_model: The fitted estimator.
        path: The new directory.
        input_example: {input_example}
        signature: {signature}
        {triton}
        **kwargs: Passed to ``mlflow.sklearn.save_model``.
    """
    triton = _options.TritonOptions.of(locals())
    _packaging.save_model(_FRAMEWORK, sk_model, path, input_example, signature, triton, kwargs)
