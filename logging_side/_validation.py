"""The example as the Triton tensors a client sends, and its check through the runtime's own codecs.

The tensors are decoded, predicted and the prediction encoded to the configured outputs: in memory before anything
is written, or (``validate_saved_model=True``) on a CPU reload of the saved artifact in a clean subprocess.
"""

from mlflow_triton.repository.layout import codecs_for

from . import _saved_check
from ._prediction import predict
from .errors import MlflowTritonError, ValidationError


def example_tensors(layout, example_input):
    """The example (as ``_examples.for_request`` gives it) as the Triton tensors a client sends, checked by
    decoding them back."""
    input_codec, _ = codecs_for(layout)
    try:
        tensors = input_codec.to_tensors(example_input)
        input_codec.from_tensors(tensors)
    except MlflowTritonError as error:
        raise ValidationError(f"The input example does not fit the signature's tensors: {error}") from None
    return tensors


def validate_in_memory(layout, tensors, adapter, device, example_params=None):
    """Decode the example tensors with the runtime codecs, predict in memory, encode the outputs."""
    input_codec, output_codec = codecs_for(layout)
    # Decoded from copies: the arrays may share memory with the caller's example and the shipped request.
    decoded = input_codec.from_tensors({name: array.copy() for name, array in tensors.items()})
    prediction = predict(adapter, decoded, "decoded example", example_params)
    try:
        outputs = output_codec.to_tensors(prediction)
    except MlflowTritonError as error:
        raise ValidationError(f"The prediction does not fit the signature's output tensors: {error}") from None
    return {"mode": "in-memory", "device": device, "outputs": outputs}


def validate_saved_artifact(layout, tensors, artifact):
    """The same check on a CPU reload of the copied artifact, in a clean subprocess."""
    outputs = _saved_check.predict_saved_artifact(artifact, layout, tensors)
    return {"mode": "saved-artifact", "device": "cpu", "outputs": outputs}
