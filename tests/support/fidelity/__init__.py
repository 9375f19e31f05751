"""The real-Triton fidelity campaign: generated cases, served on one Triton, compared with ``pyfunc``.

* :mod:`.cases` -- a case as plain data (``Case``) and what it becomes: the model, its explicit
  signature (if any), its inputs as model values and as raw Triton tensors;
* :mod:`.expectations` -- what MLflow-Triton must do with a case, derived independently of the
  package: reject it at logging time (and with which message), or serve it; and whether each
  prediction fits the declared outputs;
* :mod:`.client` -- requests built from raw arrays (JSON and binary tensor extension), sent with
  ``http.client``, answers decoded;
* :mod:`.campaign` -- one serving environment, one Triton in explicit model-control mode, a case
  logged, loaded, checked and unloaded at a time, with timings for the report.

The Hypothesis strategies that draw cases are in ``tests/property/fidelity_strategies.py``.
"""
