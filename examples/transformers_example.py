"""Log a tiny offline text-generation pipeline with its Triton repository.

Nothing is downloaded: the tokenizer is a small whitespace WordLevel
vocabulary and the model a one-layer GPT-2 with seeded (untrained) weights,
so the generated text is gibberish -- the point is the packaging. Generation
is deterministic (``do_sample=False``). Run directly to log into a local sqlite
MLflow store::

    python examples/transformers_example.py
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before huggingface_hub reads its settings

import mlflow  # noqa: E402
import torch  # noqa: E402

from mlflow_triton import transformers as triton_transformers  # noqa: E402

WORDS = (
    "the a an model serves text example input output hello world triton mlflow signature tensor request "
    "answer small tiny network server client batch token"
).split()
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")
MODEL_CONFIG = {"max_new_tokens": 8, "do_sample": False}


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: index for index, token in enumerate([*SPECIAL_TOKENS, *WORDS])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]"
    )


def build_pipeline(seed=0):
    """A text-generation pipeline around a one-layer GPT-2 (16-dim embeddings), in eval mode."""
    from transformers import GPT2Config, GPT2LMHeadModel, pipeline

    tokenizer = build_tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=64,
        n_layer=1,
        n_head=2,
        n_embd=16,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    return pipeline("text-generation", model=model, tokenizer=tokenizer)


def log_example(tracking_uri, registered_model_name="demo-text-generator", device="cpu"):
    """Build the tiny pipeline and log it; returns ModelInfo."""
    mlflow.set_tracking_uri(tracking_uri)
    return triton_transformers.log_model(
        build_pipeline(),
        input_example=["hello world", "the model serves text"],
        name="text-generator",
        triton_model_name="text_generator",
        registered_model_name=registered_model_name,
        device=device,
        task="text-generation",
        model_config=MODEL_CONFIG,
        architecture_init_kwargs={"n_layer": 1, "n_head": 2, "n_embd": 16},
    )


if __name__ == "__main__":
    info = log_example("sqlite:///mlruns.db")
    print(info.model_uri)
