"""The front of a guarded batched repository: with ``forwarding.py``, the whole ``1/model.py`` of the model clients
call.

Triton's Python backend (2.51, ``python_be.cc`` ``ProcessRequests``) releases an execution whose requests hold 0
rows in all without answering them, and the server exits (``Signal (11)``); no batched model sees such a request.
So a batched repository is served behind this front: a model with ``max_batch_size: 0``, the client-visible name
and the same tensors (their dims with the leading ``-1`` row axis), which refuses a request without rows
(``INVALID_ARG``: HTTP 400) and forwards every other one through BLS to the batched model its config names
(``FORWARD_PARAMETER``): the inputs, the requested outputs and the request parameters. The batched model's answer
comes back as it is, its error with its code (``forwarding.unmarked``) and message. Triton's own checks of a batched
request that the front's unbatched config cannot make (every input with the same rows, at most ``max_batch_size``
rows) are made here with Triton's words, so they stay 400s.

It reads only its config and the request's shapes and imports only ``json``, ``re`` and Triton's module.
"""

import json

import triton_python_backend_utils as pb_utils

# <mlflow-triton package imports: removed when composing model.py>
from .forwarding import FORWARD_PARAMETER, MAX_BATCH_SIZE_PARAMETER, unmarked

# </mlflow-triton package imports>

ZERO_ROWS_MESSAGE = (
    "Tensor `{tensor}` has 0 rows: send at least one row. This model is batched (max_batch_size {limit}) and "
    "Triton's Python backend cannot answer a batched request without rows"
)


def refusal(request, inputs, model, limit):
    """Why ``request`` (its tensors ``inputs``) cannot go to the batched model (a message), or ``None``. The checks
    Triton makes of a batched request are worded as Triton words them (``[request id: …] …``)."""
    rows = {tensor.name(): list(tensor.shape())[:1] for tensor in inputs}
    counts = [first[0] for first in rows.values() if first]
    for name, first in rows.items():  # Triton compares the batch axes first, so unequal ones get its words
        if first and first[0] != counts[0]:
            return f"{_triton(request)}input '{name}' batch size does not match other inputs for '{model}'"
    for name, first in rows.items():
        if first == [0]:
            return ZERO_ROWS_MESSAGE.format(tensor=name, limit=limit)
    if counts and counts[0] > limit:
        return f"{_triton(request)}inference request batch-size must be <= {limit} for '{model}'"
    return None


def _triton(request):
    """The start of Triton's own messages about a request."""
    return f"[request id: {_request_id(request)}] "


def _request_id(request):
    request_id = request.request_id() if hasattr(request, "request_id") else ""
    return request_id or "<id_unknown>"


def forwarded_error(error):
    """The called model's error as the client would get it from that model alone."""
    code_name, message = unmarked(error.message())
    code = getattr(pb_utils.TritonError, code_name) if code_name else error.code()
    return pb_utils.TritonError(message, code)


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        parameters = config.get("parameters", {})
        self.name = config["name"]
        self.target = parameters[FORWARD_PARAMETER]["string_value"]
        self.limit = int(parameters[MAX_BATCH_SIZE_PARAMETER]["string_value"])

    def execute(self, requests):
        return [self.answer(request) for request in requests]

    def answer(self, request):
        inputs = request.inputs()  # forwarded as they are: tensors of the request, in shared memory, never decoded
        refused = refusal(request, inputs, self.name, self.limit)
        if refused is not None:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(refused, pb_utils.TritonError.INVALID_ARG))
        answer = pb_utils.InferenceRequest(
            model_name=self.target,
            inputs=inputs,
            requested_output_names=sorted(request.requested_output_names()),
            parameters=json.loads(request.parameters() or "{}"),
        ).exec()
        if answer.has_error():
            return pb_utils.InferenceResponse(error=forwarded_error(answer.error()))
        return pb_utils.InferenceResponse(output_tensors=answer.output_tensors())
