"""Addresses Triton reads a repository from, made from where MLflow stored it (``mlflow_triton.deploy._store``)."""

import re
from pathlib import Path

import pytest

from mlflow_triton.deploy._store import _address, _store_uri
from mlflow_triton.deploy.errors import StoreAccessError, StoreLocationError, StorePathError

REPOSITORY = "mlartifacts/1/models/m-0123abcd/artifacts/model_repository"


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    for name in (
        "MLFLOW_S3_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ENDPOINT_URL",
        "MLFLOW_TRITON_ARTIFACTS_DESTINATION",
    ):
        monkeypatch.delenv(name, raising=False)


def test_address_is_the_plain_s3_uri_when_no_custom_endpoint_is_set():
    location = _address("models:/m/1", "x", f"s3://team-bucket/{REPOSITORY}", "classifier")

    assert (location.address, location.storage_uri, location.scheme) == (
        f"s3://team-bucket/{REPOSITORY}",
        f"s3://team-bucket/{REPOSITORY}",
        "s3",
    )


@pytest.mark.parametrize(
    ("endpoint", "host"),
    [
        ("http://127.0.0.1:9000", "127.0.0.1:9000"),
        ("http://minio.internal", "minio.internal:80"),
        ("https://s3.example.org:8443/", "https://s3.example.org:8443"),
    ],
)
def test_address_carries_host_and_port_when_a_custom_s3_endpoint_is_set(monkeypatch, endpoint, host):
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", endpoint)

    location = _address("models:/m/1", "x", f"s3://bucket/{REPOSITORY}", "classifier")

    assert location.address == f"s3://{host}/bucket/{REPOSITORY}"
    assert location.storage_uri == f"s3://bucket/{REPOSITORY}"


def test_address_is_an_as_uri_when_mlflow_stored_the_model_in_azure_blob_storage():
    uri = f"wasbs://models@teamaccount.blob.core.windows.net/{REPOSITORY}"

    location = _address("models:/m/1", "x", uri, "classifier")

    assert (location.address, location.storage_uri) == (f"as://teamaccount/models/{REPOSITORY}", uri)


def test_address_is_the_gs_uri_when_mlflow_stored_the_model_in_google_cloud_storage():
    assert _address("models:/m/1", "x", f"gs://bucket/{REPOSITORY}", "c").address == f"gs://bucket/{REPOSITORY}"


def test_address_is_the_local_path_when_mlflow_stored_the_model_on_disk():
    location = _address("models:/m/1", "x", f"file:///srv/mlflow/{REPOSITORY}", "c")

    assert (location.address, location.is_object_store) == (f"/srv/mlflow/{REPOSITORY}", False)


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        ("s3://Team_Bucket/models/model_repository", "bucket name 'Team_Bucket'"),
        ("s3://bucket/team models/model_repository", "path segment 'team models'"),
        ("s3://bucket/team~models/model_repository", "path segment 'team~models'"),
        ("gs://bucket/caf\u00e9/model_repository", "path segment 'caf\u00e9'"),
        ("wasbs://My_Container@acct.blob.core.windows.net/x/model_repository", "container name 'My_Container'"),
    ],
)
def test_address_is_refused_naming_the_part_when_it_breaks_tritons_path_rules(uri, named):
    with pytest.raises(StorePathError, match=rf"{named}.*artifact_location="):
        _address("models:/m/1", "x", uri, "classifier")


def test_address_is_refused_when_the_store_is_not_one_triton_reads():
    with pytest.raises(StoreLocationError, match=r"hdfs://nn/models.*Triton cannot read"):
        _address("models:/m/1", "x", "hdfs://nn/models/model_repository", "classifier")


def test_address_is_refused_naming_the_variable_when_the_endpoint_is_not_an_http_url(monkeypatch):
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", "127.0.0.1:9000")

    with pytest.raises(StoreAccessError, match=r"MLFLOW_S3_ENDPOINT_URL"):
        _address("models:/m/1", "x", f"s3://bucket/{REPOSITORY}", "classifier")


def test_store_uri_maps_a_proxied_location_onto_the_servers_destination():
    uri = _store_uri("models:/m/1", "mlflow-artifacts:/1/models/m-01/artifacts", "s3://bucket/mlartifacts/")

    assert uri == "s3://bucket/mlartifacts/1/models/m-01/artifacts"


