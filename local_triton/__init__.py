"""``mlflow_triton.local``: generated repositories on a real local Triton server."""
