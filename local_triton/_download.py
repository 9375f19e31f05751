"""The directory a model is downloaded into, emptied before each fetch.

``triton.load_model(..., dst_path=...)`` adds to what is there: with a reused ``--work-dir``, files of
an older model would stay next to the new one (say an old ``request.json`` beside the
``request.bin`` the new version ships) and be served with it.
"""

import shutil
from pathlib import Path

from .errors import ModelSourceError

__all__ = ["empty_download_dir"]


def empty_download_dir(directory, uri):
    """Remove ``directory`` (if present) so that a fetch into it starts empty.

    Refuses when ``uri`` is a local path inside it: that model would be deleted before it is read.
    """
    directory = Path(directory).resolve()
    local = Path(str(uri)).expanduser()
    if local.exists() and (local.resolve() == directory or directory in local.resolve().parents):
        raise ModelSourceError(
            f"{uri}: lies inside {directory}, which is emptied before each fetch; copy the model elsewhere or "
            "choose another --work-dir"
        )
    shutil.rmtree(directory, ignore_errors=True)
    if directory.exists():
        raise ModelSourceError(f"{uri}: cannot empty the download directory {directory} before fetching the model")
