"""``add_repository``: a Triton repository for a model already in MLflow, logged as a new model.

The source (any flavor with ``python_function``) is downloaded to a temporary
directory and only read there. It is loaded with ``mlflow.pyfunc``, its saved
input example (or the input given) is predicted and its signature mapped by the
wrappers' own flow (``_packaging``), with the source's files copied unchanged
as the native package. The new model goes beside its source: the same
experiment and run, and a new version of the same registered model when the
source came from the Registry. Nothing is written when a step fails.
"""

import dataclasses
import json
import pathlib
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import mlflow
import numpy as np
from mlflow.models import Model
from mlflow.models.model import DEFAULT_AWAIT_MAX_SLEEP_SECONDS, ModelInfo
from mlflow.store.artifact.utils.models import get_model_name_and_version

from mlflow_triton.command_line import Progress, os_error_text, run_command, unreachable
from mlflow_triton.repository.layout import VALIDATION_FILE
from mlflow_triton.repository.names import default_model_name

from . import (
    _framework,
    _model_requirements,
    _options,
    _packaging,
    _protocol,
    _repository_files,
    _serving_requirements,
    mlflow_private,
)
from .errors import (
    ExamplePredictionError,
    InvalidArgumentError,
    MlflowTritonError,
    UnsupportedSchemaError,
    ValidationError,
)

SOURCE_TAG = "mlflow_triton.source_model_uri"
#: The new model's name is the source's with this suffix: under the source's own name in the source's run it would
#: shadow it (``runs:/<run>/<name>`` resolves to the newest model of that name in the run).
NAME_SUFFIX = "-triton"
#: What holds after an error, Ctrl-C or SIGTERM in ``add-repository`` (nothing is written when a step fails).
NOTHING_LOGGED = "nothing was logged"
PYFUNC = mlflow.pyfunc.FLAVOR_NAME
_INPUT_REMEDY = (
    "give an input: input_example= (mlflow-triton add-repository --input FILE) with a small input in MLflow's serving "
    "format (a JSON object with dataframe_split, dataframe_records, inputs or instances; or a CSV table), or "
    "re-log the model with input_example="
)


class _LoggedModel(_framework.Framework):
    """The source package as the 'native' model: loaded by ``mlflow.pyfunc``, copied as it is."""

    model_argument = "model"

    def __init__(self, flavor, source_dir, example_saved):
        self.flavor = flavor
        self._source_dir = source_dir
        self._example_saved = example_saved

    def native_module(self):
        return mlflow.pyfunc

    def pyfunc_adapter(self, model, options, model_meta):
        return model  # the source as mlflow.pyfunc loaded it: its own signature is enforced

    def save_native(self, model, path, signature, input_example, options):
        shutil.copytree(self._source_dir, path, symlinks=False)
        if not self._example_saved:  # the given input becomes the new model's example (check predicts it)
            _framework.save_example(path, input_example)


@_options.documented
def add_repository(
    model_uri: str,
    *,
    input_example: Any = None,
    registered_model_name: "str | None" = None,
    name: "str | None" = None,
    triton_model_name: "str | None" = None,
    max_batch_size: int = 0,
    max_queue_delay_microseconds: "int | None" = None,
    zero_row_guard: bool = True,
    await_registration_for: int = DEFAULT_AWAIT_MAX_SLEEP_SECONDS,
    protocol: str = _protocol.AUTO_PROTOCOL,
    stream: bool = False,
) -> "ModelInfo":
    """Log a new MLflow model: the source's files unchanged plus the ``triton`` flavor and ``model_repository/``.

    Args:
        model_uri: A local model directory, ``runs:/``, ``models:/name/version``, ``models:/name@alias`` or
            ``models:/m-<id>``; its flavors must include ``python_function``. Its saved input example is predicted.
        input_example: The model's input, as ``log_model`` takes it, for a source saved without an example; saved as
            the new model's example.
        registered_model_name: Register the new model under this name; default: the source's registered model for
            a ``models:/name...`` URI.
        name: The new model's name in MLflow; default: the source's followed by ``-triton`` (under the source's own
            name in the source's run it would become what ``runs:/<run>/<name>`` loads).
        triton_model_name: The model's name in Triton; default: the source's name, made Triton-safe.
        {triton}
        await_registration_for: Seconds to wait for the registered version to become ``READY``.

    Returns:
        MLflow's ``ModelInfo`` of the new model.
    """
    triton = _options.TritonOptions.of(locals())
    read_input = None if input_example is None else (lambda _mlmodel: input_example)
    return _add_repository(
        model_uri,
        read_input,
        triton,
        registered_model_name=registered_model_name,
        name=name,
        await_registration_for=await_registration_for,
    )


