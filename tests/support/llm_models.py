"""Tiny transformers pipelines saved with MLflow's LLM inference tasks (no model hub).

``task="llm/v1/chat"`` and ``task="llm/v1/completions"`` wrap a 1-layer GPT-2
text-generation pipeline; ``task="llm/v1/embeddings"`` wraps a 1-layer BERT
feature-extraction pipeline. Models are seeded and generation is greedy with a
few new tokens, so the generated text is the same from call to call (only the
``id`` and ``created`` fields MLflow adds change).

``save_llm_model(task, path)`` saves one with ``mlflow.transformers.save_model``;
``log_llm_model(task, name)`` logs one to the active run.
"""

import functools

from tests.support.tiny_models import seeded, text_generation_pipeline, tiny_bert_config, word_level_tokenizer

CHAT = "llm/v1/chat"
COMPLETIONS = "llm/v1/completions"
EMBEDDINGS = "llm/v1/embeddings"
TASKS = (CHAT, COMPLETIONS, EMBEDDINGS)

# Greedy decoding of a few tokens: deterministic output whatever the caller's seed.
GENERATION_CONFIG = {"max_new_tokens": 4, "do_sample": False}

# Canonical request bodies, one per task (as a client posts them to /invocations).
CANONICAL_INPUTS = {
    CHAT: {"messages": [{"role": "user", "content": "hi"}]},
    COMPLETIONS: {"prompt": "hello"},
    EMBEDDINGS: {"input": ["a b", "c"]},
}

_WORDS = ("system user assistant hi hello world a b c model text triton mlflow answer tiny small the is of to").split()
_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")

# Renders "user hi assistant" for [{"role": "user", "content": "hi"}] with a generation prompt:
# every rendered word is in the vocabulary.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }} {{ message['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}assistant{% endif %}"
)


def llm_tokenizer(chat_template=None):
    """A WordLevel tokenizer over a chat-friendly vocabulary, with ``chat_template`` set when given."""
    tokenizer = word_level_tokenizer(_WORDS, _SPECIAL_TOKENS)
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    return tokenizer


def _greedy(pipeline):
    """``pipeline`` with its model's generation config set to greedy, few-token decoding."""
    for key, value in GENERATION_CONFIG.items():
        setattr(pipeline.model.generation_config, key, value)
    return pipeline


@functools.cache
def chat_pipeline():
    """A text-generation pipeline (GPT-2, 1 layer, 16 dims) whose tokenizer has ``CHAT_TEMPLATE``."""
    return _greedy(text_generation_pipeline(llm_tokenizer(CHAT_TEMPLATE), n_positions=64))


@functools.cache
def completions_pipeline():
    """A text-generation pipeline (GPT-2, 1 layer, 16 dims) without a chat template."""
    return _greedy(text_generation_pipeline(llm_tokenizer(), n_positions=64))


@functools.cache
def embeddings_pipeline():
    """A feature-extraction pipeline over a seeded BERT with 1 layer and a 16-dim hidden size."""
    from transformers import BertModel, pipeline

    tokenizer = llm_tokenizer()
    config = tiny_bert_config(tokenizer, 64)
    model = seeded(lambda: BertModel(config))
    return pipeline("feature-extraction", model=model, tokenizer=tokenizer)


PIPELINES = {CHAT: chat_pipeline, COMPLETIONS: completions_pipeline, EMBEDDINGS: embeddings_pipeline}


def pip_requirements():
    """Pins of what is installed: MLflow's default list adds ``torchvision``, which may be absent."""
    from importlib.metadata import version

    return [f"{package}=={version(package)}" for package in ("mlflow", "transformers", "torch", "tokenizers")]


def model_config(task):
    """The inference config saved with the model: greedy generation for the text-generation tasks."""
    return None if task == EMBEDDINGS else dict(GENERATION_CONFIG)


def save_llm_model(task, path, **kwargs):
    """Save the tiny pipeline for LLM ``task`` to ``path`` with ``mlflow.transformers.save_model``.

    ``kwargs`` go to ``save_model`` (e.g. ``input_example``); ``model_config`` defaults to greedy
    generation and ``pip_requirements`` to the installed versions. Returns ``path``.
    """
    import mlflow

    kwargs.setdefault("model_config", model_config(task))
    kwargs.setdefault("pip_requirements", pip_requirements())
    mlflow.transformers.save_model(transformers_model=PIPELINES[task](), path=str(path), task=task, **kwargs)
    return path


def log_llm_model(task, name="model", **kwargs):
    """Log the tiny pipeline for LLM ``task`` to the active run; returns the ``ModelInfo``."""
    import mlflow

    kwargs.setdefault("model_config", model_config(task))
    kwargs.setdefault("pip_requirements", pip_requirements())
    return mlflow.transformers.log_model(transformers_model=PIPELINES[task](), name=name, task=task, **kwargs)
