"""A user's own logging script -- not one of the examples -- as the CLI end-to-end tests run it.

    python tests/support/user_script.py sqlite:////tmp/store/mlflow.db /tmp/store/artifacts [user-classifier,...]

Logs, each with ``registered_model_name``: a scikit-learn Pipeline (``user-classifier``), a
PyTorch module whose architecture travels with ``code_paths`` (``user-network``, alias
``champion``) and a Transformers text-classification pipeline (``user-text``); a third argument
(comma-separated registered names) logs only those. Prints one
``<registered name> <version> <model uri>`` line per model. Nothing is downloaded.
"""

import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import mlflow  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mlflow_triton import pytorch, sklearn, transformers  # noqa: E402

ARCHITECTURE = pathlib.Path(__file__).resolve().parent / "custom_net"  # imported as `custom_net`, as a user would


def fitted_pipeline():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {"length": rng.normal(10, 3, 60), "width": rng.normal(4, 1, 60), "count": rng.integers(0, 9, 60)}
    )
    labels = (frame["length"] * 0.3 + frame["width"] - frame["count"] * 0.2 > 6).astype(int)
    return make_pipeline(StandardScaler(), LogisticRegression()).fit(frame, labels), frame


def network():
    import torch
    from custom_net import TinyMLP

    torch.manual_seed(3)
    return TinyMLP(input_size=4, hidden_size=8, output_size=3).eval()


def text_classifier():
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast, pipeline

    words = "good bad great awful film plot actors music boring fun".split()
    vocab = {token: index for index, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    )
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        pad_token_id=0,
        id2label={0: "NEG", 1: "POS"},
        label2id={"NEG": 0, "POS": 1},
    )
    torch.manual_seed(5)
    return pipeline("text-classification", model=BertForSequenceClassification(config).eval(), tokenizer=tokenizer)


def main(tracking_uri, artifact_location, only=None):
    mlflow.set_tracking_uri(tracking_uri)
    if mlflow.get_experiment_by_name("user") is None:
        mlflow.create_experiment("user", artifact_location=artifact_location)
    mlflow.set_experiment("user")

    wanted = set(only.split(",")) if only else {"user-classifier", "user-network", "user-text"}
    logged = []
    if "user-classifier" in wanted:
        pipeline, frame = fitted_pipeline()
        logged.append(
            (
                "user-classifier",
                sklearn.log_model(
                    pipeline,
                    input_example=frame.iloc[:4],
                    name="classifier",
                    pyfunc_predict_fn="predict_proba",
                    registered_model_name="user-classifier",
                ),
            )
        )
    if "user-network" in wanted:
        logged.append(("user-network", _log_network()))
    if "user-text" in wanted:
        logged.append(
            (
                "user-text",
                transformers.log_model(
                    text_classifier(),
                    input_example=["good film", "boring plot bad actors"],
                    name="text",
                    triton_model_name="text_classifier",
                    task="text-classification",
                    registered_model_name="user-text",
                ),
            )
        )
    for name, info in logged:
        print(name, info.registered_model_version, info.model_uri, flush=True)


def _log_network():
    info = pytorch.log_model(
        network(),
        input_example=np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4),
        name="network",
        code_paths=[str(ARCHITECTURE)],
        registered_model_name="user-network",
    )
    mlflow.MlflowClient().set_registered_model_alias("user-network", "champion", info.registered_model_version)
    return info


if __name__ == "__main__":
    main(*sys.argv[1:4])
