"""The repository kind chosen with ``protocol=``: the typed tensor mapping, or MLflow's serving protocol.

``protocol="auto"`` (the default) takes the typed mapping wherever it carries the model exactly, and MLflow's
serving protocol where it cannot (:func:`interface` and the packaging flow say when): a chat or agent interface, or a
model the typed mapping refuses while MLflow's own scoring code answers its serving example.

With ``protocol="mlflow"`` the repository's model takes the body ``mlflow models serve`` accepts at ``/invocations``
and answers the body it returns (``runtime/protocol.py``). Logging proves it as the typed mapping is proved, before
anything is written: the native package is saved to a temporary directory as the build will save it and loaded with
``mlflow.pyfunc`` as Triton will load it, and the example's MLflow serving body (the ``serving_input_example.json``
MLflow saved beside it, or the one MLflow builds from the example) is answered in memory by the runtime's own protocol
code; a refusal stops logging with MLflow's message. The shipped request is that body in the ``request`` tensor.

With ``stream=True`` the repository also holds ``<name>_stream``, the same model decoupled, which answers the body one
``response`` per chunk of ``pyfunc.predict_stream`` (Triton's gRPC streams and HTTP ``generate_stream``;
docs/repository.md). Logging then also streams the serving body in memory through the runtime's code
(:func:`prove_stream`) and refuses a model whose MLmodel says it cannot stream (``streamable``), except a
Transformers text-generation package, which streams its generated text through a pyfunc of its own (``_text_stream``).
"""

import pathlib
import tempfile

import mlflow.pyfunc
import numpy as np
from mlflow.models import Model
from mlflow.models.utils import SERVING_INPUT_FILENAME

from mlflow_triton.repository.layout import TensorDeclaration, TensorLayout
from mlflow_triton.runtime.errors import RequestError
from mlflow_triton.runtime.protocol import OK, MlflowProtocol, response_tensors, serving_environment
from mlflow_triton.shared_contract import (
    AUTO_PROTOCOL,
    BYTES_TYPE,
    CONTENT_TYPE_TENSOR,
    MLFLOW_PROTOCOL,
    PROTOCOLS,
    REQUEST_TENSOR,
    RESPONSE_TENSOR,
    TENSORS_PROTOCOL,
    mlflow_protocol_contract,
)

from . import _text_stream
from .errors import InvalidArgumentError, ValidationError

#: ``AUTO_PROTOCOL`` (the default): the typed mapping where it carries the model exactly, MLflow's serving protocol
#: where it cannot.
CHOICES = (AUTO_PROTOCOL, *PROTOCOLS)
#: Why a repository speaks what it speaks (validation.json's ``protocol_chosen_because``), besides the reasons of
#: ``protocol="auto"``'s choice of MLflow's protocol (a chat or agent interface, a typed mapping's refusal).
ASKED = "asked for with protocol="
UNBATCHED = "batching needs the typed mapping (MLflow's protocol answers one body per request)"
TYPED_CARRIES = "the typed mapping carries the model exactly (one typed tensor per field of the signature)"
STREAMS = "stream=True: a stream speaks MLflow's serving protocol (a body in, one chunk per response)"
#: The repository kinds, as a user meets them: what a client sends.
KINDS = {
    TENSORS_PROTOCOL: "typed tensors (one tensor per field of the signature: requests as in request.json)",
    MLFLOW_PROTOCOL: "MLflow's protocol (the body `mlflow models serve` takes, in the BYTES tensor 'request')",
}


def kind_lines(validation):
    """The command's lines naming the repository kind of ``validation`` (validation.json's record) and why, and the
    streaming model beside it, if any."""
    protocol = validation["protocol"]
    why = validation.get("protocol_chosen_because") or TYPED_CARRIES  # a repository written before it was recorded
    lines = [f"repository: {KINDS[protocol]}; chosen because {why}"]
    stream = validation.get("stream")
    if stream is not None:
        lines.append(
            f"streaming model: {stream['model']} (decoupled: gRPC streams and HTTP generate_stream, one chunk of "
            f"predict_stream per response; the example streamed {stream['chunks']} chunk(s) in memory)"
        )
    return lines


def check_protocol(protocol, max_batch_size, stream=False):
    """Refuse a ``protocol`` that is not one of :data:`CHOICES`, batching with MLflow's protocol, and a ``stream``
    that is not a bool or goes with the typed mapping or batching."""
    if protocol not in CHOICES:
        raise InvalidArgumentError(
            f"protocol {protocol!r} is not supported; supported: {', '.join(repr(p) for p in CHOICES)} "
            f"({AUTO_PROTOCOL!r}: {TENSORS_PROTOCOL!r} where it carries the model exactly, else {MLFLOW_PROTOCOL!r}; "
            f"{TENSORS_PROTOCOL!r}: one typed tensor per field of the signature; {MLFLOW_PROTOCOL!r}: the body "
            "`mlflow models serve` accepts in one BYTES tensor, its answer in another)"
        )
    if protocol == MLFLOW_PROTOCOL and max_batch_size:
        raise InvalidArgumentError(
            f"max_batch_size={max_batch_size}: protocol {MLFLOW_PROTOCOL!r} answers one body per request, as "
            "`mlflow models serve` does; use max_batch_size=0 with it"
        )
    if not isinstance(stream, bool):
        raise InvalidArgumentError(f"stream must be True or False, got {stream!r}")
    if stream and protocol == TENSORS_PROTOCOL:
        raise InvalidArgumentError(
            f"stream=True with protocol={TENSORS_PROTOCOL!r}: a stream speaks MLflow's serving protocol (the body in, "
            f"one chunk of predict_stream per response); use protocol={AUTO_PROTOCOL!r} or {MLFLOW_PROTOCOL!r}"
        )
    if stream and max_batch_size:
        raise InvalidArgumentError(
            f"max_batch_size={max_batch_size} with stream=True: a stream answers one body per request, as "
            "pyfunc.predict_stream takes one input; use max_batch_size=0 with it"
        )


