"""The benchmark block of docs/benchmarks.md is ``benchmarks/results.md`` (``python -m benchmarks.readme`` keeps them
equal)."""

import pytest

from benchmarks import readme

RESULTS = """## Benchmark results

Run: `python -m benchmarks.run`

### 2. Runtime overhead in process (medians)

| request | decode ms |
| ------- | --------- |
| 1000    | 1.342     |

Target missed; cProfile of decode + encode (top by internal time):

```
   ncalls  tottime
      300    0.017
```

### 3. Logging cost
"""


def test_readme_block_equals_results_md_when_the_repository_is_checked_out():
    text = readme.PAGE.read_text(encoding="utf-8")
    block = text.split(readme.START, 1)[1].split(readme.END, 1)[0]

    assert block.strip() == readme.readme_block(readme.RESULTS.read_text(encoding="utf-8"))


def test_readme_block_drops_the_title_and_the_profile_listing_when_built():
    block = readme.readme_block(RESULTS)

    assert block.splitlines()[0] == "Run: `python -m benchmarks.run`"
    assert "ncalls" not in block and "```" not in block
    assert (
        "Target missed; the cProfile of decode + encode is in `benchmarks/results.md`.\n\n### 3. Logging cost" in block
    )


def test_sync_replaces_only_the_block_when_the_readme_has_one(tmp_path):
    target = tmp_path / "README.md"
    target.write_text(f"intro\n{readme.START}\nold\n{readme.END}\nafter\n", encoding="utf-8")

    changed = readme.sync(RESULTS, target)

    text = target.read_text(encoding="utf-8")
    assert changed
    assert text.startswith(f"intro\n{readme.START}\n\nRun: ")
    assert text.endswith(f"### 3. Logging cost\n\n{readme.END}\nafter\n")
    assert not readme.sync(RESULTS, target)


def test_sync_refuses_when_the_readme_has_no_block(tmp_path):
    target = tmp_path / "README.md"
    target.write_text("no markers\n", encoding="utf-8")

    with pytest.raises(ValueError, match="needs exactly one benchmark block"):
        readme.sync(RESULTS, target)
