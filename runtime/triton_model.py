"""``TritonPythonModel``: the entry point Triton's Python backend calls.

``initialize`` reads the contract and tensor declarations from the model
config Triton passes in, then loads ``1/artifact/`` on the instance's device.
When it is missing or MLflow cannot load it, ``initialize`` raises a
``ModelLoadError`` that says which, quotes MLflow's reason on one line and says
what to do; Triton shows it as the model's load error.

``execute`` answers each request on its own: a request that cannot be decoded,
predicted or encoded gets a ``TritonError``, and the others in the same batch
are answered normally. The error's code says whose fault it is:

* ``INVALID_ARG`` (HTTP 400, gRPC INVALID_ARGUMENT), a ``RequestError``: an
  input tensor missing, of another dtype or shape than configured, column
  tensors of unequal lengths, invalid UTF-8 in a text tensor, invalid JSON in a
  nested column or text that is not valid Unicode (a lone surrogate) in one, a
  value MLflow's schema enforcement rejects (for a nested column with the column
  and row it refuses), any other ``MlflowException`` that MLflow's scoring server
  answers with HTTP 400 (a generation field a pipeline refuses, a value a type
  hint refuses: MLflow's words), an empty request (a tensor without elements)
  that the model's ``predict`` fails on, or request parameters the model's
  params schema does not accept (``parameters.py``).
* ``INTERNAL`` (HTTP 500): the model's own ``predict`` raised anything else
  (``PredictionError``), the prediction does not fit the configured outputs
  (``OutputError``), or this runtime failed.

With ``max_batch_size > 0`` (dynamic batching), ``execute`` receives the
requests Triton's batcher gathered. Requests with the same raw parameters are
decoded one by one, their rows joined into one model input (a DataFrame, an
ndarray or a dict of ndarrays along the first axis), predicted once, encoded
once and split back by each request's row count (the rows are counted, joined
and split by ``batching.py``: field by field, so the DataFrame is built once). If
the joint prediction or its encoding fails, or an output tensor has another number
of rows than the requests together (which rows are whose is then unknown), each
request is answered alone as above, so a bad request gets its own error (a wrong
row count: an ``OutputError`` naming the tensor) and the others are answered. A
request without rows is always answered alone. A batched input is declared with
``reshape { shape: [1, *dims] }`` (``repository.config``) and arrives as
``[rows, 1, *dims]``; one without that row axis (a request that declared 0 rows
but carried elements) is a ``RequestError`` naming the tensor.
Without batching each request is decoded, predicted and encoded alone, and
nothing counts its rows.

A contract with protocol ``mlflow`` (MLflow's serving protocol, ``protocol.py``) maps no tensors: each request's
``request`` body is answered by MLflow's own ``/invocations`` code, MLflow's 4xx are ``INVALID_ARG`` with its
error code and message, its 5xx ``INTERNAL``. Where its config is decoupled (``model_transaction_policy { decoupled:
true }``: a streaming repository's ``<name>_stream``), ``execute`` sends one response per chunk of MLflow's
``predict_stream`` through each request's response sender, as the chunk is produced, then the final flag; it stops
the model's generator when the client cancels or disconnects. A failure ends the stream with one error response after
the chunks already sent: MLflow's 4xx ``INVALID_ARG``, the model's own exception ``INTERNAL``.

Messages name the tensor or column, the element index and the expected type,
and are cut to ``MAX_MESSAGE_LENGTH`` characters. Request errors found by this
runtime quote no request values; a value that does not fit an output is quoted
(it is the prediction's), and so may be the first line of MLflow's schema
refusal, cut to ``MAX_SCHEMA_REASON_LENGTH``, and MLflow's message for its other
400s (as MLflow's scoring server answers it). The
model's own exception text may quote the request (an unknown category, a long
string), so the client gets only its type and a reference; Triton's log gets
the text, cut to ``MAX_LOGGED_LENGTH``, under the same reference. Backends whose
``TritonError`` has no codes get the message without one (Triton answers 500).
"""

import copy
import json
import os
import pathlib
import sys
import traceback

import pandas as pd
import triton_python_backend_utils as pb_utils

