"""Undo what a failed ``mlflow.models.Model.log`` left in the tracking store and the Registry.

``Model.log`` creates the LoggedModel (and links it to the run) before it calls
the flavor's ``save_model``, uploads the artifacts and registers a version. A
failure at any of those steps (Ctrl-C and SIGTERM included) would otherwise leave
that LoggedModel behind, with whatever artifacts it had uploaded, and a failed
registration an empty registered model that the call itself created. Both
logging entry points (the framework wrappers and ``triton.log_model``) and
``add_repository`` run ``Model.log`` inside ``undone_on_failure``.

MLflow's ``delete_logged_model`` only marks the LoggedModel deleted: its
artifacts stay in the artifact store (a local folder, S3, or the tracking
server's proxied destination) until ``mlflow gc``. What the failed call
uploaded is removed here too, so "nothing was logged" holds for the store.
"""

import contextlib
import pathlib
from collections.abc import Callable, Iterator

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
from mlflow.utils.file_utils import local_file_uri_to_path
from mlflow.utils.uri import is_local_uri

from . import mlflow_private

# Characters that MLflow's filter-string parser cannot take inside a quoted name: it accepts no
# escape for quotes (checked with MLflow 3.17: `\'`, `''` and double quoting fail or match nothing),
# and a backslash before the closing quote escapes it.
_UNQUOTABLE = ("'", '"', "\\")


@contextlib.contextmanager
def undone_on_failure(
    registered_model_name: str | None, logged_model_id: Callable[[], str | None] = lambda: None
) -> Iterator[None]:
    """On any exception from the body: delete the LoggedModel it created (with its artifacts) and an empty
    registered model.

    ``logged_model_id`` returns the id of the LoggedModel the body created when
    known (``None`` otherwise); without it the LoggedModel is recognised by
    MLflow's thread-local last-logged model id changing during the body. A
    registered model is deleted only if it did not exist before the body ran
    and has no version afterwards.
    """
    last_logged_before = _last_logged_model_id()
    registry_had_model = _registered_model_exists(registered_model_name)
    try:
        yield
    except BaseException:
        model_id = logged_model_id()
        if model_id is None and _last_logged_model_id() != last_logged_before:
            model_id = _last_logged_model_id()
        if model_id is not None:
            if registered_model_name:
                _forget_versions_of(registered_model_name, model_id)
            _forget_logged_model(model_id)
        if registry_had_model is False:
            _forget_empty_registered_model(registered_model_name)
        raise


def _forget_logged_model(model_id):
    """Delete the LoggedModel ``model_id`` and the artifacts it uploaded (MLflow's delete leaves them)."""
    client = mlflow.MlflowClient()
    location = None
    with contextlib.suppress(Exception):
        location = client.get_logged_model(model_id).artifact_location
    with contextlib.suppress(Exception):
        client.delete_logged_model(model_id)
    if location:
        with contextlib.suppress(Exception):
            get_artifact_repository(location).delete_artifacts()
            if is_local_uri(location):  # the LoggedModel's own folder (models/<model id>/) held artifacts/ only
                own = pathlib.Path(local_file_uri_to_path(location)).parent
                if own.name == model_id and not any(own.iterdir()):
                    own.rmdir()


def _registered_model_exists(name):
    """Whether the Registry already holds ``name``; None when unknown or not registering."""
    if not name:
        return None
    try:
        mlflow.MlflowClient().get_registered_model(name)
    except MlflowException as error:
        return False if error.error_code == "RESOURCE_DOES_NOT_EXIST" else None
    return True


def _forget_empty_registered_model(name):
    """Delete a registered model that a failed log created and left without versions."""
    with contextlib.suppress(Exception):
        client = mlflow.MlflowClient()
        if not has_model_versions(client, name):
            client.delete_registered_model(name)


def _forget_versions_of(name, model_id):
    """Delete the versions of ``name`` that a failed log registered for the LoggedModel ``model_id``
    (the registration succeeded, then the call was interrupted, e.g. while awaiting it)."""
    with contextlib.suppress(Exception):
        client = mlflow.MlflowClient()
        for version in model_versions(client, name):
            if getattr(version, "model_id", None) == model_id or model_id in (version.source or ""):
                client.delete_model_version(name, version.version)


def has_model_versions(client, name):
    """Whether the registered model ``name`` (matched exactly) has any version."""
    return bool(model_versions(client, name))


def model_versions(client, name):
    """The versions of the registered model ``name``, matched exactly.

    A name with a quote or a backslash cannot be written into a filter string,
    so it is looked up with ``LIKE`` and those characters as single-character
    wildcards, and the results are compared with the exact name.
    """
    if not any(quote in name for quote in _UNQUOTABLE):
        return list(client.search_model_versions(f"name = '{name}'"))
    pattern = name
    for quote in _UNQUOTABLE:
        pattern = pattern.replace(quote, "_")
    return [version for version in client.search_model_versions(f"name LIKE '{pattern}'") if version.name == name]


def _last_logged_model_id():
    """MLflow's id of the LoggedModel most recently created in this thread (None if unknown)."""
    with contextlib.suppress(Exception):
        return mlflow_private.last_logged_model_id()
    return None
