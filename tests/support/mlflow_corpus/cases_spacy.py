"""spaCy cases: the pipeline MLflow's spaCy tests log (``tests/spacy/test_spacy_model_export.py``).

The ``spacy_model_with_data`` fixture: a blank English pipeline with a ``textcat`` (exclusive classes, the CNN
text classifier over the default tok2vec) trained a few steps to tell computer graphics from baseball. The test
fetches 20 newsgroups; the case trains offline on a dozen sentences of its own of each kind. Logged with plain
``mlflow.spacy.log_model`` and brought in with ``mlflow_triton.add_repository``. spaCy is not in CI's environment:
``make corpus`` installs it into ``.venv-corpus``; where it is not importable the cases are *not built*.
"""

from __future__ import annotations

from .case import SPACY_EXPORT, Built, case_table

case = case_table("spacy", SPACY_EXPORT)
CATEGORIES = ("comp.graphics", "rec.sport.baseball")
TEXTS = {
    "comp.graphics": (
        "How do I render a 3D mesh with smooth shading?",
        "The GIF image looks pixelated after scaling.",
        "Which graphics card is best for ray tracing?",
        "Convert the bitmap to JPEG without losing colors.",
        "OpenGL texture mapping is slow on my machine.",
        "I need a polygon fill algorithm for my renderer.",
    ),
    "rec.sport.baseball": (
        "The pitcher threw a perfect game last night.",
        "Who will win the World Series this year?",
        "He hit a home run in the ninth inning.",
        "The shortstop made an incredible double play.",
        "Batting averages are down across the league.",
        "The umpire called a strike on the last pitch.",
    ),
}


def _pipeline():
    """The fixture's pipeline, trained 5 iterations (the test's ``_train_model``), and its inference frame."""
    import random

    import pandas as pd
    import spacy
    from spacy.pipeline.tok2vec import DEFAULT_TOK2VEC_MODEL
    from spacy.training import Example
    from spacy.util import compounding, fix_random_seed, minibatch

    fix_random_seed(0)
    random.seed(0)
    nlp = spacy.blank("en")
    model = {"@architectures": "spacy.TextCatCNN.v2", "exclusive_classes": True, "tok2vec": DEFAULT_TOK2VEC_MODEL}
    textcat = nlp.add_pipe("textcat", config={"model": model}, last=True)
    for category in CATEGORIES:
        textcat.add_label(category)
    train = [
        Example.from_dict(nlp.make_doc(text), {"cats": {other: float(other == category) for other in CATEGORIES}})
        for category, texts in TEXTS.items()
        for text in texts
    ]
    optimizer = nlp.initialize(lambda: train)
    for _ in range(5):
        random.shuffle(train)
        for batch in minibatch(train, size=compounding(4.0, 32.0, 1.001)):
            nlp.update(batch, sgd=optimizer, drop=0.2, losses={})
    inference = pd.DataFrame(["Rendering the scene took hours.", "A great catch in center field.", "Pixel art"])
    return nlp, inference


@case(
    "textcat-save-load",
    "test_model_save_load",
    note="the test logs without input_example: 3 rows of its inference frame (one column, named 0) are the example",
    route="add-repository",
)
def textcat_save_load() -> Built:
    nlp, inference = _pipeline()
    return Built(nlp, {"input_example": inference.head(3)})


@case(
    "textcat-signature-example",
    "test_model_export_with_schema_and_examples",
    note="signature infer_signature(inference data), example its head(3)",
    route="add-repository",
)
def textcat_signature_example() -> Built:
    from mlflow.models import infer_signature

    nlp, inference = _pipeline()
    return Built(nlp, {"signature": infer_signature(inference), "input_example": inference.head(3)})


@case(
    "ner-without-pyfunc",
    "test_model_log_without_pyfunc_flavor",
    note="a blank pipeline with an untrained ner: MLflow logs no pyfunc flavor",
    route="add-repository",
)
def ner_without_pyfunc() -> Built:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("ner", last=True)
    return Built(nlp, {})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