# <mlflow-triton package imports: removed when composing model.py>
from ..shared_contract.contract import (
    CONTENT_TYPE_TENSOR,
    JSON_CONTENT,
    MLFLOW_PROTOCOL,
    REQUEST_TENSOR,
    RESPONSE_TENSOR,
    contract_from_model_config,
)
from .batching import (
    check_output_rows,
    count_rows,
    group_positions,
    join_fields,
    join_inputs,
    split_outputs,
)
from .codecs import StructureCodec, row_axis_inputs, tensor_types_from_model_config, without_row_axis
from .errors import ModelLoadError, OutputError, PredictionError, RequestError, RowCountError, TensorMappingError
from .loading import ARTIFACT_DIRECTORY, device_for_instance, load_predictor
from .parameters import params_schema_of, request_params
from .protocol import (
    MlflowProtocol,
    enter_serving_environment,
    leave_serving_environment,
    protocol_request,
    response_array,
    response_tensors,
)

# </mlflow-triton package imports>

MAX_MESSAGE_LENGTH = 1000
MAX_LOGGED_LENGTH = 4000
MAX_SCHEMA_REASON_LENGTH = 300
MAX_LOAD_REASON_LENGTH = 1000
REFETCH_HINT = (
    "fetch the directory again with mlflow_triton.triton.load_model(model_uri, dst_path=...) and serve that copy"
)
# MLflow marks a model input its schema enforcement refused with this error class.
SCHEMA_ENFORCEMENT_FAILED = "SCHEMA_ENFORCEMENT_FAILED"


