"""Build directories left in the shared cache by a process killed outright (no chance to clean up).

Builds happen in hidden ``.<name>-<random>`` directories next to their result and are renamed
into place when done; a process killed by ``kill -9`` or the OOM killer leaves its build behind.
"""

import shutil
import time
from pathlib import Path

__all__ = ["STALE_BUILD_SECONDS", "remove_stale_builds"]

#: A build directory (or its activity file) idle this long belongs to a process that was killed.
STALE_BUILD_SECONDS = 6 * 3600


def remove_stale_builds(
    directory: Path, pattern: str = ".*-*", older_than: float = STALE_BUILD_SECONDS, activity_file: str | None = None
) -> None:
    """Remove the build directories ``directory/pattern`` idle for more than ``older_than`` seconds.

    A build in progress -- here or in another process sharing the cache -- keeps changing its
    ``activity_file`` (pip's log) or, without one, its directory; one that has not changed for
    hours is dead.
    """
    now = time.time()
    for build in Path(directory).glob(pattern):
        marker = build / activity_file if activity_file and (build / activity_file).exists() else build
        try:
            idle = now - marker.stat().st_mtime
        except OSError:
            continue
        if build.is_dir() and idle > older_than:
            shutil.rmtree(build, ignore_errors=True)
