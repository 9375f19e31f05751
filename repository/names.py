"""Triton-safe tensor and model names derived from arbitrary MLflow names."""

import re
import unicodedata

from mlflow_triton.errors import InvalidArgumentError

_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")
_SAFE_MODEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
MAX_MODEL_NAME_LENGTH = 128


def sanitize(name, fallback):
    """Map ``name`` to ``[A-Za-z_][A-Za-z0-9_]*`` deterministically.

    A non-string name (an integer column label) is spelled as text first (``0``
    -> ``"0"``). Accents are folded to ASCII, every other run of unsafe
    characters becomes one ``_``, a leading digit gets a ``_`` prefix (``0`` ->
    ``_0``), and a name with nothing safe left (``None``, ``"{}"``, ``"名前"``)
    becomes ``fallback``.
    """
    if name is None:
        return fallback
    folded = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
    safe = _UNSAFE.sub("_", folded).strip("_")
    if not safe:
        return fallback
    if safe[0].isdigit():
        safe = "_" + safe
    return safe


class TensorNamer:
    """Hands out unique tensor names in one namespace (inputs and outputs together).

    A name whose sanitized form is taken gets the first free ``_2``, ``_3``, …
    suffix, so two original names never merge silently; the result is recorded
    in the contract next to the original name.
    """

    def __init__(self):
        self._taken = set()

    def claim(self, name, fallback):
        base = sanitize(name, fallback)
        candidate, counter = base, 1
        while candidate in self._taken:
            counter += 1
            candidate = f"{base}_{counter}"
        self._taken.add(candidate)
        return candidate


def check_model_name(name: object) -> str:
    """Validate a ``triton_model_name``; it becomes a directory and Triton's model name."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(
            f"triton_model_name must be a non-empty string of ASCII letters, digits, '_', '-' and '.', got {name!r}"
        )
    if len(name) > MAX_MODEL_NAME_LENGTH:
        raise InvalidArgumentError(
            f"triton_model_name is {len(name)} characters long; at most {MAX_MODEL_NAME_LENGTH} allowed"
        )
    if ".." in name or not _SAFE_MODEL_NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"triton_model_name {name!r} is not a safe Triton model name; allowed: ASCII letters, "
            "digits, '_', '-' and '.', not starting with '.' or '-' (no path separators, no '..')"
        )
    return name


def default_model_name(name):
    """The Triton model name derived from the MLflow model ``name``."""
    return sanitize(name, "model")
