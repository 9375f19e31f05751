"""A ``ChatAgent`` from code: ``SimpleChatAgent`` of MLflow's ``tests/pyfunc/test_chat_agent.py``.

It answers each message it was given as an assistant message named ``llm`` with a fixed id.
"""

import mlflow
from mlflow.models import set_model
from mlflow.pyfunc import ChatAgent
from mlflow.types.agent import ChatAgentResponse


class SimpleChatAgent(ChatAgent):
    @mlflow.trace
    def predict(self, messages, context=None, custom_inputs=None):
        answers = [
            {
                "role": "assistant",
                "content": m.content,
                "name": "llm",
                "id": "call_4a7173b9-5058-4236-adf0-d3fdde69076c",
            }
            for m in messages
        ]
        return ChatAgentResponse(messages=answers)


set_model(SimpleChatAgent())
