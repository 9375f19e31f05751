"""``mlflow_triton.sklearn``: log a fitted scikit-learn model with a Triton repository.

Use ``log_model`` instead of ``mlflow.sklearn.log_model``. The MLflow package
holds the native ``sklearn`` and ``python_function`` flavors plus a ``triton``
flavor pointing at ``model_repository/<triton_model_name>/``.
"""

import inspect

import mlflow.sklearn
from mlflow.models.model import DEFAULT_AWAIT_MAX_SLEEP_SECONDS
from mlflow.pyfunc import PyFuncModel

from . import _packaging
from ._packaging import FLAVOR_NAME as TRITON_FLAVOR_NAME
from .errors import InvalidArgumentError

FLAVOR_NAME = "sklearn"

__all__ = ["FLAVOR_NAME", "TRITON_FLAVOR_NAME", "log_model", "save_model"]


class _Sklearn(_packaging.Framework):
    flavor = FLAVOR_NAME
    model_argument = "sk_model"

    def native_module(self):
        return mlflow.sklearn

    def native_options(self, options):
        return _packaging.with_default_requirements(options, self._default_requirements)

    @staticmethod
    def _default_requirements(options):
        serialization_format = options.get("serialization_format") or _default_serialization_format()
        return mlflow.sklearn.get_default_pip_requirements(
            include_cloudpickle=serialization_format == "cloudpickle",
            include_skops=serialization_format == "skops",
        )

    def pyfunc_adapter(self, model, options, model_meta):
        predict_fn = options.get("pyfunc_predict_fn", "predict")
        if not hasattr(model, predict_fn):
            raise InvalidArgumentError(
                f"pyfunc_predict_fn {predict_fn!r}: the model has no such method; supported: "
                + ", ".join(["predict", *mlflow.sklearn._SklearnModelWrapper._SUPPORTED_CUSTOM_PREDICT_FN])
            )
        return PyFuncModel(model_meta, mlflow.sklearn._SklearnModelWrapper(model), predict_fn=predict_fn)


def _default_serialization_format():
    default = inspect.signature(mlflow.sklearn.save_model).parameters["serialization_format"].default
    return default or "skops"


_FRAMEWORK = _Sklearn()


def log_model(
    sk_model,
    *,
    input_example,
    name="model",
    registered_model_name=None,
    await_registration_for=DEFAULT_AWAIT_MAX_SLEEP_SECONDS,
    run_id=None,
    metadata=None,
    tags=None,
    params=None,
    signature=None,
    device="cpu",
    triton_model_name=None,
    validate_saved_model=False,
    **kwargs,
):
    """Log a fitted scikit-learn model (e.g. a Pipeline) with its Triton repository.

    ``input_example`` is mandatory, also with ``signature=``: it is predicted in
    memory, shipped as the ready-to-send request and used to validate the tensor
    mapping. Remaining keyword arguments (``pyfunc_predict_fn``, ``code_paths``,
    ``pip_requirements``, ``serialization_format``, ...) go to
    ``mlflow.sklearn.save_model``. Returns MLflow's ``ModelInfo``.
    """
    return _packaging.log_model(
        _FRAMEWORK, sk_model, input_example=input_example, name=name,
        registered_model_name=registered_model_name, await_registration_for=await_registration_for,
        run_id=run_id, metadata=metadata, tags=tags, params=params, signature=signature, device=device,
        triton_model_name=triton_model_name, validate_saved_model=validate_saved_model, extra_options=kwargs,
    )


def save_model(sk_model, path, *, input_example, signature=None, device="cpu", triton_model_name=None,
               validate_saved_model=False, **kwargs):
    """Write the same package as ``log_model`` to a new local directory ``path``."""
    _packaging.save_model(
        _FRAMEWORK, sk_model, path, input_example=input_example, signature=signature, device=device,
        triton_model_name=triton_model_name, validate_saved_model=validate_saved_model, extra_options=kwargs,
    )


