"""The example predicted in memory, the signature and the mapping: the first stages of the packaging flow.

The example (with its params) is predicted through MLflow's own pyfunc wrapper of the in-memory model, as the
served model will predict it; the signature is recorded or inferred from that prediction, and the mapping
(``_schema.layout_from_signature``) derived from it. Nothing is written.
"""

import collections.abc
import copy
import warnings

import numpy as np
import pandas as pd
from mlflow.models import Model, ModelSignature, infer_signature

from mlflow_triton.runtime.parameters import PARAMS_CHANNEL

from ._examples import DATAFRAME_REMEDY, example_columns, for_prediction, input_schema, lists_in_one_row
from ._schema import is_any_schema, layout_from_signature, may_be_a_scalar_prediction, signature_for_pyfunc
from .errors import ExampleFormError, ExamplePredictionError, InvalidArgumentError, MlflowTritonError, ValidationError


def predict_and_map(framework, model, example_input, example_params, signature, options):
    """Predict the example (with the example's params, if any) in memory and derive the mapping.

    Returns ``(adapter, the signature to record, the signature mapped, layout, output_mapping)``. An explicit
    signature is recorded as given and enforced on the example by MLflow's own schema enforcement (a single named
    input tensor is recorded unnamed where the flavor takes no dict: ``signature_for_pyfunc``; the layout keeps the
    name). ``None``: MLflow's inference from the example and its prediction, recorded. A signature without outputs,
    or ``False`` (nothing recorded): the Triton outputs are mapped from the schema MLflow infers for the example's
    prediction, and ``output_mapping`` (for validation.json) says so; the recorded signature stays the caller's.
    """
    recorded = None if signature is False else signature
    model_meta = Model(signature=signature_for_pyfunc(recorded, framework.flavor))
    adapter = framework.pyfunc_adapter(model, options, model_meta)
    if signature is None and example_params:
        # As MLflow's own inference (``_infer_signature_from_input_example``): the example is predicted with the
        # params schema inferred from its params; without one MLflow's pyfunc drops the params (with a warning).
        model_meta.signature = ModelSignature(params=infer_signature(params=example_params).params)
    if recorded is not None and example_params and recorded.params is None:
        raise InvalidArgumentError(
            f"input_example carries params ({', '.join(sorted(example_params))}) but the signature has no params "
            "schema, so a request could not set them; declare them: infer_signature(input, output, params={...})"
        )
    examples = None
    mapped = recorded
    output_mapping = None
    outputs_any = recorded is not None and recorded.outputs is not None and is_any_schema(recorded.outputs)
    if recorded is not None and recorded.outputs is not None and may_be_a_scalar_prediction(recorded.outputs):
        # One unnamed output column: the prediction may be one value for the whole input, mapped as a scalar.
        prediction = _predict_example(adapter, example_input, recorded.inputs, example_params)
        examples = {"input": example_input, "output": prediction}
    if recorded is None or recorded.outputs is None or outputs_any:
        schema = recorded.inputs if recorded is not None else input_schema(example_input)
        prediction = _predict_example(adapter, example_input, schema, example_params)
        if signature is False:
            _refuse_unframed_prediction(adapter, example_input, prediction, example_params)
        inferred = infer_signature(example_input, prediction, params=example_params)
        examples = {"input": example_input, "output": prediction}
        # signature=False records none and maps the inferred one; a recorded signature keeps its inputs and params
        mapped = inferred if recorded is None else ModelSignature(recorded.inputs, inferred.outputs, recorded.params)
        if signature is None:  # MLflow's own inference, recorded
            model_meta.signature = mapped
        else:
            output_mapping = {
                "from": "the example's prediction",
                "why": _why_outputs_from_example(recorded, outputs_any),
                "how": "the output schema MLflow's infer_signature gives for the prediction of the input example; "
                "the MLflow model's own signature is left as given",
            }
    if mapped.params is not None and PARAMS_CHANNEL in {spec.name for spec in mapped.params.params}:
        raise InvalidArgumentError(
            f"The params schema declares a parameter `{PARAMS_CHANNEL}`: that request parameter carries all of a "
            "request's params as JSON text (docs/request-parameters.md), so a request could not set it; rename it"
        )
    layout = layout_from_signature(mapped, framework.flavor, examples, example_columns(example_input, mapped.inputs))
    return adapter, (False if signature is False else model_meta.signature), mapped, layout, output_mapping


