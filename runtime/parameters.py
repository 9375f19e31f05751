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

Triton changes some values on the way, where this module cannot see it (measured
on Triton 2.51, docs/request-parameters.md): its HTTP front end reads many JSON
numbers of 16 or 17 significant digits as a neighbouring double, and both
front ends cut a string at its first U+0000. The lossless channel is the string
parameter ``mlflow_params``: the JSON text of the whole params object, as
MLflow's scoring server takes ``params``. Triton passes a string unchanged when it
holds no U+0000, and JSON text writes U+0000 as ``\\u0000``; Python's ``json``
reads it here exactly as MLflow's scoring server reads its body (doubles
exactly, the last of duplicate keys). What the module can see, it refuses:
a key sent twice (Triton passes the first value twice, MLflow would keep the
last), an integer beyond int64 for a ``long`` (Triton's HTTP front end passes it
as a double), JSON text that ends early (a U+0000 cut it). Its values are
checked exactly as MLflow's scoring server checks ``params``: a list parameter is
a JSON array there (a string is refused, not read as JSON text), and a refusal
is MLflow's own message, which may quote the value.

Messages name the parameter and the accepted ones; outside ``mlflow_params``
they never quote a value.
"""

import json

# <mlflow-triton package imports: removed when composing model.py>
from .errors import RequestError

# </mlflow-triton package imports>

LIST_SHAPE = (-1,)
# The string request parameter carrying the JSON text of all of a request's params (read like MLflow's ``params``).
PARAMS_CHANNEL = "mlflow_params"
INT64_RANGE = (-(2**63), 2**63 - 1)
CUT_AT_NUL = (
    "Triton cuts a string parameter at its first U+0000 character, so a U+0000 in the text ends it there; "
    "write it as the escape \\u0000 in the JSON text (json.dumps does), or send all parameters as JSON text in "
    f"the `{PARAMS_CHANNEL}` parameter"
)


def params_schema_of(predictor):
    """The loaded model's ``ParamSchema`` (``pyfunc`` metadata), or None when its signature has none."""
    metadata = getattr(predictor, "metadata", None)
    get_params_schema = getattr(metadata, "get_params_schema", None)
    return get_params_schema() if get_params_schema is not None else None


def request_params(raw, schema):
    """The checked ``params`` for ``predict`` from ``request.parameters()`` text; None when it carries none.

    ``schema`` is the model's ``ParamSchema`` or None. Raises ``RequestError``
    naming the parameter for an unknown name, a value of another type or shape,
    or any parameter sent to a model without a params schema.
    """
    given = _parsed(raw)
    channel = PARAMS_CHANNEL in given
    if channel:
        given = _from_channel(given)
    if not given:
        return None
    names = ", ".join(f"`{name}`" for name in sorted(given))
    if schema is None or not schema.params:
        raise RequestError(
            f"Request parameter(s) {names}: this model takes no parameters (its MLflow signature has no params "
            "schema), so they cannot be applied; send the request without parameters, or log the model with a "
            "signature that declares them (infer_signature(..., params={...}))"
        )
    specs = {spec.name: spec for spec in schema.params}
    unknown = sorted(set(given) - set(specs))
    if unknown:
        raise RequestError(
            f"Request parameter(s) {', '.join(f'`{name}`' for name in unknown)} not accepted by this model; "
            f"accepted: {_accepted(schema)}"
        )
    check = _checked_as_mlflow if channel else _checked
    return {name: check(value, specs[name]) for name, value in given.items()}


def _parsed(raw):
    if raw is None or raw == "":
        return {}
    try:
        given = json.loads(raw, object_pairs_hook=_once_each)
    except RequestError:
        raise
    except (TypeError, ValueError):
        raise RequestError("The request's parameters are not a JSON object") from None
    if not isinstance(given, dict):
        raise RequestError("The request's parameters are not a JSON object")
    return given


