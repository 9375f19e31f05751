"""The code that runs inside Triton's Python backend.

It is never imported from the installed package inside Triton: the logging side composes ``errors.py``,
``conversions.py``, ``nested.py``, ``codecs.py``, ``loading.py``, ``parameters.py``, ``batching.py``,
``protocol.py`` and ``triton_model.py`` (with the shared contract) into the generated ``1/model.py``, in that order
(``logging_side/_model_py.py``). Importing it here lets tests and the logging side exercise the very same codecs.
"""

RUNTIME_VERSION = "2.12.0"
