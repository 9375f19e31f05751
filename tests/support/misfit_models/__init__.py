"""A deterministic model whose predictions are looked up, packaged with ``code_paths``.

Imported under its own top-level name (``misfit_models``), as a user's script imports its own code:
a pickled model refers to ``misfit_models.lookup.LookupEstimator``, so Triton can load it only
because the package travels with the model (``code_paths=[MISFIT_MODELS_DIR]``).
"""
