"""What the front of a guarded batched repository and the batched model behind it agree on.

Triton 2.51's Python backend hands a BLS caller the error of the called model without its code
(``request_executor.cc`` ``InferResponseComplete``: every error is ``INTERNAL``), so the batched model writes its
code in front of its message (:func:`marked`) when its config names a front (``FRONT_PARAMETER``), and the front
takes it off again (:func:`unmarked`): the client gets the same code and message as from the batched model alone.
"""

#: In the front's config: the batched model it forwards to.
FORWARD_PARAMETER = "mlflow_triton_forward_to"
#: In the front's config: the batched model's ``max_batch_size``.
MAX_BATCH_SIZE_PARAMETER = "mlflow_triton_max_batch_size"
#: In the batched model's config: the front that forwards to it (its errors then carry their code).
FRONT_PARAMETER = "mlflow_triton_front"
_CODES = ("INVALID_ARG", "INTERNAL")


def marked(message, code_name):
    """``message`` with its code written in front, for the front to read back."""
    return f"[{code_name}] {message}"


def unmarked(message):
    """(code name or ``None``, message without its mark)."""
    for code_name in _CODES:
        if message.startswith(marked("", code_name)):
            return code_name, message[len(marked("", code_name)) :]
    return None, message
