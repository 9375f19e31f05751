"""MLflow's serving protocol: the body ``mlflow models serve`` accepts at ``/invocations`` in, its answer out.

A repository whose contract says protocol ``mlflow`` maps no signature onto tensors: its model takes one BYTES
tensor ``request`` holding the HTTP body a client of MLflow's scoring server sends (JSON in every form MLflow reads,
or CSV) and an optional BYTES tensor ``content_type`` (its Content-Type header, ``application/json`` when left out),
and answers one BYTES tensor ``response`` holding exactly the body MLflow's server returns. The body is read,
predicted and written by MLflow's own code, ``mlflow.pyfunc.scoring_server.invocations`` (the function behind its
``/invocations`` route, the same in MLflow 3.14 to 3.17): there is no second parser to drift from MLflow's.

:class:`MlflowProtocol` answers a body as :class:`ProtocolAnswer`: MLflow's status, the body it returns, and for a
refusal MLflow's error code and message (never its stack trace) and the exception. The Triton entry point
(``triton_model.py``) turns a 200 into the ``response`` tensor, MLflow's 4xx into ``INVALID_ARG`` and its 5xx into
``INTERNAL``. The logging side proves the example's serving body with the same class, and ``check`` computes the
answer Triton must give with it.

A streaming repository's model (decoupled: ``model_transaction_policy { decoupled: true }``) takes the same tensors
and answers one ``response`` per chunk: :meth:`MlflowProtocol.stream` reads the JSON body with MLflow's own parser
(``scoring_server._parse_json_data``, as ``invocations`` does), calls ``pyfunc.predict_stream(data, params=params)``
and yields each chunk as JSON text, as MLflow's agent server writes a server-sent event's data (``json.dumps``;
MLflow's ``NumpyEncoder`` for numpy values). The body is read as it is, a ``"stream"`` key included (MLflow's
agent interfaces carry it in their request). MLflow's refusals (its 4xx) raise ``RequestError`` with MLflow's error
code and message; the model's own exceptions pass through.
"""

import contextlib
import dataclasses
import json
import os

import numpy as np

# <mlflow-triton package imports: removed when composing model.py>
from ..shared_contract.contract import CONTENT_TYPE_TENSOR, REQUEST_TENSOR, RESPONSE_TENSOR
from .errors import RequestError
from .loading import temporary_environment

# </mlflow-triton package imports>

JSON_CONTENT_TYPE = "application/json"
# MLflow's scoring server sets it when it starts (scoring_server.init); type-hinted models read it while predicting.
SERVING_ENVIRONMENT_VARIABLE = "_MLFLOW_IS_IN_SERVING_ENVIRONMENT"
OK = 200


@dataclasses.dataclass(frozen=True)
class ProtocolAnswer:
    """MLflow's answer to one body: its HTTP status, the body it returns and, for a refusal, why."""

    status: int
    body: str
    heading: str | None = None  # a refusal's "MLflow answered HTTP <status> (<error code>)": no request data
    message: str | None = None  # MLflow's message, which may quote the request
    error: BaseException | None = None  # the MlflowException MLflow answered with, if it raised one

    @property
    def reason(self):
        """``"<heading>: <MLflow's message>"`` for a refusal, None for a 200."""
        return None if self.heading is None else f"{self.heading}: {self.message}"


def mlflow_json_parser():
    """``mlflow.pyfunc.scoring_server._parse_json_data(data, metadata, input_schema)``: the parser ``invocations``
    reads a JSON body with (``.data``, ``.params``), the same from MLflow 3.14 to 3.17."""
    from mlflow.pyfunc.scoring_server import _parse_json_data

    return _parse_json_data


def mlflow_invocations():
    """``mlflow.pyfunc.scoring_server.invocations(data, content_type, model, input_schema)``.

    The one place this runtime reaches into MLflow's scoring server: the signature is the same from MLflow 3.14
    (the oldest this package supports) to 3.17; a release that changes it is adapted here.
    """
    from mlflow.pyfunc import scoring_server

    return scoring_server.invocations


