"""The pyfunc a Transformers text-generation package streams through: MLflow's transformers flavor has no
``predict_stream``, so the ``<name>_stream`` model of such a package serves this MLflow model (models from code)
around the package, saved whole as its one artifact.

- ``predict`` is the package's own pyfunc ``predict`` (MLflow's transformers wrapper, loaded as MLflow loads it):
  the same answer as the one-shot model.
- ``predict_stream`` takes one prompt and yields the generated text piece by piece, each a string, as
  ``transformers.TextIteratorStreamer`` decodes it. It runs that same ``predict`` (MLflow's transformers wrapper,
  its saved ``model_config`` and the request's params) in a thread, with the streamer and a stopping criterion
  added to the pipeline's call. After the last piece it compares the pieces with the answer that call returned,
  the generated text (a pipeline that returns the full text puts the prompt first): a stream that would differ
  from it ends with an error instead of a wrong end.
- A consumer that stops reading (a cancelled or disconnected stream closes the generator) sets the stopping
  criterion: generation stops at the next token, and the thread is joined before the generator closes.

This file is saved into the package and imported by MLflow when the package loads: it imports MLflow and, when a
stream starts, Transformers and torch; nothing of mlflow_triton.
"""

import logging
import threading

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INTERNAL_ERROR, INVALID_PARAMETER_VALUE

_THREAD = "mlflow-triton-text-stream"


class _OwnParams(logging.Filter):
    """Drops, in the thread that generates a stream, MLflow's warning that a call's params override the saved
    configuration: that thread passes the streamer and the stopping criterion as params on every call."""

    def filter(self, record):
        return not (threading.current_thread().name == _THREAD and record.getMessage().startswith("params provided"))


class TextGenerationStream(mlflow.pyfunc.PythonModel):
    def load_context(self, context):
        [package] = context.artifacts.values()
        self._wrapper = _load_pyfunc_implementation(package)
        logger = logging.getLogger("mlflow.transformers")
        if not any(isinstance(installed, _OwnParams) for installed in logger.filters):
            logger.addFilter(_OwnParams())

    def predict(self, context, model_input, params=None):
        return self._wrapper.predict(model_input, params=params)

    def predict_stream(self, context, model_input, params=None):
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        prompts = 1 if isinstance(model_input, str) else len(model_input)
        if prompts != 1:
            raise MlflowException(
                f"A text-generation stream takes one prompt per request, got {prompts}", INVALID_PARAMETER_VALUE
            )
        wrapper = self._wrapper
        settings = {**wrapper.model_config, **(params or {})}
        streamer = TextIteratorStreamer(
            wrapper.pipeline.tokenizer,
            skip_prompt=True,
            skip_special_tokens=settings.get("skip_special_tokens", True),
            clean_up_tokenization_spaces=settings.get("clean_up_tokenization_spaces"),
        )
        stopped = threading.Event()

        class _Stopped(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                import torch

                return torch.full((input_ids.shape[0],), stopped.is_set(), dtype=torch.bool, device=input_ids.device)

        outcome = {}
        generation = {"streamer": streamer, "stopping_criteria": StoppingCriteriaList([_Stopped()])}

        def generate():
            try:
                outcome["answer"] = wrapper.predict(model_input, params={**(params or {}), **generation})
            except BaseException as error:  # raised to the consumer once the pieces already decoded are sent
                outcome["error"] = error
            finally:
                streamer.text_queue.put(streamer.stop_signal)  # ends the stream also where generate raised

        worker = threading.Thread(target=generate, name=_THREAD, daemon=True)
        worker.start()
        pieces = []
        try:
            for piece in streamer:
                if piece:
                    pieces.append(piece)
                    yield piece
        finally:
            stopped.set()
            worker.join()
        if "error" in outcome:
            raise outcome["error"]
        _check_answer(outcome["answer"], "".join(pieces), _prompt_text(model_input))


def _load_pyfunc_implementation(package):
    """The package's pyfunc implementation (MLflow's transformers wrapper), loaded as ``mlflow.pyfunc.load_model``
    loads it: its ``python_function`` flavor's ``loader_module._load_pyfunc`` on its data with its saved ``config``.

    Not ``mlflow.pyfunc.load_model`` itself: this runs inside it, and since MLflow 3.17 a ``load_model`` nested in
    another hangs where tracing is disabled (both take the same lock of ``mlflow.tracing.provider.trace_disabled``).
    This model's pyfunc enforces the package's own signature (saved with it) before ``predict`` is called.
    """
    import importlib
    import os
    import sys

    conf = mlflow.models.Model.load(os.path.join(package, "MLmodel")).flavors["python_function"]
    if conf.get("code"):  # the package's code_paths, importable as load_model makes them
        sys.path.insert(0, os.path.join(package, conf["code"]))
    loader = importlib.import_module(conf["loader_module"])
    data = os.path.join(package, conf["data"]) if "data" in conf else package
    model_config = conf.get("config")
    return loader._load_pyfunc(data, model_config) if model_config else loader._load_pyfunc(data)


def _prompt_text(model_input):
    """The one prompt of ``model_input`` as text (a string, or the one value of a one-row input), else ``None``."""
    values = model_input
    if hasattr(values, "to_numpy"):  # a DataFrame or Series of one row
        values = values.to_numpy().ravel().tolist()
    elif isinstance(values, dict):
        values = list(values.values())
    if isinstance(values, list) and len(values) == 1:
        values = values[0]
    return values if isinstance(values, str) else None


def _check_answer(answer, streamed, prompt):
    """Raise unless ``answer`` (predict's, in the same call) is one text that is ``streamed``, or ``prompt`` followed
    by ``streamed`` (a pipeline that returns the full text)."""
    texts = answer if isinstance(answer, list) else [answer]
    if len(texts) != 1 or not isinstance(texts[0], str):
        raise MlflowException(
            f"A text-generation stream answers one text; predict answered {type(answer).__name__} {answer!r:.200}",
            INTERNAL_ERROR,
        )
    if texts[0] not in (streamed, f"{prompt}{streamed}" if prompt is not None else streamed):
        raise MlflowException(
            f"The streamed text {streamed!r:.200} is not predict's answer {texts[0]!r:.200}, nor the prompt followed "
            "by it (the pipeline changes its text after decoding it); stream it with a PythonModel of your own",
            INTERNAL_ERROR,
        )


mlflow.models.set_model(TextGenerationStream())