def _why_outputs_from_example(recorded, outputs_any):
    if recorded is None:
        return "the MLflow model records no signature"
    if outputs_any:
        return "the signature's outputs are Any (MLflow could not infer their type)"
    return "the signature has no outputs"


def _predict_example(adapter, example_input, schema, example_params):
    """The prediction of ``example_input`` as MLflow's schema enforcement gives it to the model for the input
    ``schema`` (records, a list, a dict of scalars or a scalar as a DataFrame: ``_examples``), on a copy: a model
    may change its input (a transformer adding a column in place), never the caller's example. A dict of
    equal-length lists that MLflow makes one row of Array cells, which the model cannot predict, is refused with the
    remedy: the caller most likely meant one row per item."""
    try:
        prediction = predict(adapter, for_prediction(copy.deepcopy(example_input), schema), "example", example_params)
    except ValidationError as error:
        meant_rows = lists_in_one_row(example_input, schema)
        if meant_rows is None:
            raise ExamplePredictionError(str(error)) from error.__cause__
        raise ExampleFormError(
            f"{meant_rows}, which the model failed to predict ({error.__cause__!r}); {DATAFRAME_REMEDY}"
        ) from error.__cause__
    _refuse_a_stream(prediction)
    return _as_plain(prediction)


def _refuse_a_stream(prediction):
    """A ``predict`` that returns a generator (or any iterator) streams its answer: MLflow's scoring server cannot
    answer it either (``json`` cannot write a generator: ``mlflow models serve`` answers 500 "Object of type
    generator is not JSON serializable"), and a Triton tensor holds whole values, so it is refused with what to do."""
    if isinstance(prediction, collections.abc.Iterator):
        raise ValidationError(
            f"The prediction of the example is a {type(prediction).__name__} (predict yields its answer instead of "
            "returning it): MLflow's scoring server cannot answer it either (mlflow models serve answers HTTP 500, "
            "'Object of type generator is not JSON serializable'), and a Triton tensor holds whole values; return "
            "the whole answer from predict (a list, an array or a DataFrame, e.g. list(...) of the generator); a "
            "PythonModel streams from predict_stream, which a Triton repository does not serve"
        )


def _refuse_unframed_prediction(adapter, example_input, framed_prediction, example_params):
    """Without a signature MLflow enforces nothing: ``pyfunc.predict`` hands the model its input as it is given,
    while a Triton request reaches it as the columns (or tensors) the mapping decodes, as MLflow's scoring server
    builds them. Where the two differ for the example (a text given as a str, a dict of lists), no request can be
    answered like ``pyfunc.predict`` of the same value, so the model is refused with the remedy."""
    try:
        as_given = _as_plain(predict(adapter, copy.deepcopy(example_input), "example as given", example_params))
    except ValidationError as error:
        differ = f"the example as given fails to predict ({error.__cause__!r})"
    else:
        if _same_prediction(as_given, framed_prediction):
            return
        differ = "the two predictions of the example differ"
    raise ValidationError(
        f"The model has no signature, so MLflow hands predict the input as it is given (here a "
        f"{type(example_input).__name__}), while a Triton request reaches it as the "
        f"{type(for_prediction(copy.deepcopy(example_input), input_schema(example_input))).__name__} MLflow's "
        f"schema inference gives for it, and {differ}; log the model with a "
        "signature (infer_signature(input, prediction)), so that MLflow hands both the same value, or give an input "
        "that is already a DataFrame or an array (input_example=; mlflow-triton add-repository --input FILE)"
    )


