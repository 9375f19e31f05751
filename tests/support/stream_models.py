"""Models whose pyfunc streams (``predict_stream``), logged with plain MLflow as a user has them.

:func:`log_stream_models` writes each model's code (models from code, as MLflow recommends for its interfaces),
logs it to the active tracking store and registers it under its name. :data:`STREAMERS` lists them:

- ``spell``: a ``ResponsesAgent`` streaming one text delta per word of its input, upper-cased, then the whole text
  item; its ``item_id`` is a fresh UUID per call (one per stream, the same in every event of it).
- ``mirror``: a ``ChatAgent`` streaming each word of its messages reversed; the message ``id`` is a fresh UUID per
  call, and the last chunk carries the request's ``custom_inputs`` as ``custom_outputs``.
- ``shout``: a ``ChatModel`` streaming ``ChatCompletionChunk``s, a word each (at most ``max_tokens``), then one with
  ``finish_reason="stop"``; ``id`` is a fresh UUID per call and ``created`` the time of the call.
- ``ticker``: a custom ``PythonModel`` that yields ``{"id", "index", "of"}`` ``chunks`` times, sleeping ``delay``
  seconds between chunks, all four taken from the request's row (``id``, ``chunks``, ``delay``, ``fail``); with
  ``fail`` it raises ``ValueError`` (quoting the request's id) instead of its 4th chunk. Its generator's ``finally``
  prints ``ticker <id>: closed after <n> chunk(s)`` to Triton's log (the stub's stdout): a stream stopped early
  shows there.
- ``gpt2``: a ``PythonModel`` around the tiny GPT-2 text-generation pipeline
  (``tiny_models.shared_text_generation_pipeline``, saved as an artifact) whose ``predict_stream`` runs ``generate``
  (greedy, ``do_sample=False``) in a thread and yields each piece of ``transformers.TextIteratorStreamer`` as
  ``{"text": piece}``: how a user streams a generation in a ``PythonModel`` of their own.

:data:`TEXT_GENERATION` is the same tiny GPT-2 pipeline logged with ``mlflow_triton.transformers`` and ``stream=True``
(its repository written at logging; version 1): its ``<name>_stream`` serves the streaming package around it.
:data:`NOT_STREAMING` is a scikit-learn model (its pyfunc has no ``predict_stream``).
"""

import json
import textwrap

import mlflow
import mlflow.pyfunc
import mlflow.sklearn
import numpy as np
import pandas as pd

from tests.support.tiny_models import shared_text_generation_pipeline

