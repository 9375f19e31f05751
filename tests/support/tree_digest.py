"""What a directory tree holds, to prove a command left it untouched: every folder and every file's SHA-256."""

import hashlib
import os
from pathlib import Path


def tree_digest(root):
    """``{relative path: "dir" | "link -> target" | sha256 hex}`` for everything under ``root``."""
    root = Path(root)
    entries = {}
    for directory, folders, files in os.walk(root):
        here = Path(directory)
        for name in folders:
            path = here / name
            entries[str(path.relative_to(root))] = f"link -> {os.readlink(path)}" if path.is_symlink() else "dir"
        for name in files:
            path = here / name
            if path.is_symlink():
                entries[str(path.relative_to(root))] = f"link -> {os.readlink(path)}"
            else:
                entries[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return entries


def changes(before, after):
    """Human-readable differences between two digests: added, removed and changed paths."""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(path for path in set(before) & set(after) if before[path] != after[path])
    return (
        [f"added {path}" for path in added]
        + [f"removed {path}" for path in removed]
        + [f"changed {path}" for path in changed]
    )