def test_store_uri_is_refused_naming_the_option_when_a_proxied_location_has_no_destination():
    with pytest.raises(StoreLocationError, match=r"artifact proxy .*--artifacts-destination"):
        _store_uri("models:/m/1", "mlflow-artifacts:/1/models/m-01/artifacts", None)


# --- a local sqlite store: the address is a path; --from-store refuses it -------------------------------------


@pytest.fixture(scope="module")
def local_store(tmp_path_factory, tracking_template, fitted_pipeline, training_frame):
    """One sqlite store for the module: the tiny Pipeline logged with mlflow_triton (``reg``) and with MLflow's
    own flavor (``plain``); ``(store, ModelInfo)``."""
    import mlflow

    from mlflow_triton import sklearn as triton_sklearn
    from tests.unit.conftest import TrackingStore

    store = TrackingStore.create(tmp_path_factory.mktemp("deploy-store"), tracking_template)
    with store.active(), mlflow.start_run():
        info = triton_sklearn.log_model(
            fitted_pipeline,
            input_example=training_frame.iloc[:3].copy(),
            name="clf",
            pyfunc_predict_fn="predict_proba",
            registered_model_name="reg",
        )
        triton_sklearn.log_model(
            fitted_pipeline,
            input_example=training_frame.iloc[:3].copy(),
            name="batched",
            pyfunc_predict_fn="predict_proba",
            registered_model_name="batched",
            max_batch_size=8,
        )
        mlflow.sklearn.log_model(
            fitted_pipeline, name="plain", pip_requirements=["scikit-learn"], registered_model_name="plain"
        )
    return store, info


@pytest.fixture
def logged_locally(local_store):
    store, info = local_store
    with store.active():
        yield info


@pytest.mark.parametrize("uri", ["models:/reg/1", "runs:/{run_id}/clf", "{model_uri}"])
def test_locate_returns_the_stored_repository_folder_when_the_store_is_local(logged_locally, uri):
    from mlflow_triton.deploy import locate_repository

    location = locate_repository(uri.format(run_id=logged_locally.run_id, model_uri=logged_locally.model_uri))

    assert (location.scheme, location.model_name, location.is_object_store) == ("local", "clf", False)
    assert location.address.endswith(f"/models/{logged_locally.model_id}/artifacts/model_repository")
    assert (Path(location.address) / "clf" / "config.pbtxt").is_file()


def test_locate_names_one_model_directory_when_the_model_is_batched(logged_locally):
    from mlflow_triton.deploy import locate_repository
    from mlflow_triton.deploy._kserve import inference_service

    location = locate_repository("models:/batched/1")

    assert location.models == ("batched",)
    assert sorted(p.name for p in Path(location.address).iterdir()) == ["batched"]
    manifest = inference_service("s3://bucket/x", location.model_name, models=location.models)
    assert manifest["spec"]["predictor"]["triton"]["args"] == ["--model-control-mode=explicit", "--load-model=batched"]
    assert locate_repository("models:/reg/1").models == ("clf",)


def test_locate_refuses_with_how_to_relog_when_the_model_has_no_triton_flavor(logged_locally):
    from mlflow_triton.deploy import locate_repository
    from mlflow_triton.deploy.errors import NotATritonModelError

    with pytest.raises(NotATritonModelError, match=r"models:/plain/1 has no triton flavor \(flavors: .*sklearn"):
        locate_repository("models:/plain/1")


def test_locate_refuses_naming_the_uri_when_the_model_does_not_exist(logged_locally):
    from mlflow_triton.deploy import locate_repository

    with pytest.raises(StoreLocationError, match=r"models:/reg/7: model not found"):
        locate_repository("models:/reg/7")


@pytest.mark.parametrize("command", ["check", "serve"])
def test_from_store_commands_refuse_pointing_to_the_plain_command_when_the_store_is_local(
    logged_locally, command, capsys
):
    from mlflow_triton.deploy import check_from_store_command, serve_from_store_command

    run = check_from_store_command if command == "check" else serve_from_store_command

    status = run(["models:/reg/1"])

    assert status == 1
    assert re.search(
        rf"mlflow-triton {command}: error: models:/reg/1: stored on this machine's disk .* without "
        "--from-store",
        capsys.readouterr().err,
    )


def test_locate_command_prints_the_local_path_when_the_store_is_local(logged_locally, capsys):
    from mlflow_triton.deploy import locate_command

    status = locate_command("models:/reg/1")

    out, err = capsys.readouterr()
    assert status == 0
    assert Path(out.strip()).is_dir() and "Triton model 'clf'" in err
