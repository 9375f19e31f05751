#!/usr/bin/env bash
# Mutation testing with cosmic-ray, one module at a time: tests/mutation/run.sh MODULE [VENV]
# MODULE is a session config tests/mutation/MODULE.toml (compare, conversions, codecs, contract).
#
# The mutants are written into a copy of the tree (.work/mutation/tree-MODULE), never into the worktree, so tests
# or servers running meanwhile import untouched code; the copy's tests run through tests/mutation/forkserver.py
# (heavy imports once, one fork per mutant). A session is resumed where it stopped: delete
# .work/mutation/MODULE.sqlite to start over. The report goes to .work/mutation/MODULE.txt.
set -euo pipefail
module=${1:?usage: tests/mutation/run.sh MODULE [VENV]}
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$(cd "${2:-$root/.venv}" && pwd)
work=$root/.work/mutation
tree=$work/tree-$module
config=tests/mutation/$module.toml
test -f "$root/$config" || { echo "no session config $config" >&2; exit 2; }
test -x "$venv/bin/cosmic-ray" || { echo "cosmic-ray is missing: pip install -e '.[mutation]' into $venv" >&2; exit 2; }

mkdir -p "$work"
rm -rf "$tree"
mkdir -p "$tree"
for part in logging_side runtime shared_contract local_triton export deploy tests examples benchmarks docs README.md \
        pyproject.toml; do
    cp -r "$root/$part" "$tree/"
done
find "$tree" -name __pycache__ -prune -exec rm -rf {} +
ln -s "$venv" "$tree/.venv"

socket=$work/pytest-$module.sock
cd "$tree"
HYPOTHESIS_PROFILE=mutation "$venv/bin/python" -m tests.mutation.forkserver serve --source-root . "$socket" >"$work/forkserver-$module.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$socket"' EXIT
for _ in $(seq 1 600); do test -S "$socket" && break; sleep 0.5; done
test -S "$socket" || { echo "the pytest fork server did not start: see $work/forkserver-$module.log" >&2; exit 1; }
sed "s|@SOCKET@|$socket|" "$config" >"$work/$module.toml"

session=$work/$module.sqlite
# Unmutated, the tests must pass: otherwise every mutant would count as killed.
"$venv/bin/cosmic-ray" baseline "$work/$module.toml" >"$work/$module-baseline.log" 2>&1 \
    || { echo "the tests fail without any mutant: see $work/$module-baseline.log" >&2; exit 1; }
test -f "$session" || "$venv/bin/cosmic-ray" init "$work/$module.toml" "$session"
"$venv/bin/cosmic-ray" exec "$work/$module.toml" "$session"
"$venv/bin/cr-report" --show-pending "$session" >"$work/$module.txt"
"$venv/bin/cr-report" --surviving-only --show-diff "$session" >"$work/$module-survivors.txt"
tail -n 3 "$work/$module.txt"
