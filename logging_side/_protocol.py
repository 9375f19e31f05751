"""The repository kind chosen with ``protocol=``: the typed tensor mapping, or MLflow's serving protocol.

With ``protocol="mlflow"`` the repository's model takes the body ``mlflow models serve`` accepts at ``/invocations``
and answers the body it returns (``runtime/protocol.py``). Logging proves it as the typed mapping is proved: the
example's MLflow serving body (the ``serving_input_example.json`` MLflow saved with the model, or the one MLflow
builds from the example) is answered in memory by the runtime's own protocol code, and a refusal stops logging with
MLflow's message; the shipped request is that body in the ``request`` tensor.
"""

import numpy as np

from mlflow_triton.repository.layout import TensorDeclaration, TensorLayout
from mlflow_triton.runtime.protocol import OK, MlflowProtocol, response_tensors, serving_environment
from mlflow_triton.shared_contract import (
    BYTES_TYPE,
    CONTENT_TYPE_TENSOR,
    MLFLOW_PROTOCOL,
    PROTOCOLS,
    REQUEST_TENSOR,
    RESPONSE_TENSOR,
    TENSORS_PROTOCOL,
    mlflow_protocol_contract,
)

from .errors import InvalidArgumentError, ValidationError


def check_protocol(protocol, max_batch_size):
    """Refuse a ``protocol`` that is not one of :data:`PROTOCOLS`, and batching with MLflow's protocol."""
    if protocol not in PROTOCOLS:
        raise InvalidArgumentError(
            f"protocol {protocol!r} is not supported; supported: {', '.join(repr(p) for p in PROTOCOLS)} "
            f"({TENSORS_PROTOCOL!r}: one typed tensor per field of the signature; {MLFLOW_PROTOCOL!r}: the body "
            "`mlflow models serve` accepts in one BYTES tensor, its answer in another)"
        )
    if protocol == MLFLOW_PROTOCOL and max_batch_size:
        raise InvalidArgumentError(
            f"max_batch_size={max_batch_size}: protocol {MLFLOW_PROTOCOL!r} answers one body per request, as "
            "`mlflow models serve` does; use max_batch_size=0 with it"
        )


def protocol_layout(flavor):
    """The contract and config tensors of an MLflow-protocol repository: ``[1]`` BYTES in and out."""
    text = (1,)
    return TensorLayout(
        contract=mlflow_protocol_contract(flavor),
        inputs=(
            TensorDeclaration(REQUEST_TENSOR, BYTES_TYPE, text),
            TensorDeclaration(CONTENT_TYPE_TENSOR, BYTES_TYPE, text, optional=True),
        ),
        outputs=(TensorDeclaration(RESPONSE_TENSOR, BYTES_TYPE, text),),
    )


def serving_body(saved, example_input, example_params):
    """The example as the JSON body a client of MLflow's scoring server sends: ``saved`` (the source's
    ``serving_input_example.json``) when there is one, else built from the example as MLflow builds that file."""
    if saved is not None:
        return saved
    from mlflow.models.utils import convert_input_example_to_serving_input

    example = example_input if example_params is None else (example_input, example_params)
    try:
        body = convert_input_example_to_serving_input(example)
    except Exception as error:  # MLflow cannot write this example as a serving body
        raise ValidationError(f"MLflow cannot write the input example as a serving body: {error}") from None
    if body is None:
        raise ValidationError("MLflow wrote no serving body for the input example")
    return body


def prove_serving_body(flavor, predictor, body, device):
    """``(layout, tensors, validation)``: ``body`` answered 200 by the runtime's protocol code in memory."""
    with serving_environment():
        answer = MlflowProtocol(predictor).answer(body.encode("utf-8"))
    if answer.status != OK:
        raise ValidationError(f"The example's MLflow serving body is refused by MLflow's scoring code: {answer.reason}")
    validation = {
        "mode": "in-memory",
        "device": device,
        "outputs": response_tensors(answer),
        "how": "the example's MLflow serving body answered by mlflow.pyfunc.scoring_server.invocations through the "
        "runtime's protocol module, as Triton answers the shipped request",
    }
    tensors = {REQUEST_TENSOR: np.array([body.encode("utf-8")], dtype=object)}
    return protocol_layout(flavor), tensors, validation
