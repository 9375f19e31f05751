"""The distributions whose versions decide a repository's answers, and where ``validation.json`` records them.

The generated ``requirements.txt`` pins them to the versions the example was predicted with (logging side); ``check``
compares the serving environment it built with the one ``pyfunc.predict`` answers in (local side). Besides the model's
framework and MLflow (pinned by MLflow's own requirement lines), those are numpy, pandas and pyarrow: pandas 3 reads
a text column through pyarrow when it is installed and through Python objects when not, and answers differently
(``pd.Series(["abc", None]).to_numpy(dtype=str)``: ``['a', 'n']`` with pyarrow, ``['abc', 'nan']`` without).
``benchmarks/serving_env_answers.py`` measures which distributions change MLflow's answers to hostile requests.
"""

import importlib.metadata
import json
from pathlib import Path

from packaging.utils import canonicalize_name

from .layout import VALIDATION_FILE

__all__ = ["ANSWER_DISTRIBUTIONS", "PREDICTED_WITH", "installed_versions", "predicted_with"]

#: Beside the framework and MLflow: what changes ``predict``'s answer or MLflow's reading of a request.
ANSWER_DISTRIBUTIONS = ("numpy", "pandas", "pyarrow")
#: validation.json's field: ``{distribution: version installed when the example was predicted, or null}``.
PREDICTED_WITH = "predicted_with"


def installed_versions(names):
    """``{canonical name: version installed in this interpreter, or None}`` for ``names``, in their order."""
    versions = {}
    for name in names:
        try:
            versions[canonicalize_name(name)] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[canonicalize_name(name)] = None
    return versions


def predicted_with(model_dir):
    """What the repository's validation.json records in :data:`PREDICTED_WITH`, or ``None`` (an older repository,
    or one whose validation.json cannot be read)."""
    try:
        record = json.loads((Path(model_dir) / VALIDATION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    versions = record.get(PREDICTED_WITH) if isinstance(record, dict) else None
    return dict(versions) if isinstance(versions, dict) else None
