"""``MyBertModel``: a user's subclass of ``transformers.BertModel`` (MLflow's PyTorch flavor tests log one).

Its class lives here (packaged with ``code_paths``), its base class in ``transformers``: the logged
requirements must name ``transformers`` (issue #22.2), or Triton fails to unpickle it.
"""

from transformers import BertModel


class MyBertModel(BertModel):
    """Answers the last hidden state for ``input_ids`` (int64, ``(batch, tokens)``)."""

    def forward(self, input_ids):
        return super().forward(input_ids=input_ids).last_hidden_state