def _add_repository(
    model_uri: str,
    read_input: "Callable[[Any], Any] | None",
    triton: _options.TritonOptions,
    *,
    on_logged: "Callable[[ModelInfo], object]" = lambda info: None,
    on_report: "Callable[[dict[str, Any]], object]" = lambda report: None,
    registered_model_name: "str | None" = None,
    name: "str | None" = None,
    await_registration_for: int = DEFAULT_AWAIT_MAX_SLEEP_SECONDS,
) -> "ModelInfo":
    """``add_repository`` with the input read by ``read_input(the source's MLmodel)`` (the command line's
    ``--input FILE``, parsed by the local part, which the logging side never imports), or the saved example.

    ``on_logged(info)`` is called as soon as the new model is logged (and registered), before the temporary copies
    are removed: a stop after it leaves the model in the store, and the command says so. ``on_report(validation)``
    gets the repository's validation.json record once it is written, before the model is logged."""
    if not isinstance(model_uri, str) or not model_uri:
        raise InvalidArgumentError(f"model_uri must be a non-empty string, got {model_uri!r}")
    _protocol.check_protocol(triton.protocol, triton.max_batch_size, triton.stream)  # before the source is looked up
    lineage = _lineage(model_uri)
    if registered_model_name is None:
        registered_model_name = lineage.get("registered_model_name")
    with tempfile.TemporaryDirectory(prefix="mlflow-triton-source-") as workspace:
        source = _download(model_uri, pathlib.Path(workspace) / "source")
        mlmodel = Model.load(str(source / "MLmodel"))
        _check_flavors(model_uri, mlmodel)
        if triton.stream:
            _protocol.check_streamable(mlmodel, f"Model {model_uri!r}")
        lineage.update({key: value for key, value in _ids_in(mlmodel).items() if lineage.get(key) is None})
        example = _example(model_uri, mlmodel, source, read_input)
        loaded = _load(model_uri, source)
        if mlmodel.signature is None:
            example = _with_graph_float32(loaded, example)
        _check_requirements(model_uri, loaded, source)
        framework = _LoggedModel(_native_flavor(mlmodel), source, read_input is None)
        source_name = lineage.get("name") or "model"
        if triton.triton_model_name is None:  # Triton sees the source's name; MLflow a name of the new model's own
            triton = dataclasses.replace(triton, triton_model_name=default_model_name(source_name))
        model_name = name or f"{source_name}{NAME_SUFFIX}"
        try:
            info = _packaging.log_model(
                framework,
                loaded,
                input_example=example,
                # None would have the mapping inferred and recorded; the source's MLmodel is kept as it is
                signature=mlmodel.signature if mlmodel.signature is not None else False,
                destination=_options.Destination(
                    name=model_name,
                    registered_model_name=registered_model_name,
                    await_registration_for=await_registration_for,
                    run_id=lineage.get("run_id"),
                    metadata=mlmodel.metadata,
                    tags={SOURCE_TAG: model_uri},
                    experiment_id=lineage.get("experiment_id"),
                ),
                triton=triton,
                extra_options={},
                lineage={"model_uri": model_uri, **{k: v for k, v in lineage.items() if k != "name"}},
                on_built=lambda directory: on_report(json.loads((directory / VALIDATION_FILE).read_text("utf-8"))),
            )
            on_logged(info)
            return info
        except ExamplePredictionError as error:
            if read_input is not None:
                raise
            # MLflow may save an example its own schema enforcement refuses (a list column saved as JSON text)
            raise ExamplePredictionError(
                f"Model {model_uri!r}: its saved input example: {error}; {_INPUT_REMEDY}"
            ) from error.__cause__
        except UnsupportedSchemaError as error:
            raise UnsupportedSchemaError(
                f"Model {model_uri!r}: {error} (for a model already logged: re-log it with a signature from "
                "infer_signature(input, its prediction), or without one, so the mapping is inferred from its example)"
            ) from None


def _lineage(model_uri: str) -> dict[str, Any]:
    """What the tracking store says about the source: ids, experiment, run, registered model and version."""
    client = mlflow.MlflowClient()
    found = {}
    if model_uri.startswith("models:/"):
        try:
            parsed = mlflow_private.parse_model_uri(model_uri)
            if parsed.model_id is not None:
                found["model_id"] = parsed.model_id
            else:
                registered, version = get_model_name_and_version(client, model_uri)
                model_version = client.get_model_version(registered, version)
                found.update(
                    registered_model_name=registered,
                    registered_model_version=str(version),
                    model_id=getattr(model_version, "model_id", None) or _model_id_in(model_version.source),
                    run_id=model_version.run_id or None,
                )
        except MlflowTritonError:
            raise
        except Exception as error:
            if unreachable(error) is not None:  # the store, not the URI: the command line says which one
                raise
            raise InvalidArgumentError(f"model_uri {model_uri!r}: {error}") from None
    elif model_uri.startswith("runs:/"):
        found["run_id"] = model_uri[len("runs:/") :].split("/", 1)[0]
    if found.get("model_id"):
        logged = client.get_logged_model(found["model_id"])
        found.update(experiment_id=logged.experiment_id, name=logged.name)
        found["run_id"] = found.get("run_id") or logged.source_run_id
    if found.get("run_id") and not found.get("experiment_id"):
        found["experiment_id"] = client.get_run(found["run_id"]).info.experiment_id
    return found


