"""MLflow's private API, behind one door.

The package promises ``mlflow>=3.14,<4``, and MLflow may change or remove any of these names in a minor release:
every use is here, one function per name with why it is needed, and
``tests/unit/logging_side/test_mlflow_private.py`` pins each one (it exists, it takes the arguments passed here, the
installed MLflow is within the supported range) in every test leg, the MLflow floor included. Each name is imported
on use: the flavor modules import their frameworks. ``local`` reads an ``--input`` body through it too, so the module
is named without an underscore (docs/layout.md, "Module names"); it is not part of the documented API.
"""

from typing import Any


def sklearn_wrapper(model: Any) -> Any:
    """``mlflow.sklearn._SklearnModelWrapper``: the pyfunc wrapper MLflow loads a sklearn model into, so the example
    is predicted in memory as the served model will predict it."""
    from mlflow.sklearn import _SklearnModelWrapper

    return _SklearnModelWrapper(model)


def sklearn_custom_predict_functions() -> list[str]:
    """``_SklearnModelWrapper._SUPPORTED_CUSTOM_PREDICT_FN``: the ``pyfunc_predict_fn`` values MLflow accepts besides
    ``predict``, named in the refusal of an unknown one."""
    from mlflow.sklearn import _SklearnModelWrapper

    return list(_SklearnModelWrapper._SUPPORTED_CUSTOM_PREDICT_FN)


def pytorch_wrapper(model: Any, device: str) -> Any:
    """``mlflow.pytorch._PyTorchWrapper``: the pyfunc wrapper MLflow loads a PyTorch model into (in-memory
    prediction as served)."""
    from mlflow.pytorch import _PyTorchWrapper

    return _PyTorchWrapper(model, device=device)


def transformers_wrapper(pipeline: Any, *, flavor_config: Any, model_config: Any, prompt_template: Any) -> Any:
    """``mlflow.transformers._TransformersWrapper``: the pyfunc wrapper MLflow loads a pipeline into (in-memory
    prediction as served)."""
    from mlflow.transformers import _TransformersWrapper

    return _TransformersWrapper(
        pipeline, flavor_config=flavor_config, model_config=model_config, prompt_template=prompt_template
    )


def transformers_pipeline_has_pyfunc(pipeline: Any) -> bool:
    """``mlflow.transformers._should_add_pyfunc_to_model``: whether MLflow gives the pipeline a pyfunc interface,
    which the Triton runtime serves through."""
    from mlflow.transformers import _should_add_pyfunc_to_model

    return bool(_should_add_pyfunc_to_model(pipeline))


def validate_llm_inference_task(task: str, pipeline_task: str) -> None:
    """``mlflow.transformers._validate_llm_inference_task_type``: MLflow's own refusal of an LLM task the pipeline
    does not support, before anything is saved."""
    from mlflow.transformers import _validate_llm_inference_task_type

    _validate_llm_inference_task_type(task, pipeline_task)


def transformers_engine(model: Any) -> Any:
    """``mlflow.transformers._get_engine_type``: the framework package (torch) a model runs on, for the default
    requirements where MLflow's own list fails."""
    from mlflow.transformers import _get_engine_type

    return _get_engine_type(model)


def function_python_model(function: Any, signature: Any) -> Any:
    """``mlflow.pyfunc.model._FunctionPythonModel``: the PythonModel MLflow makes of a function, for in-memory
    prediction as served."""
    from mlflow.pyfunc.model import _FunctionPythonModel

    return _FunctionPythonModel(function, signature=signature)


def python_model_wrapper(python_model: Any, context: Any, signature: Any) -> Any:
    """``mlflow.pyfunc.model._PythonModelPyfuncWrapper``: the pyfunc wrapper MLflow loads a PythonModel into
    (in-memory prediction as served)."""
    from mlflow.pyfunc.model import _PythonModelPyfuncWrapper

    return _PythonModelPyfuncWrapper(python_model, context, signature)


def model_config_from_file(path: str) -> Any:
    """``mlflow.utils.model_utils._validate_and_get_model_config_from_file``: a ``model_config`` file read as MLflow
    reads it when loading the model."""
    from mlflow.utils.model_utils import _validate_and_get_model_config_from_file

    return _validate_and_get_model_config_from_file(path)


def load_model_code(path: str, model_config: Any) -> Any:
    """``mlflow.models.utils._load_model_code_path``: runs a models-from-code file as MLflow does when loading it."""
    from mlflow.models.utils import _load_model_code_path

    return _load_model_code_path(path, model_config)