def _once_each(pairs):
    """A JSON object's members as a dict; ``RequestError`` for a key given twice.

    Triton's HTTP front end passes every member of a request's ``parameters``, a repeated key
    with its first value each time, where MLflow's scoring server (Python's ``json``) keeps the last.
    """
    names = [name for name, _ in pairs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise RequestError(
            f"Request parameter(s) {', '.join(f'`{name}`' for name in repeated)} given more than once; Triton "
            "passes the first value where MLflow's scoring server keeps the last: send each parameter once"
        )
    return dict(pairs)


def _from_channel(given):
    """The params object of the ``mlflow_params`` JSON text, read as MLflow's scoring server reads ``params``."""
    others = sorted(set(given) - {PARAMS_CHANNEL})
    if others:
        raise RequestError(
            f"Request parameter(s) {', '.join(f'`{name}`' for name in others)} sent beside `{PARAMS_CHANNEL}`: "
            f"send all parameters in `{PARAMS_CHANNEL}` (the JSON text of the params object), or none there"
        )
    text = given[PARAMS_CHANNEL]
    if not isinstance(text, str):
        raise RequestError(
            f"Request parameter `{PARAMS_CHANNEL}` must be a string (the JSON text of the params object), "
            f"got {_kind(text)}"
        )
    try:
        params = json.loads(text)  # Python's json, as MLflow's scoring server: a repeated key keeps its last value
    except ValueError as error:
        raise RequestError(
            f"Request parameter `{PARAMS_CHANNEL}` must be the JSON text of the params object; "
            f"{_unreadable(text, error)}"
        ) from None
    if not isinstance(params, dict):
        raise RequestError(
            f"Request parameter `{PARAMS_CHANNEL}` must be the JSON text of the params object, got {_kind(params)}"
        )
    return params


def _unreadable(text, error):
    """Why JSON ``text`` does not parse, without quoting it; a text that ends early names Triton's U+0000 cut."""
    if error.msg.startswith("Unterminated string") or error.pos >= len(text.rstrip()):
        return f"the text is not valid JSON: it ends before its JSON value does ({CUT_AT_NUL})"
    return "the text is not valid JSON"


def _checked(value, spec):
    """``value`` as MLflow's ``ParamSpec.validate_param_spec`` returns it, or ``RequestError``."""
    from mlflow.types.schema import Object, ParamSpec  # mlflow is loaded with the model by now

    structured = spec.shape == LIST_SHAPE or isinstance(spec.dtype, Object)
    if structured and isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise RequestError(
                f"Request parameter `{spec.name}` must be {_expected(spec)}, sent as JSON text (Triton's request "
                f"parameters carry only scalars); {_unreadable(value, error)}"
            ) from None
    try:
        return ParamSpec.validate_param_spec(value, spec)
    except Exception:  # MLflow's message quotes the value; the client gets the expected type instead
        raise RequestError(
            f"Request parameter `{spec.name}` must be {_expected(spec)}, got {_kind(value, spec)}; "
            f"accepted: {_accepted_spec(spec)}"
        ) from None


def _checked_as_mlflow(value, spec):
    """``value`` as MLflow's scoring server takes it from ``params``, or ``RequestError`` with MLflow's words.

    In ``mlflow_params`` every value is already what it is in MLflow's ``params`` (a list a JSON array), so JSON
    text is not read here: MLflow would refuse a string for a list. MLflow's message may quote the value.
    """
    from mlflow.types.schema import ParamSpec  # mlflow is loaded with the model by now

    try:
        return ParamSpec.validate_param_spec(value, spec)
    except Exception as error:
        reason = " ".join(str(getattr(error, "message", error)).split())
        raise RequestError(f"Request parameter `{spec.name}` (in `{PARAMS_CHANNEL}`): {reason}") from None


def _expected(spec):
    dtype = getattr(spec.dtype, "name", None) or "object"
    if spec.shape == LIST_SHAPE:
        return f"a list of {dtype} values"
    return f"an object ({spec.dtype})" if dtype == "object" else _a(dtype)


def _a(word):
    """``word`` with its indefinite article: "an integer", "a double"."""
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _kind(value, spec=None):
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} value(s)"
    if spec is not None and _beyond_int64(value) and getattr(spec.dtype, "name", None) == "long":
        low, high = INT64_RANGE
        return (
            f"a number beyond the int64 range {low}..{high} (Triton's HTTP front end passes an integer beyond it "
            "as a double)"
        )
    return _a(type(value).__name__)


def _beyond_int64(value):
    """A double at or past +-2**63: what Triton makes of an integer beyond int64 (an int64 it passes as one)."""
    return isinstance(value, float) and value.is_integer() and abs(value) >= 2**63


def _accepted_spec(spec):
    return f"{spec.name} ({_expected(spec)}, default {json.dumps(spec.default, default=str)})"


def _accepted(schema):
    return ", ".join(_accepted_spec(spec) for spec in schema.params)
