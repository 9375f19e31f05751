"""The KServe ``InferenceService`` that ``mlflow-triton kserve`` writes, checked against KServe's SDK models.

Here rather than in tests/unit: ``kserve`` is installed (without its dependencies) in the main test
environment only; see ``tests/support/kserve_schema.py`` for what the validation covers. The manifest
written for a model in a real S3 store is checked in ``test_artifact_store_s3.py``.
"""

import copy

import pytest

from mlflow_triton.deploy import inference_service
from mlflow_triton.deploy.errors import KServeManifestError
from tests.support.kserve_schema import ManifestInvalid, validate_inference_service

STORAGE_URI = "s3://team-bucket/mlartifacts/1/models/m-01/artifacts/model_repository"


@pytest.mark.parametrize(
    "options", [{}, {"gpus": 2, "service_account": "mlflow-s3-reader", "triton_version": "25.01"}, {"name": "churn-v3"}]
)
def test_inference_service_validates_against_kserve_models_when_built(options):
    manifest = inference_service(STORAGE_URI, "classifier", **options)

    validate_inference_service(manifest)
    triton = manifest["spec"]["predictor"]["triton"]
    assert (triton["protocolVersion"], triton["storageUri"]) == ("v2", STORAGE_URI)
    assert triton["args"] == ["--model-control-mode=explicit", "--load-model=classifier"]


def test_inference_service_asks_for_the_gpus_when_gpus_are_given():
    manifest = inference_service(STORAGE_URI, "classifier", gpus=2, triton_version="25.01")

    triton = manifest["spec"]["predictor"]["triton"]
    assert (triton["runtimeVersion"], triton["resources"]["limits"]["nvidia.com/gpu"]) == ("25.01-py3", "2")


def test_inference_service_name_defaults_to_a_dns_label_made_from_the_triton_model_name():
    assert inference_service(STORAGE_URI, "Text_Classifier")["metadata"]["name"] == "text-classifier"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "Churn_Model"}, r"--name 'Churn_Model': KServe needs a DNS label"),
        ({"name": "x" * 46}, r"at most 45 characters"),
        ({"triton_version": "latest"}, r"--triton-version 'latest'"),
        ({"gpus": -1}, r"--gpus -1"),
    ],
)
def test_inference_service_is_refused_naming_the_option_when_an_option_is_invalid(options, message):
    with pytest.raises(KServeManifestError, match=message):
        inference_service(STORAGE_URI, "classifier", **options)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda m: m["spec"]["predictor"]["triton"].update(storageURI="s3://b/p"), r"'storageURI' is not a field"),
        (lambda m: m["spec"]["predictor"]["triton"].update(args="--strict"), r"triton\.args: expected a list"),
        (lambda m: m["spec"]["predictor"]["triton"]["resources"]["limits"].update(cpu=1), r"limits\.cpu: expected str"),
        (lambda m: m.update(spec={}), r"`predictor`, must not be `None`"),
    ],
)
def test_validation_rejects_the_manifest_when_a_field_does_not_fit_kserve(mutate, message):
    manifest = copy.deepcopy(inference_service(STORAGE_URI, "classifier"))
    mutate(manifest)

    with pytest.raises(ManifestInvalid, match=message):
        validate_inference_service(manifest)
