"""A custom architecture kept apart from the tests, packaged with ``code_paths``.

Tests import it under its own top-level name (``custom_net``), as a user's
script imports its architecture package, so the pickled model refers to
``custom_net.mlp.TinyMLP``: a clean interpreter can unpickle it only when this
package travels with the model.
"""

from .mlp import TinyMLP

__all__ = ["TinyMLP"]
