"""Addresses Triton reads a repository from, made from where MLflow stored it (``mlflow_triton.deploy.store``)."""

import pytest

from mlflow_triton.deploy import StoreAccessError, StoreLocationError, StorePathError
from mlflow_triton.deploy.store import _address, _store_uri

REPOSITORY = "mlartifacts/1/models/m-0123abcd/artifacts/model_repository"


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    for name in ("MLFLOW_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",
                 "MLFLOW_TRITON_ARTIFACTS_DESTINATION"):
        monkeypatch.delenv(name, raising=False)


def test_address_is_the_plain_s3_uri_when_no_custom_endpoint_is_set():
    location = _address("models:/m/1", "x", f"s3://team-bucket/{REPOSITORY}", "classifier")

    assert (location.address, location.storage_uri, location.scheme) == (
        f"s3://team-bucket/{REPOSITORY}", f"s3://team-bucket/{REPOSITORY}", "s3")


@pytest.mark.parametrize(("endpoint", "host"), [
    ("http://127.0.0.1:9000", "127.0.0.1:9000"),
    ("http://minio.internal", "minio.internal:80"),
    ("https://s3.example.org:8443/", "https://s3.example.org:8443"),
])
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


@pytest.mark.parametrize(("uri", "named"), [
    ("s3://Team_Bucket/models/model_repository", "bucket name 'Team_Bucket'"),
    ("s3://bucket/team models/model_repository", "path segment 'team models'"),
    ("s3://bucket/team~models/model_repository", "path segment 'team~models'"),
    ("gs://bucket/caf\u00e9/model_repository", "path segment 'caf\u00e9'"),
    ("wasbs://My_Container@acct.blob.core.windows.net/x/model_repository", "container name 'My_Container'"),
])
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