def _same_prediction(first, second):
    """Whether two predictions are equal in type, shape and value (NaN equal to NaN)."""
    if type(first) is not type(second):
        return False
    if isinstance(first, (pd.DataFrame, pd.Series)):
        return first.equals(second) and list(first.dtypes if first.ndim == 2 else [first.dtype]) == list(
            second.dtypes if second.ndim == 2 else [second.dtype]
        )
    if isinstance(first, np.ndarray):
        return (
            first.shape == second.shape
            and first.dtype == second.dtype
            and bool(np.array_equal(first, second, equal_nan=first.dtype.kind in "fc"))
        )
    try:
        return bool(first == second)
    except (TypeError, ValueError):
        return repr(first) == repr(second)


def predict(adapter, model_input, what, example_params=None):
    try:
        if example_params is None:
            return adapter.predict(model_input)
        return adapter.predict(model_input, params=example_params)
    except MlflowTritonError:
        raise
    except Exception as error:
        raise ValidationError(f"Prediction of the {what} failed: {type(error).__name__}: {error}") from error


def _as_plain(prediction):
    """Predictions MLflow's signature inference understands (torch tensors -> numpy)."""
    if hasattr(prediction, "detach") and hasattr(prediction, "cpu"):
        return prediction.detach().cpu().numpy()
    return prediction


def request_dependent_outputs(adapter, example_input, example_params, mapped):
    """Why a request may get other output columns than the example did, or ``None``.

    Each boolean column of the example (a DataFrame, a dict or records) and each boolean parameter of the signature
    is flipped in turn and the example predicted again: where MLflow infers another output schema for that
    prediction (pmdarima's ``return_conf_int`` adds ``lower_ci``/``upper_ci``), the outputs depend on the request
    and a mapping fixed at logging time cannot carry them. A flipped example that fails to predict proves nothing."""
    schema = mapped.inputs
    baseline = _output_schema(adapter, example_input, schema, example_params)
    if baseline is None:
        return None
    variants = [
        (f"input column `{name}`", flipped, example_params) for name, flipped in _flipped_columns(example_input)
    ]
    for spec in mapped.params.params if mapped.params is not None else ():
        if getattr(spec.dtype, "name", None) == "boolean" and spec.shape is None:
            value = (example_params or {}).get(spec.name, spec.default)
            variants.append(
                (f"parameter `{spec.name}`", example_input, {**(example_params or {}), spec.name: not value})
            )
    for what, model_input, params in variants:
        varied = _output_schema(adapter, model_input, schema, params)
        if varied is not None and varied != baseline:
            return (
                f"the prediction's columns depend on the request: with {what} flipped the example predicts "
                f"{_columns_of_schema(varied)} instead of {_columns_of_schema(baseline)}"
            )
    return None


def _output_schema(adapter, model_input, schema, params):
    try:
        prediction = predict(adapter, for_prediction(copy.deepcopy(model_input), schema), "varied example", params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # MLflow's hints about the inferred types: said once, for the example
            return infer_signature(model_output=_as_plain(prediction)).outputs.to_dict()
    except Exception:  # a variant the model refuses, or a prediction MLflow infers no schema for: no evidence
        return None


def _flipped_columns(example_input):
    """``(name, the example with that boolean column negated)`` for each column holding only booleans."""
    if isinstance(example_input, pd.DataFrame):
        names = [name for name in example_input.columns if example_input[name].dtype == bool]
        return [(name, example_input.assign(**{str(name): ~example_input[name]})) for name in names]
    if isinstance(example_input, dict):
        return [
            (name, {**example_input, name: _negated(value)})
            for name, value in example_input.items()
            if _negated(value) is not None
        ]
    if isinstance(example_input, list) and example_input and all(isinstance(row, dict) for row in example_input):
        names = [name for name in example_input[0] if all(isinstance(row.get(name), bool) for row in example_input)]
        return [(name, [{**row, name: not row[name]} for row in example_input]) for name in names]
    return []


def _negated(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, list) and value and all(isinstance(item, bool) for item in value):
        return [not item for item in value]
    return None


def _columns_of_schema(schema):
    names = [str(column.get("name", "(unnamed)")) for column in schema]
    return ", ".join(names) if len(names) < 12 else f"{len(names)} columns"
