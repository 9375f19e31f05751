"""Deterministic models for the real-Triton fidelity campaign, packaged with ``code_paths``.

Imported under its own top-level name (``fidelity_models``), as a user's script imports its own
code: a pickled model refers to ``fidelity_models.<module>.<class>``, so Triton can load it only
because the package travels with the model (``code_paths=[FIDELITY_MODELS_DIR]``).

* :mod:`fidelity_models.ops` -- named element-wise operations on numpy arrays (numpy only);
* :mod:`fidelity_models.estimators` -- ``RecipeEstimator``, a scikit-learn estimator whose
  ``predict`` computes its outputs from its input (a DataFrame, an ndarray or a dict of ndarrays)
  by such operations and returns them as an ndarray, a DataFrame, a Series or a dict;
* :mod:`fidelity_models.modules` -- ``RecipeModule``, a ``torch.nn.Module`` doing the same for one
  tensor (imported only where torch is wanted: this package imports no submodule by itself, so a
  scikit-learn model does not pay for importing torch).
"""