def _model_id_in(source):
    """The LoggedModel id of a version's source ``models:/m-<id>`` (MLflow 3 leaves ``model_id`` unset)."""
    if source and source.startswith("models:/m-"):
        return mlflow_private.parse_model_uri(source).model_id
    return None


def _ids_in(mlmodel):
    """The ids the source's MLmodel records (a local directory: for validation.json only)."""
    return {"model_id": getattr(mlmodel, "model_id", None), "source_run_id": mlmodel.run_id}


def _download(model_uri, destination):
    """A private copy of the source: MLflow's own download (a local directory is copied, never written)."""
    try:
        local = mlflow.artifacts.download_artifacts(artifact_uri=model_uri, dst_path=str(destination))
    except Exception as error:
        if unreachable(error) is not None:  # the tracking server or the artifact store, not the URI
            raise
        raise InvalidArgumentError(f"model_uri {model_uri!r} cannot be read: {error}") from None
    local = pathlib.Path(local)
    # Written by MLflow's download of a models:/ URI (the version it came from), not one of the source's files.
    meta = mlflow_private.registered_model_meta_file()
    if meta is not None:
        (local / meta).unlink(missing_ok=True)
    if not local.resolve().is_relative_to(destination.resolve()):  # never work on the source itself
        shutil.copytree(local, destination / "model", symlinks=False)
        local = destination / "model"
    if not (local / "MLmodel").is_file():
        raise InvalidArgumentError(f"model_uri {model_uri!r} is not an MLflow model: it has no MLmodel file")
    return local


def _check_flavors(model_uri, mlmodel):
    flavors = ", ".join(mlmodel.flavors) or "none"
    if PYFUNC not in mlmodel.flavors:
        raise InvalidArgumentError(
            f"Model {model_uri!r} has no {PYFUNC} flavor (flavors: {flavors}): mlflow.pyfunc cannot load it, nor "
            "can Triton's runtime; re-log it with a flavor that has one, or wrap it in a mlflow.pyfunc.PythonModel "
            "and log that with mlflow_triton.pyfunc.log_model"
        )
    if _repository_files.FLAVOR_NAME in mlmodel.flavors:
        raise InvalidArgumentError(
            f"Model {model_uri!r} already has a {_repository_files.FLAVOR_NAME} flavor: prove it with "
            f"`mlflow-triton check {model_uri}`"
        )


def _native_flavor(mlmodel):
    return next((flavor for flavor in mlmodel.flavors if flavor != PYFUNC), PYFUNC)


def _example(model_uri, mlmodel, source, read_input):
    """The input to predict: the saved example (with its params), or the one ``read_input`` gives."""
    if read_input is not None:
        try:
            return read_input(mlmodel)
        except MlflowTritonError as error:
            raise InvalidArgumentError(str(error)) from None
    if mlmodel.saved_input_example_info is None:
        has = "a signature but no input example" if mlmodel.signature is not None else "no signature and no example"
        raise InvalidArgumentError(f"Model {model_uri!r} has {has} to predict: {_INPUT_REMEDY}")
    try:
        example = mlmodel.load_input_example(str(source))
        params = mlmodel.load_input_example_params(str(source))
    except Exception as error:
        raise InvalidArgumentError(
            f"Model {model_uri!r}: its saved input example cannot be read ({error}); {_INPUT_REMEDY}"
        ) from None
    return (example, params) if params else example


def _with_graph_float32(loaded, example):
    """``example`` with float64 arrays made float32 where the model's own graph takes float32 (an ONNX graph).

    Without a signature the mapping is inferred from the example, and an example saved as JSON reads back float64;
    MLflow's ONNX flavor casts float64 to the graph's float32 itself, so a float32 tensor is what the model takes and
    what a client sends. Other flavors state no input types: the example is kept.
    """
    if isinstance(example, tuple):  # (example, params)
        return (_with_graph_float32(loaded, example[0]), example[1])
    try:
        graph_inputs = [(tensor.name, tensor.type) for tensor in loaded.get_raw_model().get_inputs()]
    except Exception:  # not an onnxruntime session: no stated input types
        return example
    float32 = {name for name, kind in graph_inputs if kind == "tensor(float)"}
    if isinstance(example, np.ndarray) and len(graph_inputs) == 1 and float32:
        return _as_float32(example)
    if isinstance(example, dict):
        return {key: _as_float32(value) if key in float32 else value for key, value in example.items()}
    return example


