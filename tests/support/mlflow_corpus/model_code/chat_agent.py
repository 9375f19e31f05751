"""A ``ChatAgent`` from code: ``SimpleChatAgent`` of MLflow's ``tests/pyfunc/test_chat_agent.py``.

It answers each message it was given as an assistant message named ``llm`` with a new ``uuid4`` id, as the test's
``get_mock_response`` does.
"""

from uuid import uuid4

import mlflow
from mlflow.models import set_model
from mlflow.pyfunc import ChatAgent
from mlflow.types.agent import ChatAgentResponse


class SimpleChatAgent(ChatAgent):
    @mlflow.trace
    def predict(self, messages, context=None, custom_inputs=None):
        answers = [{"role": "assistant", "content": m.content, "name": "llm", "id": str(uuid4())} for m in messages]
        return ChatAgentResponse(messages=answers)


set_model(SimpleChatAgent())
