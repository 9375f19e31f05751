"""Copy ``benchmarks/results.md`` into the benchmark block of ``docs/benchmarks.md``, so both show the same run.

    .venv/bin/python -m benchmarks.readme     # after editing or restoring results.md by hand

``python -m benchmarks.run`` (``make bench``) calls :func:`sync` itself after a full run of every
part. The page holds everything of ``results.md`` between the two marker comments below except
its title and the cProfile listing of a missed overhead target (that stays in ``results.md``); the
text around the markers (what the figures and the misses mean) is written by hand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "benchmarks" / "results.md"
START = "<!-- benchmark results: generated from benchmarks/results.md by `python -m benchmarks.readme` -->"
END = "<!-- end of benchmark results -->"
PROFILE_INTRO = "Target missed; cProfile of decode + encode"


def readme_block(results: str) -> str:
    """The page's view of ``results``: no title, the cProfile listing replaced by a pointer."""
    lines = results.strip().splitlines()
    if lines and lines[0].startswith("## "):
        lines = lines[1:]
    kept, fences_to_skip = [], 0
    for line in lines:
        if line.startswith(PROFILE_INTRO):
            kept.append("Target missed; the cProfile of decode + encode is in `benchmarks/results.md`.")
            fences_to_skip = 2  # the listing's opening and closing ``` lines, and all between them
        elif fences_to_skip:
            fences_to_skip -= line.startswith("```")
        else:
            kept.append(line)
    return "\n".join(kept).strip().replace("\n\n\n", "\n\n")


def sync(results: str, readme: Path = PAGE) -> bool:
    """Replace the page's block with ``results``; returns whether the page changed."""
    text = readme.read_text(encoding="utf-8")
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError(f"{readme} needs exactly one benchmark block: a line {START!r}, then a line {END!r}")
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    updated = f"{before}{START}\n\n{readme_block(results)}\n\n{END}{after}"
    if updated != text:
        readme.write_text(updated, encoding="utf-8")
    return updated != text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.readme", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--readme", type=Path, default=PAGE, help="the page with the block (default: %(default)s)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    changed = sync(args.results.read_text(encoding="utf-8"), args.readme)
    print(f"{args.readme}: {'updated from' if changed else 'already matches'} {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