def interface(model):
    """The name of the MLflow chat or agent interface ``model`` implements (``ChatModel``, ``ChatAgent``,
    ``ResponsesAgent``), or ``None``. Their requests and answers are MLflow's chat and agent bodies, with fields
    MLflow fills per call: MLflow's serving protocol carries them as MLflow's server does. ``model`` is a
    ``PythonModel`` or a loaded ``PyFuncModel``: its python model where it has one, else its raw model (MLflow loads
    a ``ChatModel``, ``ChatAgent`` or ``ResponsesAgent`` behind a wrapper that has no python model, only the
    interface's object as its raw model)."""
    from mlflow.pyfunc import ChatAgent, ChatModel, PyFuncModel, ResponsesAgent

    if isinstance(model, PyFuncModel):
        try:
            model = model.unwrap_python_model()
        except Exception:  # the chat and agent interfaces' loaders, and flavors without a PythonModel
            try:
                model = model.get_raw_model()
            except Exception:  # a flavor without a raw model: no chat interface of MLflow's
                return None
    for kind in (ChatModel, ChatAgent, ResponsesAgent):
        if isinstance(model, kind):
            return kind.__name__
    return None


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


def prove_saved_model(framework, model, signature, input_example, options, device, stream=False):
    """``(layout, tensors, validation)`` for MLflow's protocol: the package saved and loaded as it will be served,
    its serving example answered 200 by the runtime's protocol code (:func:`prove_serving_body`), and with
    ``stream`` also streamed (:func:`prove_stream`)."""
    with tempfile.TemporaryDirectory(prefix="mlflow-triton-protocol-") as workspace:
        package = pathlib.Path(workspace) / "model"
        framework.save_native(model, package, signature, input_example, options)
        mlmodel = Model.load(str(package / "MLmodel"))
        if stream:  # before the body is proved: a model that cannot stream is refused for that first
            check_streamable(mlmodel, "the model")
        predictor = _load_saved(package)
        saved = package / SERVING_INPUT_FILENAME
        body = saved.read_text(encoding="utf-8") if saved.is_file() else serving_body(input_example)
        layout, tensors, validation = prove_serving_body(framework.flavor, predictor, body, device)
        if stream:
            if _text_stream.streams_generated_text(mlmodel):
                streaming = _text_stream.save_stream_package(package, pathlib.Path(workspace) / "stream")
                predictor = _load_saved(streaming, "the streaming package")
                validation["stream"] = prove_stream(predictor, body, _text_stream.HOW)
            else:
                validation["stream"] = prove_stream(predictor, body)
        return layout, tensors, validation


def _load_saved(package, what="the saved package"):
    try:
        return mlflow.pyfunc.load_model(str(package))
    except Exception as error:
        raise ValidationError(f"mlflow.pyfunc.load_model failed on {what}: {type(error).__name__}: {error}") from None


def check_streamable(mlmodel, what):
    """Refuse ``stream=True`` for a model whose pyfunc has no ``predict_stream`` (its MLmodel's
    ``python_function`` flavor is not ``streamable``) and that is no Transformers text-generation package, saying
    what to do."""
    flavors = mlmodel.flavors
    if (flavors.get("python_function") or {}).get("streamable") or _text_stream.streams_generated_text(mlmodel):
        return
    raise InvalidArgumentError(
        f"stream=True: {what} cannot stream: its pyfunc has no predict_stream (MLmodel's python_function flavor is "
        "not streamable). Stream a PythonModel, ChatModel, ChatAgent or ResponsesAgent that defines predict_stream, "
        f"or a Transformers {_text_stream.TEXT_GENERATION!r} pipeline saved without an llm/v1 task (it streams its "
        "generated text); MLflow's other built-in flavors define none: wrap the model in a PythonModel whose "
        "predict_stream yields its chunks, or leave stream=False"
    )


#: validation.json's account of the stream's proof, for a model that streams its own ``predict_stream``.
STREAMED_HOW = (
    "the example's MLflow serving body streamed by pyfunc.predict_stream through the runtime's protocol module, as "
    "the streaming model answers the shipped request"
)


def prove_stream(predictor, body, how=STREAMED_HOW):
    """validation.json's ``stream`` record: ``body`` streamed in memory by the runtime's protocol code, as the
    ``<name>_stream`` model streams the shipped request; a refusal or an empty stream stops logging. ``how``: what
    was streamed, for the record."""
    with serving_environment():
        try:
            chunks = list(MlflowProtocol(predictor).stream(body.encode("utf-8")))
        except RequestError as error:
            raise ValidationError(f"The example's MLflow serving body cannot be streamed: {error}") from None
        except Exception as error:
            raise ValidationError(
                f"predict_stream failed on the example's MLflow serving body: {type(error).__name__}: {error}"
            ) from None
    if not chunks:
        raise ValidationError("predict_stream yielded no chunk for the example's MLflow serving body")
    return {"chunks": len(chunks), "how": how}


def serving_body(input_example):
    """The example (with its params, if any) as the JSON body a client of MLflow's scoring server sends, built as
    MLflow builds ``serving_input_example.json``, for a package MLflow saved without one."""
    from mlflow.models.utils import convert_input_example_to_serving_input

    try:
        body = convert_input_example_to_serving_input(input_example)
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