def _as_float32(value):
    return value.astype(np.float32) if isinstance(value, np.ndarray) and value.dtype == np.float64 else value


def _check_requirements(model_uri, loaded, source):
    """Refuse a source whose requirements.txt lacks a distribution its model object comes from: it loads here, where
    that distribution is installed, but not in Triton's serving environment, which is built from those requirements
    (a lightgbm model whose conda_env names xgboost, as one of MLflow's tests logs it)."""
    try:
        raw = loaded.get_raw_model()
    except Exception:  # a flavor without a raw model: nothing to look at
        return
    needed = _model_requirements.distributions_needed([raw])
    requirements = source / "requirements.txt"
    if not needed or not requirements.exists():
        return
    missing = _model_requirements.missing_from(needed, requirements.read_text(encoding="utf-8").splitlines())
    if missing:
        pinned = ", ".join(repr(_model_requirements.pinned(name)) for name in missing)
        raise ValidationError(
            f"Model {model_uri!r}: its requirements.txt does not name {', '.join(missing)}, which its model "
            f"({'; '.join(needed[missing[0]][:2])}) needs: it loads here, but Triton's serving environment is built "
            "from those requirements, so loading fails there with ModuleNotFoundError; re-log the model with "
            f"pip_requirements (or extra_pip_requirements) naming {pinned}"
        )


def _load(model_uri, source):
    try:
        return mlflow.pyfunc.load_model(str(source))
    except Exception as error:
        raise ValidationError(
            f"Model {model_uri!r}: mlflow.pyfunc.load_model failed here: {type(error).__name__}: {error}; install "
            f"the requirements MLflow recorded for it (pip install -r {source.name}/requirements.txt of the model) "
            "in this environment"
        ) from error


def add_repository_command(
    model_uri: str,
    triton: _options.TritonOptions,
    *,
    read_input: "Callable[[Any], Any] | None" = None,
    tracking_uri: "str | None" = None,
    out: "Callable[[str], object]" = print,
    **options: Any,
) -> int:
    """``mlflow-triton add-repository``: log the new model, print its URI; returns the exit status."""
    from mlflow.exceptions import MlflowException

    logged: list[str] = []  # what a stop after logging leaves in the store
    reports: list[dict[str, Any]] = []  # the new repository's validation.json

    def registered_uri(info: ModelInfo) -> str | None:
        if info.registered_model_version is None:
            return None
        registered = options.get("registered_model_name") or mlflow_private.parse_model_uri(model_uri).name
        return f"models:/{registered}/{info.registered_model_version}"

    def remember(info: ModelInfo) -> None:
        registered = registered_uri(info)
        logged.append(
            f"{registered or info.model_uri} is complete and stays: {info.model_uri} was logged"
            f"{f' and registered as {registered}' if registered else ''} before the stop"
        )

    def add(say: Progress) -> int:
        if tracking_uri is not None:
            mlflow.set_tracking_uri(tracking_uri)
        info = _add_repository(model_uri, read_input, triton, on_logged=remember, on_report=reports.append, **options)
        out(f"logged {info.model_uri} from {model_uri}")
        uri = registered_uri(info)
        if uri is not None:
            out(f"registered {uri}")
        for line in _report_lines(reports[0]):
            out(line)
        out(f"prove it: mlflow-triton check {uri or info.model_uri}")
        return 0

    def explain(error: Exception) -> str | None:
        store = unreachable(error)  # MLflow's, requests' or botocore's error: which store, in the frame's words
        if store is not None:
            said = f"{model_uri}: {store}"
        elif isinstance(error, MlflowTritonError):
            said = str(error)
        elif isinstance(error, MlflowException):
            said = f"{model_uri}: {error.message}"
        elif isinstance(error, OSError):
            said = os_error_text(error)
        else:
            return None
        return f"{said}; {NOTHING_LOGGED}"

    return run_command("add-repository", add, stopped=lambda: logged[0] if logged else NOTHING_LOGGED, explain=explain)


def _report_lines(validation):
    """What the command says of the written repository: the serving requirements it added, then its kind and why."""
    added = validation.get(_serving_requirements.ADDED, {})
    lines = [f"serving requirements: added {line!r}: {why}" for line, why in added.items()]
    return [*lines, *_protocol.kind_lines(validation)]