class MlflowProtocol:
    """A loaded pyfunc model behind MLflow's own ``/invocations`` code."""

    def __init__(self, predictor):
        self.predictor = predictor
        self.input_schema = predictor.metadata.get_input_schema()
        self._invocations = mlflow_invocations()
        self._parse_json = mlflow_json_parser()

    def answer(self, body, content_type=JSON_CONTENT_TYPE):
        """What MLflow's scoring server answers to ``body`` (bytes) sent with ``content_type``."""
        from mlflow.exceptions import MlflowException

        try:
            result = self._invocations(body, content_type, self.predictor, self.input_schema)
        except MlflowException as error:  # MLflow's app answers it with serialize_as_json() and its HTTP status
            return _refusal(error)
        if result.status == OK:
            return ProtocolAnswer(OK, result.response)
        return ProtocolAnswer(result.status, result.response, f"MLflow answered HTTP {result.status}", result.response)

    def stream(self, body, content_type=JSON_CONTENT_TYPE):
        """The chunks ``pyfunc.predict_stream`` yields for the JSON ``body``, each as JSON text.

        MLflow's refusal of the body or of a value (an ``MlflowException`` with a 4xx status) raises
        ``RequestError``; any other exception of the model's passes through. Closing this generator closes the
        model's (a client that cancelled): its ``finally`` blocks run."""
        from mlflow.exceptions import MlflowException
        from mlflow.utils.proto_json_utils import NumpyEncoder

        if content_type.split(";")[0].strip().lower() != JSON_CONTENT_TYPE:
            raise RequestError(
                f"Tensor {CONTENT_TYPE_TENSOR} is {content_type!r}: a stream takes a JSON body ({JSON_CONTENT_TYPE!r})"
            )
        chunks = None
        try:
            parsed = self._parse_json(body, self.predictor.metadata, self.input_schema)
            chunks = iter(self.predictor.predict_stream(parsed.data, params=parsed.params))
            for chunk in chunks:
                yield json.dumps(chunk, cls=NumpyEncoder)
        except MlflowException as error:
            answer = _refusal(error)
            if answer.status >= 500:
                raise
            raise RequestError(answer.reason) from None
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()


def _refusal(error):
    """MLflow's answer to the ``MlflowException`` ``error``: its status, JSON body, heading and message."""
    status = error.get_http_status_code()
    heading = f"MLflow answered HTTP {status} ({error.error_code})"
    return ProtocolAnswer(status, error.serialize_as_json(), heading, error.message, error)


def protocol_request(arrays):
    """``(body bytes, content type)`` from the request's ``{tensor name: array}``."""
    body = _single_element(arrays, REQUEST_TENSOR)
    if body is None:
        raise RequestError(
            f"Tensor {REQUEST_TENSOR} is missing: send the body `mlflow models serve` accepts at /invocations in it"
        )
    content_type = _single_element(arrays, CONTENT_TYPE_TENSOR)
    if content_type is None:
        return body, JSON_CONTENT_TYPE
    try:
        return body, content_type.decode("utf-8")
    except UnicodeDecodeError:
        raise RequestError(f"Tensor {CONTENT_TYPE_TENSOR} is not valid UTF-8 text") from None


def response_array(body):
    """The ``response`` tensor: MLflow's body as the one element of a BYTES array."""
    return np.array([body.encode("utf-8")], dtype=object)


def response_tensors(answer):
    """``{response tensor: array}`` of a 200 answer (what a client reads from Triton)."""
    return {RESPONSE_TENSOR: response_array(answer.body)}


def enter_serving_environment():
    """Mark this process as MLflow's scoring server marks its own (``scoring_server.init``)."""
    os.environ[SERVING_ENVIRONMENT_VARIABLE] = "true"


def leave_serving_environment():
    """Unmark this process: a typed repository's model predicts as ``pyfunc.predict`` does in a plain process, where
    its answers were proven. (Under the mark MLflow reads the value of a type-hinted model's input as a serving
    request: a ``str`` for ``bytes`` is base64-decoded.)"""
    os.environ.pop(SERVING_ENVIRONMENT_VARIABLE, None)


@contextlib.contextmanager
def serving_environment():
    """:func:`enter_serving_environment` for a while (logging, check), restored afterwards."""
    with temporary_environment({SERVING_ENVIRONMENT_VARIABLE: "true"}):
        yield


@contextlib.contextmanager
def outside_serving_environment():
    """:func:`leave_serving_environment` for a while (the typed mapping's proof in logging, check's oracle), restored
    afterwards: a caller's process may carry the mark (``scoring_server.init`` sets it for good)."""
    with temporary_environment({SERVING_ENVIRONMENT_VARIABLE: None}):
        yield


def _single_element(arrays, name):
    """The one element of tensor ``name`` as bytes, or None when the request left it out."""
    array = arrays.get(name)
    if array is None:
        return None
    if array.size != 1:
        raise RequestError(f"Tensor {name} holds {array.size} elements; send exactly one (shape [1])")
    value = array.ravel()[0]
    if isinstance(value, str):
        return value.encode("utf-8")
    if not isinstance(value, bytes):
        raise RequestError(f"Tensor {name} must be BYTES, got {type(value).__name__} elements")
    return value
