"""A ``ResponsesAgent`` from code: ``SimpleResponsesAgent`` of MLflow's ``tests/pyfunc/test_responses_agent.py``.

It answers the first input's content as one output message; the message's ``id`` is a new ``uuid4`` per call, as
in the test's ``get_mock_response``.
"""

from uuid import uuid4

from mlflow.models import set_model
from mlflow.pyfunc import ResponsesAgent
from mlflow.types.responses import ResponsesAgentResponse


class SimpleResponsesAgent(ResponsesAgent):
    def predict(self, request):
        text = request.input[0].content
        item = {
            "type": "message",
            "id": str(uuid4()),
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }
        return ResponsesAgentResponse(output=[item])


set_model(SimpleResponsesAgent())
