"""The Triton model repository as this package writes and reads it, and writing a directory into place.

Every part that writes or reads a repository (the logging side, ``local``, ``export``, ``deploy``) imports it
from here rather than from another part's private modules. :mod:`~mlflow_triton.repository.staging` builds any
directory in a hidden sibling and renames it into place, so a present directory is always a complete one.
"""
