"""The code that runs inside Triton's Python backend.

It is never imported from the installed package inside Triton: the logging side composes ``errors.py``,
``conversions.py``, ``nested.py``, ``codecs.py``, ``loading.py``, ``parameters.py``, ``batching.py``,
``protocol.py``, ``forwarding.py`` and ``triton_model.py`` (with the shared contract) into the generated
``1/model.py``, in that order (``logging_side/_model_py.py``); ``forwarding.py`` and ``guard.py`` make the whole
``1/model.py`` of a batched repository's zero-row guard (``mlflow_triton.repository.guard``). Importing it here lets
tests and the logging side exercise the very same codecs.
"""

RUNTIME_VERSION = "2.10.1"
