"""What differs between the frameworks the wrappers package, and the helpers their hooks share.

A wrapper (``sklearn``, ``pytorch``, ``transformers``, ``pyfunc``, ``add_repository``) subclasses ``Framework``;
the packaging flow (``_packaging``) calls its hooks and nothing framework-specific besides. A flavor module
registers its instance in ``flavors``, where the other parts read its facts.
"""

import inspect
import os
import pathlib
from collections.abc import Callable
from typing import Any

import mlflow
from mlflow.models import Model

from . import mlflow_private
from .errors import InvalidArgumentError

# save_model parameters this package sets itself (besides each flavor's model_argument); callers use the wrapper's
# own arguments.
MANAGED_NATIVE_OPTIONS = frozenset({"path", "mlflow_model", "signature", "input_example"})


class Framework:
    """What differs between flavors; subclassed per wrapper, its instance the flavor's entry in ``flavors``."""

    flavor: str | None = None  # MLflow flavor name, e.g. "sklearn"
    model_argument: str | None = None  # the wrapper's positional parameter, e.g. "sk_model"
    supports_gpu = False
    describes_architecture = False  # True where architecture() writes architecture.json
    # MLflow records ``flavor`` only on models its own mlflow.<flavor> logged (python_function: on every model):
    # ``local`` then says which wrapper logs such a model with a Triton repository.
    marks_native_models = True
    # MLflow's pyfunc ``predict`` of this flavor takes a dict input (sklearn's and PyTorch's refuse one, so the
    # recorded input tensor is unnamed: ``_schema.signature_for_pyfunc``).
    dict_input = True
    # MLflow's loader takes MLFLOW_DEFAULT_PREDICTION_DEVICE as a device index (-1: CPU), not a torch device string:
    # the runtime's ``loading.device_setting`` (vendored, so it cannot read this; a test holds the two equal).
    device_index = False
    # The key of export-onnx's exporter for this flavor's models ("sklearn", "pytorch", "text"); None: refused.
    exporter: str | None = None

    @property
    def wrapper_module(self) -> str:
        """The module holding this entry, whose ``log_model`` logs the flavor's models (``mlflow_triton.sklearn``)."""
        return type(self).__module__

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


def with_default_requirements(
    options: dict[str, Any], default_requirements: Callable[[dict[str, Any]], list[str]]
) -> dict[str, Any]:
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


def save_example(package: Any, input_example: Any) -> None:
    """Save ``input_example`` as the example of the MLflow package saved at ``package`` (MLmodel rewritten), as it
    is: where a flavor's own saving would change it, or did not save one."""
    mlmodel = Model.load(os.path.join(package, "MLmodel"))
    mlflow_private.save_example(mlmodel, input_example, str(package))
    mlmodel.save(os.path.join(package, "MLmodel"))