class TritonPythonModel:
    def initialize(self, args):
        model_config = json.loads(args["model_config"])
        contract = contract_from_model_config(model_config)
        self.batching = contract.max_batch_size > 0
        speaks_mlflow = contract.protocol == MLFLOW_PROTOCOL  # MLflow's serving protocol (protocol.py): no codecs
        if not speaks_mlflow:
            self.inputs = StructureCodec(contract.inputs, tensor_types_from_model_config(model_config, "input"))
            output_types = tensor_types_from_model_config(model_config, "output")
            self.outputs = StructureCodec(contract.outputs, output_types, prediction=True)
            self.input_tensors = frozenset(self.inputs.mapping.tensor_names)  # the fields' tensors and masks
            self.row_axis = row_axis_inputs(model_config)  # batched inputs seen as [rows, 1, ...]
        self.device = device_for_instance(args.get("model_instance_kind"), args.get("model_instance_device_id"))
        artifact = pathlib.Path(args["model_repository"]) / str(args["model_version"]) / ARTIFACT_DIRECTORY
        self.predictor = _load(artifact, contract.flavor, self.device)
        self.params_schema = params_schema_of(self.predictor)
        self.protocol = MlflowProtocol(self.predictor) if speaks_mlflow else None
        self.streams = _decoupled(model_config)
        if self.streams and not speaks_mlflow:
            raise ModelLoadError(
                f"The config is decoupled (model_transaction_policy) but the contract's protocol is "
                f"{contract.protocol!r}: only protocol {MLFLOW_PROTOCOL!r} streams; {REFETCH_HINT}"
            )
        if speaks_mlflow:
            enter_serving_environment()
        else:
            leave_serving_environment()

    def execute(self, requests):
        if self.streams:
            for request in requests:
                self._stream(request)
            return None
        if self.protocol is not None:
            return [self._answer_body(request) for request in requests]
        if self.batching and len(requests) > 1:
            return self._answer_joined(requests)
        return [self._answer(request) for request in requests]

    def _answer(self, request):
        try:
            params = self._params(request)
            fields, empty_tensor = self._decode(request)
        except Exception as error:
            return _failure_response(error)
        return self._answer_decoded(fields, empty_tensor, params)

    def _answer_body(self, request):
        """MLflow's serving protocol: MLflow's answer to the body; its 4xx are the client's (``INVALID_ARG``)."""
        try:
            answer = self.protocol.answer(*protocol_request(_body_arrays(request)))
        except Exception as error:
            return _failure_response(error)
        if answer.reason is None:
            return pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor(name, array) for name, array in response_tensors(answer).items()]
            )
        if answer.status < 500:  # MLflow's message, never its stack trace
            return _failure_response(RequestError(answer.reason))
        return _failure_response(PredictionError(_withheld(answer.heading, answer.error or RuntimeError(answer.body))))

    def _stream(self, request):
        """Send each chunk of ``predict_stream`` as its own response, then the final flag; stop when the client has
        cancelled (checked before each chunk is asked for); a failure is the stream's last response."""
        sender = request.get_response_sender()
        sent = 0
        try:
            chunks = self.protocol.stream(*protocol_request(_body_arrays(request)))
            try:
                while not sender.is_cancelled():
                    chunk = next(chunks, None)
                    if chunk is None:
                        break
                    sender.send(
                        pb_utils.InferenceResponse(
                            output_tensors=[pb_utils.Tensor(RESPONSE_TENSOR, response_array(chunk))]
                        )
                    )
                    sent += 1
            finally:
                chunks.close()
        except Exception as error:
            if not isinstance(error, RequestError):
                error = PredictionError(_withheld(f"predict_stream failed after {sent} chunk(s)", error))
            sender.send(_failure_response(error), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def _answer_decoded(self, fields, empty_tensor, params=None):
        try:
            rows = _rows(fields) if self.batching else None
            outputs = self._encode(self._predict(self.inputs.value_of(fields), empty_tensor, params))
            if rows is not None:
                _check_rows(outputs, rows)
            output_tensors = [pb_utils.Tensor(name, array) for name, array in outputs.items()]
        except Exception as error:
            return _failure_response(error)
        return pb_utils.InferenceResponse(output_tensors=output_tensors)

    def _encode(self, prediction):
        try:
            return self.outputs.to_tensors(prediction)
        except TensorMappingError as error:
            raise OutputError(f"The prediction does not fit the configured outputs: {error}") from None

    # -- dynamic batching: join, predict once, split ------------------------------------------

    def _answer_joined(self, requests):
        """Answers in request order; requests are joined only with others of the same raw parameters."""
        responses = [None] * len(requests)
        for positions in group_positions([_parameters_key(request) for request in requests]):
            answers = self._answer_group([requests[p] for p in positions])
            for position, answer in zip(positions, answers):
                responses[position] = answer
        return responses

    def _answer_group(self, requests):
        """Decode each request; predict the decodable ones with rows together, the rest alone."""
        try:
            params = self._params(requests[0])  # the group's requests share their raw parameters
        except Exception as error:
            return [_failure_response(error) for _ in requests]
        responses = [None] * len(requests)
        joined = []  # (position, decoded fields, rows)
        for position, request in enumerate(requests):
            try:
                fields, empty_tensor = self._decode(request)
                rows = _rows(fields)
            except Exception as error:
                responses[position] = _failure_response(error)
                continue
            if empty_tensor is not None or rows == 0:
                responses[position] = self._answer_decoded(fields, empty_tensor, params)
            else:
                joined.append((position, fields, rows))
        if len(joined) == 1:
            responses[joined[0][0]] = self._answer_decoded(joined[0][1], None, params)
        elif joined:
            for (position, _, _), answer in zip(joined, self._predict_joined(joined, params)):
                responses[position] = answer
        return responses

    def _predict_joined(self, joined, params):
        """One prediction for all ``joined`` inputs, split by rows; each request alone if it fails, or if its rows
        cannot be split (another row count than the requests': which request's rows are which is unknown)."""
        counts = [rows for _, _, rows in joined]
        try:
            outputs = self._encode(self._predict(self._joined_input([fields for _, fields, _ in joined]), None, params))
            _check_rows(outputs, sum(counts))
        except Exception:  # one bad request must not fail the others: each gets its own answer
            return [self._answer_decoded(fields, None, params) for _, fields, _ in joined]
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(name, part) for name, part in parts.items()])
            for parts in split_outputs(outputs, counts)
        ]

    def _joined_input(self, parts):
        """One model input of the requests' decoded fields: built once from the fields joined, or, where that
        could differ (``join_fields``), each request's own joined as before."""
        columns = self.inputs.mapping.structure == "columns"  # a DataFrame: pandas types its object columns
        fields = join_fields(parts, _typed_alike if columns else None)
        if fields is None:
            return join_inputs([self.inputs.value_of(part) for part in parts])
        return self.inputs.value_of(fields)

    def _decode(self, request):
        """``(decoded fields, label of an input tensor without elements or None)``."""
        arrays = {}
        for tensor in request.inputs():  # one pass: pb_utils.get_input_tensor_by_name reads them all for each name
            name = tensor.name()
            if name in self.input_tensors and name not in arrays:  # the first of a name, as that function finds
                arrays[name] = tensor.as_numpy()
        try:
            for name, reshape in self.row_axis.items():
                if name in arrays:
                    arrays[name] = without_row_axis(name, arrays[name], reshape)
            fields = self.inputs.decode_fields(arrays)
        except TensorMappingError as error:
            raise RequestError(str(error)) from None
        empty = next((spec.label for spec in fields if arrays[spec.tensor].size == 0), None)
        return fields, empty

    def _params(self, request):
        """The request's parameters, checked against the params schema: ``predict``'s ``params`` or None."""
        read = getattr(request, "parameters", None)  # backends before request parameters have no such method
        return request_params(read() if read is not None else None, self.params_schema)

    def _predict(self, model_input, empty_tensor, params=None):
        try:
            if params is None:  # MLflow applies the params schema's defaults
                return self.predictor.predict(model_input)
            return self.predictor.predict(model_input, params=params)
        except Exception as error:
            reason = _schema_refusal(error)
            if reason is not None:
                where = _refused_nested_cell(self.predictor, self.inputs.mapping, model_input)
                raise RequestError(f"The request does not match the model's input schema: {where}{reason}") from None
            refusal = _mlflow_client_error(error)
            if refusal is not None:
                raise RequestError(refusal) from None
            if empty_tensor is not None:
                # Many models cannot predict zero rows (a scaler, a tokenizer); that is the request's fault.
                raise RequestError(
                    f"Tensor {empty_tensor} is empty and the model cannot predict an empty request "
                    f"({type(error).__name__}); send at least one element"
                ) from None
            raise PredictionError(_withheld("Prediction failed", error)) from None

    def finalize(self):
        self.predictor = None


