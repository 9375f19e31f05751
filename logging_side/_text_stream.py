"""Streaming a Transformers text-generation package, whose pyfunc has no ``predict_stream``.

MLflow's transformers flavor streams nothing. For a ``text-generation`` pipeline saved without one of MLflow's LLM
inference tasks, the ``<name>_stream`` model serves instead an MLflow model of its own (:func:`save_stream_package`):
``_text_stream_model.py`` (models from code) around the package, which predicts as the package does and streams
the generated text. Every other model streams its own ``predict_stream`` or is refused.
"""

import pathlib

import mlflow.pyfunc
from mlflow.models import Model

TEXT_GENERATION = "text-generation"
#: The streaming package's one artifact: the text-generation package, whole.
PIPELINE_ARTIFACT = "pipeline"
_MODEL_CODE = pathlib.Path(__file__).with_name("_text_stream_model.py")
_TRANSFORMERS = "transformers"
_INFERENCE_TASK = "inference_task"  # where mlflow.transformers.save_model records an LLM task


def streams_generated_text(mlmodel):
    """Whether ``mlmodel`` (a package's ``Model``) streams through :func:`save_stream_package`: a Transformers
    ``text-generation`` pipeline without an LLM inference task, whose pyfunc is MLflow's transformers one."""
    flavor = mlmodel.flavors.get(_TRANSFORMERS) or {}
    pyfunc = mlmodel.flavors.get("python_function") or {}
    return (
        flavor.get("task") == TEXT_GENERATION
        and not flavor.get(_INFERENCE_TASK)
        and pyfunc.get("loader_module") == f"mlflow.{_TRANSFORMERS}"
    )


def save_stream_package(package, destination):
    """Save at ``destination`` the MLflow model that streams ``package`` (a text-generation package directory):
    ``_text_stream_model.py`` with the package copied whole as its artifact, the package's signature (params
    included) and requirements. Returns ``destination``."""
    package = pathlib.Path(package)
    requirements = package / "requirements.txt"
    mlflow.pyfunc.save_model(
        str(destination),
        python_model=str(_MODEL_CODE),
        artifacts={PIPELINE_ARTIFACT: str(package)},
        signature=Model.load(str(package / "MLmodel")).signature,
        pip_requirements=str(requirements) if requirements.is_file() else None,
    )
    return pathlib.Path(destination)


#: validation.json's account of the stream's proof for such a package.
HOW = (
    "the example's MLflow serving body streamed through the runtime's protocol module by the streaming package's "
    "pyfunc.predict_stream (the text-generation package's predict, its generated text yielded as the pipeline's "
    "streamer decodes it and checked against predict's answer), as the streaming model answers the shipped request"
)
