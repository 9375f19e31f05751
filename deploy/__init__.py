"""``mlflow_triton.deploy``: taking a generated repository off this machine.

* :mod:`~mlflow_triton.deploy.errors` -- the errors of this part (one family with the rest).

Boundary: this part may use ``mlflow_triton.local`` (its serving-environment builder and server),
the logging side (``triton.load_model``), the runtime's codecs and the contract; none of those
import it. Heavy or optional dependencies are imported lazily with an error naming the extra.
"""

from .errors import DeployError

__all__ = ["DeployError"]