def _body_arrays(request):
    """``{tensor name: array}`` of MLflow's serving protocol's tensors in ``request``."""
    arrays = {}
    for name in (REQUEST_TENSOR, CONTENT_TYPE_TENSOR):
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        if tensor is not None:
            arrays[name] = tensor.as_numpy()
    return arrays


def _decoupled(model_config):
    """Whether Triton runs this model decoupled (its config's ``model_transaction_policy``): a stream's model."""
    return bool((model_config.get("model_transaction_policy") or {}).get("decoupled"))


def _parameters_key(request):
    """The request's raw parameters (a JSON string in Triton's Python backend): requests join only if equal."""
    parameters = getattr(request, "parameters", None)
    return parameters() if parameters is not None else ""


def _typed_alike(spec, arrays):
    """``join_fields``' check for a DataFrame's column (``_TensorSpec.typed_alike``)."""
    return spec.typed_alike(arrays)


def _rows(fields):
    """``count_rows`` of decoded fields; a request whose tensors have unequal row counts is the client's error."""
    try:
        return count_rows({spec.column_key: values for spec, values in fields.items()})
    except RowCountError as error:
        raise RequestError(str(error)) from None


def _check_rows(outputs, rows):
    """``check_output_rows``; a prediction with another row count does not fit the outputs (``OutputError``)."""
    try:
        check_output_rows(outputs, rows)
    except RowCountError as error:
        raise OutputError(str(error)) from None


def _failure_response(error):
    """The error response for an exception raised while answering a request."""
    if isinstance(error, RequestError):
        return _error_response(str(error), "INVALID_ARG")
    if isinstance(error, (PredictionError, OutputError)):
        return _error_response(str(error), "INTERNAL")
    # a defect of this runtime; its text is kept out of the response too
    return _error_response(_withheld("The mlflow-triton runtime failed", error), "INTERNAL")


def _load(artifact, flavor, device):
    """``load_predictor``; a failure becomes one line saying what is wrong with ``artifact`` and what to do."""
    try:
        return load_predictor(artifact, flavor, device)
    except Exception as error:
        if not artifact.is_dir():
            message = (
                f"The MLflow model directory {artifact} is missing: a generated Triton model directory carries a "
                f"complete copy of the logged model in <version>/{ARTIFACT_DIRECTORY}/; {REFETCH_HINT}"
            )
        elif not (artifact / "MLmodel").is_file():
            message = f"The MLflow model directory {artifact} has no MLmodel file; {REFETCH_HINT}"
        else:
            reason = _bounded(" ".join(f"{type(error).__name__}: {error}".split()), MAX_LOAD_REASON_LENGTH)
            message = (
                f"MLflow could not load the {flavor} model in {artifact}: {reason}. Its files may be damaged or "
                f"incomplete ({REFETCH_HINT}), or the serving environment may lack a package or version the model "
                "needs (compare it with requirements.txt)"
            )
        raise ModelLoadError(message) from error


