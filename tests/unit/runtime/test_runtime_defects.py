"""A defect of the runtime itself is the server's failure: 500, its text kept out of the answer and in Triton's log.

The auditor's guide (docs/auditing-the-runtime.md) names this test for the last branch of ``_answer``.
"""

import numpy as np

from tests.support import fake_pb_utils
from tests.unit.runtime.test_runtime_execute import INTERNAL, PRICES, PRICES_FRAME, error_message, serve


def test_execute_answers_internal_naming_only_the_type_when_the_runtime_itself_fails(monkeypatch):
    records = []
    monkeypatch.setattr(fake_pb_utils.Logger, "records", records)
    model, _, inputs, _ = serve(monkeypatch, PRICES, lambda frame: np.arange(len(frame)))

    def broken_encoder(prediction):
        raise KeyError("SECRET-from-the-request")

    monkeypatch.setattr(model.outputs, "to_tensors", broken_encoder)

    [response] = model.execute([fake_pb_utils.request_from_arrays(inputs.to_tensors(PRICES_FRAME))])

    message = error_message(response, INTERNAL)
    assert message.startswith("The mlflow-triton runtime failed: KeyError; its message may quote the request")
    assert "SECRET" not in message
    assert [text for _, text in records if "SECRET-from-the-request" in text] != []
