"""A small stand-in for Triton's ``triton_python_backend_utils``.

Just enough of the real module's surface for the runtime: Tensor,
InferenceRequest (with its ``parameters()`` JSON text, BLS ``exec()`` to the models a test registers in
``MODELS``, and a decoupled model's ``get_response_sender()``: a :class:`ResponseSender` that records what is sent
and can play a client that cancels), InferenceResponse, TritonError (with the backend's error
codes), Logger and get_input_tensor_by_name. It drives the generated model.py
in-process for fast tests; real Triton runs in tests/e2e.

Messages cross into C++ as UTF-8 strings, as pybind11 passes them: a message with no UTF-8 form (a lone
surrogate) raises ``UnicodeEncodeError`` here as it does in the real backend.

``LegacyTritonError`` stands in for the ``TritonError`` of backends that predate
error codes (a message only); tests swap it in to check the runtime's fallback.
"""

import json
import sys

import numpy as np


def _as_c_string(message):
    """What pybind11 does to a ``str`` passed to C++: its UTF-8 bytes (``UnicodeEncodeError`` when it has none)."""
    return message.encode("utf-8")


class TritonError(Exception):
    """``pb_utils.TritonError(message, code=TritonError.INTERNAL)``; codes as in the real backend."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=INTERNAL):
        _as_c_string(message)
        super().__init__(message)
        self._message = message
        self._code = code

    def message(self):
        return self._message

    def code(self):
        return self._code


class LegacyTritonError(Exception):
    """A ``TritonError`` without codes: its constructor takes the message only."""

    def __init__(self, message):
        _as_c_string(message)
        super().__init__(message)
        self._message = message

    def message(self):
        return self._message


class Logger:
    """``pb_utils.Logger``: records what the model logs (``Logger.records``: ``(level, message)``)."""

    records = []

    @classmethod
    def log_info(cls, message):
        _as_c_string(message)
        cls.records.append(("info", message))

    @classmethod
    def log_warn(cls, message):
        _as_c_string(message)
        cls.records.append(("warn", message))

    @classmethod
    def log_error(cls, message):
        _as_c_string(message)
        cls.records.append(("error", message))

    @classmethod
    def log_verbose(cls, message):
        _as_c_string(message)
        cls.records.append(("verbose", message))


class Tensor:
    def __init__(self, name, array):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"Tensor {name}: expected a numpy array, got {type(array).__name__}")
        self._name = name
        self._array = array

    def name(self):
        return self._name

    def as_numpy(self):
        return self._array

    def shape(self):
        return list(self._array.shape)


#: ``ResponseSender.send``'s flag that ends a decoupled request's responses, as in the real backend.
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1


class ResponseSender:
    """A decoupled request's response sender: ``sent`` holds ``(response or None, flags)`` in the order sent.
    ``cancel_after``: :meth:`is_cancelled` says True once that many responses were sent (a client that cancels or
    disconnects); the real sender refuses anything after the final flag, and so does this one."""

    def __init__(self, cancel_after=None):
        self.sent = []
        self.cancel_after = cancel_after
        self.cancel_checks = 0

    def send(self, response=None, flags=0):
        if self.sent and self.sent[-1][1] & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            raise RuntimeError("Unable to send response: the final flag was already sent")
        self.sent.append((response, flags))

    def is_cancelled(self):
        self.cancel_checks += 1
        return self.cancel_after is not None and len(self.sent) >= self.cancel_after

    @property
    def responses(self):
        """The responses sent (not the final flag's ``None``)."""
        return [response for response, _ in self.sent if response is not None]

    @property
    def finished(self):
        """Whether the last thing sent carried the final flag."""
        return bool(self.sent) and bool(self.sent[-1][1] & TRITONSERVER_RESPONSE_COMPLETE_FINAL)


#: BLS: ``InferenceRequest(model_name=NAME, ...).exec()`` calls ``MODELS[NAME](request)`` (a test registers them).
MODELS = {}


class InferenceRequest:
    """``parameters``: the request's ``parameters``, as the JSON text the real backend gives (``"{}"`` when
    none) or as a dict, written as that text. With ``model_name`` it is a BLS request: :meth:`exec` answers it."""

    def __init__(self, inputs, requested_output_names=(), parameters="{}", model_name=None, sender=None):
        self.model_name = model_name
        self.sender = sender or ResponseSender()
        self._inputs = list(inputs)
        self._requested = list(requested_output_names)
        if parameters is None or isinstance(parameters, dict):
            parameters = json.dumps(parameters or {}, separators=(",", ":"))
        self._parameters = parameters

    def inputs(self):
        return self._inputs

    def parameters(self):
        """The request's parameters as the real backend gives them: a JSON string (``"{}"`` when none)."""
        return self._parameters

    def requested_output_names(self):
        return self._requested

    def get_response_sender(self):
        return self.sender

    def exec(self):
        """The answer of the model registered under ``model_name`` in ``MODELS``."""
        return MODELS[self.model_name](self)


class InferenceResponse:
    def __init__(self, output_tensors=(), error=None):
        self._outputs = list(output_tensors)
        self._error = error

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error


def get_input_tensor_by_name(request, name):
    for tensor in request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(response, name):
    for tensor in response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def install():
    """Register this module as ``triton_python_backend_utils`` and return it."""
    module = sys.modules[__name__]
    sys.modules["triton_python_backend_utils"] = module
    return module


def load_model_py(path, name="generated_model_py"):
    """Import a generated ``model.py`` file (with this fake installed) as a fresh module."""
    import importlib.util

    install()
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def initialized_model(directory, name="generated_model_py"):
    """The ``TritonPythonModel`` of ``directory/1/model.py``, initialized from its config.pbtxt the way Triton
    passes it (JSON with the proto field names)."""
    from google.protobuf import json_format, text_format
    from tritonclient.grpc import model_config_pb2

    text = (directory / "config.pbtxt").read_text(encoding="utf-8")
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    model = load_model_py(directory / "1" / "model.py", name=name).TritonPythonModel()
    model.initialize(
        {
            "model_config": json.dumps(json_format.MessageToDict(config, preserving_proto_field_name=True)),
            "model_name": config.name,
            "model_repository": str(directory),
            "model_version": "1",
            "model_instance_kind": "CPU",
            "model_instance_device_id": "0",
        }
    )
    return model


def request_from_arrays(arrays, parameters="{}", model_config=None):
    """A request of ``arrays`` as a client sends them; with ``model_config`` (a batched model's JSON config), in
    the shapes Triton's core hands the model (:func:`as_handed`)."""
    if model_config is not None:
        arrays = as_handed(model_config, arrays)
    return InferenceRequest([Tensor(name, array) for name, array in arrays.items()], parameters=parameters)


def as_handed(model_config, arrays):
    """What core's ``Normalize`` (src/infer_request.cc) makes of a batched request's inputs of ``rows`` rows: the
    batch axis taken off, the input's ``reshape`` applied to the rest, the batch axis put back. Written out here,
    independently of the runtime, for the inputs of a batched config; ``arrays`` as a client sends them."""
    if int(model_config.get("max_batch_size", 0) or 0) <= 0:
        return dict(arrays)
    reshapes = {
        entry["name"]: [int(d) for d in entry["reshape"].get("shape", [])]
        for entry in model_config.get("input", [])
        if "reshape" in entry
    }
    handed = {}
    for name, array in arrays.items():
        array = np.asarray(array)
        if name in reshapes and array.ndim >= 1:
            rows, rest = array.shape[0], list(array.shape[1:] or (1,))
            wildcards = iter(d for d, declared in zip(rest, _dims_of(model_config, name)) if declared == -1)
            shape = [next(wildcards) if d == -1 else d for d in reshapes[name]]
            array = array.reshape([rows, *shape])
        handed[name] = array
    return handed


def _dims_of(model_config, name):
    return next([int(d) for d in entry["dims"]] for entry in model_config["input"] if entry["name"] == name)


def outputs_of(response):
    if response.has_error():
        raise AssertionError(f"response has error: {response.error().message()}")
    return {tensor.name(): tensor.as_numpy() for tensor in response.output_tensors()}