def forget_model_set_by_code() -> None:
    """Clear ``mlflow.models.model.__mlflow_model__``: MLflow keeps the last model a file set there, so a file that
    sets none would get the previous one."""
    import mlflow.models.model as mlflow_model

    mlflow_model.__mlflow_model__ = None


def model_set_by_code() -> Any:
    """``mlflow.models.model.__mlflow_model__``: the model a models-from-code file set (None: it set none)."""
    import mlflow.models.model as mlflow_model

    return getattr(mlflow_model, "__mlflow_model__", None)


def registered_model_meta_file() -> str | None:
    """``mlflow.store.artifact.models_artifact_repo.REGISTERED_MODEL_META_FILE_NAME``: the file MLflow 3.14 to 3.17
    add to a download of a ``models:/`` URI (which version it came from), not one of the model's own files; ``None``
    from MLflow 3.18, which writes no such file and has no such name."""
    try:
        from mlflow.store.artifact.models_artifact_repo import REGISTERED_MODEL_META_FILE_NAME
    except ImportError:
        return None
    return str(REGISTERED_MODEL_META_FILE_NAME)


def parse_model_uri(uri: str) -> Any:
    """``mlflow.store.artifact.utils.models._parse_model_uri``: the parts of a ``models:/`` URI (``name``,
    ``model_id``), as MLflow resolves it."""
    from mlflow.store.artifact.utils.models import _parse_model_uri

    return _parse_model_uri(uri)


def last_logged_model_id() -> Any:
    """``mlflow.tracking.fluent._last_logged_model_id``: the LoggedModel most recently created in this thread, the
    only trace of one that ``Model.log`` created before failing."""
    from mlflow.tracking import fluent

    return fluent._last_logged_model_id.get()


def create_logged_model(
    *, name: str, source_run_id: Any, experiment_id: str, params: dict[str, str], tags: dict[str, str], flavor: str
) -> Any:
    """``mlflow.tracking.fluent._create_logged_model``: a LoggedModel in a given experiment (``Model.log`` alone
    uses the active one)."""
    from mlflow.tracking.fluent import _create_logged_model

    return _create_logged_model(
        name=name, source_run_id=source_run_id, experiment_id=experiment_id, params=params, tags=tags, flavor=flavor
    )


def save_example(mlmodel: Any, input_example: Any, path: str) -> Any:
    """``mlflow.models.utils._save_example``: an input example saved into a package as MLflow saves it, where a
    flavor's own saving changes it or saves none."""
    from mlflow.models.utils import _save_example

    return _save_example(mlmodel, input_example, path)


def pinned_requirement(package: str) -> str:
    """``mlflow.utils.requirements_utils._get_pinned_requirement``: ``package==<installed version>`` as MLflow
    records requirements."""
    from mlflow.utils.requirements_utils import _get_pinned_requirement

    return str(_get_pinned_requirement(package))


def requires_recursive(package: str) -> Any:
    """``mlflow.utils.requirements_utils._get_requires_recursive``: the installed distributions a package brings,
    as MLflow's requirement inference walks them."""
    from mlflow.utils.requirements_utils import _get_requires_recursive

    return _get_requires_recursive(package)


def normalize_package_name(name: str) -> str:
    """``mlflow.utils.requirements_utils._normalize_package_name``: a distribution name as MLflow compares them."""
    from mlflow.utils.requirements_utils import _normalize_package_name

    return str(_normalize_package_name(name))


def parse_json_body(body: bytes | str, metadata: Any, input_schema: Any) -> tuple[Any, Any]:
    """``mlflow.pyfunc.scoring_server._parse_json_data``: a JSON body read as ``invocations()`` reads it (an unwrapped
    LLM body, a type-hinted model's ``inputs``, or one format key parsed against the schema; ``params`` split off),
    so that ``--input FILE`` takes every body ``mlflow models serve`` takes. Returns ``(data, params)``."""
    from mlflow.pyfunc.scoring_server import _parse_json_data

    parsed = _parse_json_data(body, metadata, input_schema)
    return parsed.data, parsed.params


def enforce_params_schema(params: Any, schema: Any) -> Any:
    """``mlflow.models.utils._enforce_params_schema``: the params ``PyFuncModel.predict`` hands the model (without a
    params schema, none: MLflow warns and ignores them; with one, MLflow's refusal of params that are not an object)."""
    from mlflow.models.utils import _enforce_params_schema

    return _enforce_params_schema(params, schema)