SPELL_CODE = textwrap.dedent(
    """\
    import uuid

    import mlflow
    from mlflow.pyfunc import ResponsesAgent
    from mlflow.types.responses import ResponsesAgentResponse, ResponsesAgentStreamEvent


    class Spell(ResponsesAgent):
        def predict(self, request):
            done = [event.item for event in self.predict_stream(request) if event.type == "response.output_item.done"]
            return ResponsesAgentResponse(output=done, custom_outputs=request.custom_inputs)

        def predict_stream(self, request):
            words = " ".join(str(item.content) for item in request.input).upper().split()
            item_id = str(uuid.uuid4())
            for index, word in enumerate(words):
                delta = self.create_text_delta(delta=word if index == 0 else f" {word}", item_id=item_id)
                yield ResponsesAgentStreamEvent(**delta)
            item = self.create_text_output_item(text=" ".join(words), id=item_id)
            yield ResponsesAgentStreamEvent(type="response.output_item.done", item=item)


    mlflow.models.set_model(Spell())
    """
)
MIRROR_CODE = textwrap.dedent(
    """\
    import uuid

    import mlflow
    from mlflow.pyfunc import ChatAgent
    from mlflow.types.agent import ChatAgentChunk, ChatAgentMessage, ChatAgentResponse


    class Mirror(ChatAgent):
        def predict(self, messages, context=None, custom_inputs=None):
            text = "".join(chunk.delta.content for chunk in self.predict_stream(messages, context, custom_inputs))
            answer = ChatAgentMessage(role="assistant", content=text, id=str(uuid.uuid4()))
            return ChatAgentResponse(messages=[answer], custom_outputs=custom_inputs)

        def predict_stream(self, messages, context=None, custom_inputs=None):
            words = " ".join(message.content for message in messages).split()
            message_id = str(uuid.uuid4())
            for index, word in enumerate(words):
                last = index == len(words) - 1
                yield ChatAgentChunk(
                    delta=ChatAgentMessage(role="assistant", content=word[::-1] + ("" if last else " "), id=message_id),
                    custom_outputs=custom_inputs if last else None,
                )


    mlflow.models.set_model(Mirror())
    """
)
SHOUT_CODE = textwrap.dedent(
    """\
    import uuid

    import mlflow
    from mlflow.pyfunc import ChatModel
    from mlflow.types.llm import (
        ChatChoice,
        ChatChoiceDelta,
        ChatChunkChoice,
        ChatCompletionChunk,
        ChatCompletionResponse,
        ChatMessage,
    )


    class Shout(ChatModel):
        def predict(self, context, messages, params):
            chunks = self.predict_stream(context, messages, params)
            text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
            return ChatCompletionResponse(
                model="shout", choices=[ChatChoice(index=0, message=ChatMessage(role="assistant", content=text))]
            )

        def predict_stream(self, context, messages, params):
            words = " ".join(message.content for message in messages).upper().split()
            call = str(uuid.uuid4())
            for word in words[: params.max_tokens or None]:
                delta = ChatChoiceDelta(role="assistant", content=word + " ")
                yield ChatCompletionChunk(id=call, model="shout", choices=[ChatChunkChoice(index=0, delta=delta)])
            end = ChatChunkChoice(index=0, delta=ChatChoiceDelta(role="assistant", content=""), finish_reason="stop")
            yield ChatCompletionChunk(id=call, model="shout", choices=[end])


    mlflow.models.set_model(Shout())
    """
)
TICKER_CODE = textwrap.dedent(
    """\
    import time

    import mlflow


    class Ticker(mlflow.pyfunc.PythonModel):
        def predict(self, model_input, params=None):
            return [f"{row['id']}: {row['chunks']} chunk(s)" for row in model_input.to_dict(orient="records")]

        def predict_stream(self, model_input, params=None):
            request_id, chunks = str(model_input["id"]), int(model_input["chunks"])
            delay, fail = float(model_input["delay"]), bool(model_input["fail"])
            sent = 0
            try:
                for index in range(chunks):
                    if index:
                        time.sleep(delay)
                    if fail and index == 3:
                        raise ValueError(f"ticker {request_id} was asked to fail")
                    yield {"id": request_id, "index": index, "of": chunks}
                    sent += 1
            finally:
                print(f"ticker {request_id}: closed after {sent} chunk(s)", flush=True)


    mlflow.models.set_model(Ticker())
    """
)
GPT2_CODE = textwrap.dedent(
    """\
    import threading

    import mlflow

    MAX_NEW_TOKENS = 6


    class Generate(mlflow.pyfunc.PythonModel):
        def load_context(self, context):
            from transformers import pipeline

            self.pipeline = pipeline("text-generation", model=context.artifacts["pipeline"], device="cpu")

        def predict(self, model_input, params=None):
            rows = model_input.to_dict(orient="records")
            return ["".join(chunk["text"] for chunk in self.predict_stream(row)) for row in rows]

        def predict_stream(self, model_input, params=None):
            from transformers import TextIteratorStreamer

            tokenizer, model = self.pipeline.tokenizer, self.pipeline.model
            streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=120)
            inputs = tokenizer(str(model_input["text"]), return_tensors="pt")
            arguments = {**inputs, "streamer": streamer, "max_new_tokens": MAX_NEW_TOKENS, "do_sample": False}
            thread = threading.Thread(target=model.generate, kwargs=arguments, daemon=True)
            thread.start()
            try:
                for text in streamer:
                    if text:
                        yield {"text": text}
            finally:
                thread.join()


    mlflow.models.set_model(Generate())
    """
)
#: name -> (code, input example). Every example is a single request (``predict_stream`` takes one input).
STREAMERS = {
    "spell": (SPELL_CODE, {"input": [{"role": "user", "content": "stream these words"}]}),
    "mirror": (MIRROR_CODE, {"messages": [{"role": "user", "content": "hello streaming world"}]}),
    "shout": (SHOUT_CODE, {"messages": [{"role": "user", "content": "say it louder"}]}),
    "ticker": (TICKER_CODE, {"id": "example", "chunks": 4, "delay": 0.0, "fail": False}),
    "gpt2": (GPT2_CODE, {"text": "hello world"}),
}
NOT_STREAMING = "leaves"
TEXT_GENERATION = "generate"
#: The text-generation pipeline's example prompt and its saved generation settings (greedy).
PROMPT, GREEDY = "hello world", {"max_new_tokens": 12, "do_sample": False}


