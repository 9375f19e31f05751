"""The glibc a wheel needs, read from its platform tags (PEP 600 ``manylinux_X_Y`` and the legacy aliases).

A wheel tagged ``manylinux_2_36_x86_64`` loads only where glibc >= 2.36; a wheel with several platform tags
needs the oldest of them. Wheels for any platform (``any``) and source builds need nothing known here.
Two places to read tags from: the wheels pip chooses in a dry run (``pip install --dry-run --report``: the file
names of ``download_info.url``), and the ``Tag:`` lines of an environment's ``*.dist-info/WHEEL`` files.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import urllib.parse
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

__all__ = ["GlibcNeed", "environment_needs", "glibc_of_platform", "report_needs", "too_new"]

_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_PEP600 = re.compile(r"^manylinux_(\d+)_(\d+)_")


@dataclasses.dataclass(frozen=True)
class GlibcNeed:
    """``project`` ``version`` is installed from ``wheel``, which needs glibc >= ``glibc`` (``(2, 36)``)."""

    project: str
    version: str
    wheel: str
    glibc: tuple[int, int]

    def describe(self) -> str:
        return f"{self.project}=={self.version} ({self.wheel}) needs glibc >= {self.glibc[0]}.{self.glibc[1]}"


def glibc_of_platform(platform: str) -> tuple[int, int] | None:
    """``(2, 17)`` for ``manylinux2014_x86_64``, ``(2, 36)`` for ``manylinux_2_36_x86_64``; ``None`` otherwise."""
    found = _PEP600.match(platform)
    if found:
        return int(found.group(1)), int(found.group(2))
    return _LEGACY.get(platform.split("_", 1)[0])


def _need_of_platforms(platforms) -> tuple[int, int] | None:
    """The oldest glibc among ``platforms``; ``None`` when one of them needs none (``any``, not manylinux)."""
    needs = [glibc_of_platform(p) for p in platforms]
    known = [n for n in needs if n is not None]
    if not needs or len(known) != len(needs):
        return None
    return min(known)


def report_needs(report_path: str | os.PathLike[str]) -> list[GlibcNeed]:
    """The manylinux wheels of a ``pip install --dry-run --report`` file, with the glibc each needs."""
    report = json.loads(Path(report_path).read_text())
    needs = []
    for item in report.get("install", []):
        url = (item.get("download_info") or {}).get("url") or ""
        filename = urllib.parse.unquote(url.rsplit("/", 1)[-1].split("#", 1)[0])
        try:
            _name, _version, _build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            continue  # a source distribution: built where it is installed
        need = _need_of_platforms({tag.platform for tag in tags})
        if need is not None:
            metadata = item.get("metadata") or {}
            needs.append(GlibcNeed(metadata.get("name", _name), metadata.get("version", str(_version)), filename, need))
    return needs


def environment_needs(env: str | os.PathLike[str]) -> list[GlibcNeed]:
    """The manylinux wheels installed in a virtualenv (its ``*.dist-info/WHEEL`` tags), with the glibc each needs."""
    needs = []
    for wheel_file in sorted(Path(env).glob("lib/python*/site-packages/*.dist-info/WHEEL")):
        platforms = {
            line.split(":", 1)[1].strip().rsplit("-", 1)[-1]
            for line in wheel_file.read_text(errors="replace").splitlines()
            if line.startswith("Tag:")
        }
        need = _need_of_platforms(platforms)
        if need is not None:
            stem = wheel_file.parent.name[: -len(".dist-info")]
            project, _, version = stem.partition("-")
            needs.append(GlibcNeed(project, version, f"{wheel_file.parent.name} tags {sorted(platforms)}", need))
    return needs


def too_new(needs: list[GlibcNeed], glibc: str) -> list[GlibcNeed]:
    """The entries of ``needs`` that do not load on ``glibc`` (``"2.35"``)."""
    have = tuple(int(part) for part in glibc.split(".")[:2])
    return [need for need in needs if need.glibc > have]
