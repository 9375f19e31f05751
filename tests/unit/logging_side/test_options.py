"""The logging options as two values (``_options``): every wrapper's signature carries every option with the
option's own default, and every docstring documents each of them from the one template."""

import dataclasses
import inspect

import pytest

import mlflow_triton.pyfunc
import mlflow_triton.pytorch
import mlflow_triton.sklearn
import mlflow_triton.transformers
from mlflow_triton import _options

WRAPPERS = [mlflow_triton.sklearn, mlflow_triton.pytorch, mlflow_triton.transformers, mlflow_triton.pyfunc]
FUNCTIONS = [pytest.param(getattr(w, f), id=f"{w.__name__}.{f}") for w in WRAPPERS for f in ("log_model", "save_model")]
LOG_FUNCTIONS = [pytest.param(w.log_model, id=w.__name__) for w in WRAPPERS]


def _expected_fields(function):
    fields = dataclasses.fields(_options.TritonOptions)
    if function.__name__ == "log_model":
        fields += dataclasses.fields(_options.Destination)
    return [field for field in fields if "doc" in field.metadata]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_signature_carries_every_option_with_the_fields_default_when_a_wrapper_is_defined(function):
    parameters = inspect.signature(function).parameters
    for field in _expected_fields(function):
        assert field.name in parameters, field.name
        assert parameters[field.name].kind is inspect.Parameter.KEYWORD_ONLY, field.name
        assert parameters[field.name].default == field.default, field.name


@pytest.mark.parametrize("function", FUNCTIONS)
def test_docstring_documents_every_parameter_from_the_template_when_a_wrapper_is_defined(function):
    doc = inspect.getdoc(function)
    assert "{" + "destination}" not in doc and "{" + "triton}" not in doc and "{input_example}" not in doc
    documented = {line.split(":")[0].strip().lstrip("*") for line in doc.split("Args:")[1].splitlines() if ": " in line}
    assert set(inspect.signature(function).parameters) <= documented
    for field in _expected_fields(function):
        assert f"{field.name}: {field.metadata['doc'][:40]}" in " ".join(doc.split())


def test_values_take_the_wrappers_arguments_by_name_when_built_from_locals():
    arguments = {field: object() for field in _options.wrapper_fields()}
    destination, triton = _options.Destination.of(arguments), _options.TritonOptions.of(arguments)
    assert destination.experiment_id is None  # add_repository's own, never a wrapper argument
    for value in (destination, triton):
        for field in dataclasses.fields(value):
            if field.name in arguments:
                assert getattr(value, field.name) is arguments[field.name]
    with pytest.raises(dataclasses.FrozenInstanceError):
        triton.device = "gpu"  # type: ignore[misc]


def test_wrapper_hands_the_two_values_to_packaging_when_it_logs(monkeypatch):
    seen = {}

    def log_model(framework, model, input_example, signature, destination, triton, extra_options, **more):
        seen.update(destination=destination, triton=triton, extra_options=extra_options)
        return "info"

    monkeypatch.setattr(mlflow_triton.sklearn._packaging, "log_model", log_model)
    info = mlflow_triton.sklearn.log_model(
        "model", input_example=[1], name="m", tags={"a": "b"}, max_batch_size=4, pyfunc_predict_fn="predict_proba"
    )
    assert info == "info"
    assert seen["destination"] == _options.Destination(name="m", tags={"a": "b"})
    assert seen["triton"] == _options.TritonOptions(max_batch_size=4)
    assert seen["extra_options"] == {"pyfunc_predict_fn": "predict_proba"}


def test_docstring_takes_from_the_template_only_what_the_function_takes_and_does_not_document_itself_when_filled():
    @_options.documented
    def adopt(model_uri, *, name=None, max_batch_size=0, protocol="auto"):
        """Adopt a model.

        Args:
            model_uri: The source.
            name: The new model's name; default: the source's.
            {destination}
            {triton}
        """

    entries = [line.strip().partition(":")[0] for line in adopt.__doc__.split("Args:")[1].splitlines() if ": " in line]
    assert entries == ["model_uri", "name", "max_batch_size", "protocol"]
    assert "name: The new model's name; default: the source's." in adopt.__doc__