def _installed(name):
    from importlib.metadata import version

    return f"{name}=={version(name)}"


def requirements(name):
    """The pip requirements a streaming model is logged with, pinned to this interpreter's versions: given, MLflow
    does not load each model in a subprocess to infer them (seconds apiece)."""
    wanted = ["mlflow", "pandas", "numpy"] + (["torch", "transformers"] if name == "gpt2" else [])
    return [_installed(distribution) for distribution in wanted]


def log_stream_models(root):
    """Log and register every model of :data:`STREAMERS`, :data:`NOT_STREAMING` and :data:`TEXT_GENERATION` in the
    active tracking store (a run of the active experiment); their code and the GPT-2 pipeline are written under
    ``root``.
    Returns ``{name: ModelInfo}``."""
    pipeline = root / "gpt2-pipeline"
    shared_text_generation_pipeline().save_pretrained(str(pipeline))
    logged = {}
    with mlflow.start_run():
        for name, (code, example) in STREAMERS.items():
            (root / f"{name}.py").write_text(code)
            logged[name] = mlflow.pyfunc.log_model(
                name=name,
                python_model=str(root / f"{name}.py"),
                artifacts={"pipeline": str(pipeline)} if name == "gpt2" else None,
                input_example=example,
                pip_requirements=requirements(name),
                registered_model_name=name,
            )
        logged[NOT_STREAMING] = log_not_streaming()
        logged[TEXT_GENERATION] = log_text_generation()
    return logged


def log_text_generation():
    """The tiny GPT-2 pipeline logged with ``mlflow_triton.transformers`` and ``stream=True``, registered as
    :data:`TEXT_GENERATION`."""
    import mlflow_triton.transformers

    return mlflow_triton.transformers.log_model(
        shared_text_generation_pipeline(),
        name=TEXT_GENERATION,
        input_example=PROMPT,
        model_config=GREEDY,
        stream=True,
        pip_requirements=requirements("gpt2"),
        registered_model_name=TEXT_GENERATION,
    )


def log_not_streaming():
    """A scikit-learn classifier, registered as :data:`NOT_STREAMING`: its pyfunc has no ``predict_stream``."""
    from sklearn.linear_model import LogisticRegression

    x = pd.DataFrame({"length": [1.0, 2.0, 3.0, 4.0], "width": [0.5, 0.1, 0.9, 0.3]})
    return mlflow.sklearn.log_model(
        LogisticRegression().fit(x, np.array([0, 0, 1, 1])),
        name=NOT_STREAMING,
        input_example=x.head(2),
        registered_model_name=NOT_STREAMING,
    )


def ticker_body(request_id, chunks, delay=0.0, fail=False):
    """The JSON body asking ``ticker`` for ``chunks`` chunks naming ``request_id``, ``delay`` seconds apart."""
    return json.dumps({"inputs": {"id": request_id, "chunks": chunks, "delay": delay, "fail": fail}})