def _schema_refusal(error):
    """MLflow's reason when its schema enforcement refused the model input, else None.

    MLflow's message prints the whole input before the reason; only the reason
    (the exception it wraps: the column or tensor and the expected type) is kept.
    """
    if getattr(error, "error_class", None) != SCHEMA_ENFORCEMENT_FAILED:
        return None
    lines = str(error.__context__ or "").strip().splitlines()
    return _bounded(lines[0], MAX_SCHEMA_REASON_LENGTH) if lines else "MLflow gave no reason"


def _mlflow_client_error(error):
    """MLflow's words when ``error`` is an ``MlflowException`` MLflow's scoring server answers with HTTP 400, else None.

    MLflow's own mapping of its error codes decides (``get_http_status_code``): ``INVALID_PARAMETER_VALUE``,
    ``BAD_REQUEST`` and the others it gives 400, such as a generation field its pipeline refuses or a value its
    type-hint validation refuses. Its message, and the first line of the exception it wraps (the detail, e.g.
    which keyword a pipeline did not take), may quote the request, as MLflow's own answer does.
    """
    try:
        from mlflow.exceptions import MlflowException  # loaded with the model by now
    except ImportError:
        return None
    if not isinstance(error, MlflowException) or error.get_http_status_code() != 400:
        return None
    cause = str(error.__cause__ or "").strip().splitlines()
    detail = f" ({type(error.__cause__).__name__}: {_bounded(cause[0], MAX_SCHEMA_REASON_LENGTH)})" if cause else ""
    return f"MLflow refused the request ({error.error_code}): {error.message}{detail}"


def _refused_nested_cell(predictor, mapping, model_input):
    """``"column `c`, row r: "`` for the first nested cell MLflow's enforcement refuses on its own, else ``""``.

    MLflow's reason for a nested value names no column (its Array check reads the
    values as an unnamed Series), so each JSON column's cells are put through the
    same enforcement, one by one, to say where.
    """
    nested = [f for f in mapping.fields if f.content == JSON_CONTENT]
    if not nested or not isinstance(model_input, pd.DataFrame):
        return ""
    try:
        from mlflow.models.utils import _enforce_type  # MLflow's own rule, on this error path only

        specs = {spec.name: spec for spec in predictor.metadata.get_input_schema().inputs}
    except Exception:  # another MLflow, a schema without names: MLflow's reason alone
        return ""
    for field in nested:
        spec = specs.get(field.name)
        if spec is None or field.name not in model_input.columns:
            continue
        for row, cell in enumerate(model_input[field.name]):
            try:
                _enforce_type(copy.deepcopy(cell), spec.type, required=spec.required)
            except Exception:
                return f"column `{field.name}`, row {row}: "
    return ""


def _withheld(what, error):
    """Log ``error`` (text and traceback, cut) under a fresh reference; the client's message names only its type."""
    reference = os.urandom(4).hex()
    frames = _bounded("".join(traceback.format_tb(error.__traceback__)), MAX_LOGGED_LENGTH)
    text = _bounded(str(error), MAX_LOGGED_LENGTH)
    _log_error(f"mlflow-triton [{reference}] {what}: {type(error).__name__}: {text}\n{frames}")
    return (
        f"{what}: {type(error).__name__}; its message may quote the request, so it is only in Triton's log "
        f"(reference {reference})"
    )


def _error_response(message, code_name):
    message = _sendable(_bounded(message, MAX_MESSAGE_LENGTH))
    error = _triton_error(message, code_name)
    return pb_utils.InferenceResponse(output_tensors=[], error=error)


def _sendable(text):
    """``text`` as Triton can carry it: a C string of UTF-8. A U+0000 (a column name, a quoted value) would end it
    there, and the tensor, row and reason after it would never reach the client; a lone surrogate (a quoted
    ``\\ud800``) has no UTF-8 form, and encoding it would fail the answer. Both are written as escapes."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _triton_error(message, code_name):
    """``TritonError`` with the named code, or without one where the backend has no codes."""
    code = getattr(pb_utils.TritonError, code_name, None)
    if code is not None:
        try:
            return pb_utils.TritonError(message, code)
        except TypeError:
            pass
    return pb_utils.TritonError(message)


def _log_error(text):
    text = _sendable(text)
    logger = getattr(pb_utils, "Logger", None)
    if logger is not None:
        logger.log_error(text)
    else:
        print(text, file=sys.stderr, flush=True)


def _bounded(text, limit):
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters cut]"
