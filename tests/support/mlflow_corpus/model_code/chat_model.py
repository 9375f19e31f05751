"""A ``ChatModel`` from code: ``TestChatModel`` of MLflow's ``tests/pyfunc/test_chat_model.py``.

Its answer holds the messages and the params it was given, as JSON, in two choices; ``id`` is fixed, ``created``
is the time of the call (MLflow's ``ChatCompletionResponse`` fills it).
"""

import json

from mlflow.models import set_model
from mlflow.pyfunc import ChatModel
from mlflow.types.llm import ChatCompletionResponse


class TestChatModel(ChatModel):
    def predict(self, context, messages, params):
        choices = [
            {"index": 0, "message": {"role": "assistant", "content": json.dumps([m.to_dict() for m in messages])}},
            {"index": 1, "message": {"role": "user", "content": json.dumps(params.to_dict())}},
        ]
        for choice in choices:
            choice["finish_reason"] = "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
        return ChatCompletionResponse(id="123", model="MyChatModel", choices=choices, usage=usage)


set_model(TestChatModel())
