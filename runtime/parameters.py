"""A request's parameters -> the ``params`` of ``pyfunc.predict``, checked against the model's params schema.

MLflow's scoring server hands the ``params`` of a request to ``predict(data,
params=...)``; a Triton request carries them as its ``parameters`` object (the
Python backend's ``request.parameters()`` returns it as JSON text). This module
turns that text into the ``params`` MLflow expects, and refuses what MLflow
would silently drop:

* a model whose signature has a params schema: every parameter must be one of
  the schema's, with a value MLflow's own ``ParamSpec.validate_param_spec``
  accepts (its type and shape; ``int`` -> ``double`` and the other conversions
  MLflow allows are kept). Parameters the request leaves out get the schema's
  defaults, as MLflow gives them;
* a model without a params schema: a request with any parameter is refused (MLflow
  would ignore it with a warning in the server log and answer with the defaults).

Triton's request parameters are scalars (bool, int, double, string); its HTTP
front end refuses lists, objects and null. A list parameter (shape ``(-1,)``)
or an object parameter is therefore sent as JSON text (``"[1, 2]"``) and decoded
here. Triton consumes its own keys (``sequence_id``, ``sequence_start``,
``sequence_end``, ``priority``, ``timeout``, ``binary_data_output``) before the
model sees the request and refuses keys starting with ``triton_``; what reaches
the model is the client's.

Messages name the parameter and the accepted ones; they never quote a value.
"""

import json

# <mlflow-triton package imports: removed when composing model.py>
from ..shared_contract.contract import MlflowTritonError

# </mlflow-triton package imports>

LIST_SHAPE = (-1,)


class ParameterError(MlflowTritonError, ValueError):
    """The request's parameters do not fit the model's params schema: the client's error."""


def params_schema_of(predictor):
    """The loaded model's ``ParamSchema`` (``pyfunc`` metadata), or None when its signature has none."""
    metadata = getattr(predictor, "metadata", None)
    get_params_schema = getattr(metadata, "get_params_schema", None)
    return get_params_schema() if get_params_schema is not None else None


def request_params(raw, schema):
    """The checked ``params`` for ``predict`` from ``request.parameters()`` text; None when it carries none.

    ``schema`` is the model's ``ParamSchema`` or None. Raises ``ParameterError``
    naming the parameter for an unknown name, a value of another type or shape,
    or any parameter sent to a model without a params schema.
    """
    given = _parsed(raw)
    if not given:
        return None
    names = ", ".join(f"`{name}`" for name in sorted(given))
    if schema is None or not schema.params:
        raise ParameterError(
            f"Request parameter(s) {names}: this model takes no parameters (its MLflow signature has no params "
            "schema), so they cannot be applied; send the request without parameters, or log the model with a "
            "signature that declares them (infer_signature(..., params={...}))"
        )
    specs = {spec.name: spec for spec in schema.params}
    unknown = sorted(set(given) - set(specs))
    if unknown:
        raise ParameterError(
            f"Request parameter(s) {', '.join(f'`{name}`' for name in unknown)} not accepted by this model; "
            f"accepted: {_accepted(schema)}"
        )
    return {name: _checked(value, specs[name]) for name, value in given.items()}


def _parsed(raw):
    if raw is None or raw == "":
        return {}
    try:
        given = json.loads(raw)
    except (TypeError, ValueError):
        raise ParameterError("The request's parameters are not a JSON object") from None
    if not isinstance(given, dict):
        raise ParameterError("The request's parameters are not a JSON object")
    return given


def _checked(value, spec):
    """``value`` as MLflow's ``ParamSpec.validate_param_spec`` returns it, or ``ParameterError``."""
    from mlflow.types.schema import Object, ParamSpec  # mlflow is loaded with the model by now

    structured = spec.shape == LIST_SHAPE or isinstance(spec.dtype, Object)
    if structured and isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ParameterError(
                f"Request parameter `{spec.name}` must be {_expected(spec)}, sent as JSON text (Triton's request "
                "parameters carry only scalars); the text is not valid JSON"
            ) from None
    try:
        return ParamSpec.validate_param_spec(value, spec)
    except Exception:  # MLflow's message quotes the value; the client gets the expected type instead
        raise ParameterError(
            f"Request parameter `{spec.name}` must be {_expected(spec)}, got {_kind(value)}; "
            f"accepted: {_accepted_spec(spec)}"
        ) from None


def _expected(spec):
    dtype = getattr(spec.dtype, "name", None) or "object"
    if spec.shape == LIST_SHAPE:
        return f"a list of {dtype} values"
    return f"an object ({spec.dtype})" if dtype == "object" else f"a {dtype}"


def _kind(value):
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} value(s)"
    return f"a {type(value).__name__}"


def _accepted_spec(spec):
    return f"{spec.name} ({_expected(spec)}, default {json.dumps(spec.default, default=str)})"


def _accepted(schema):
    return ", ".join(_accepted_spec(spec) for spec in schema.params)
