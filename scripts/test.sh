#!/usr/bin/env bash
# The whole test suite: installs what it needs, then lint, format, types, layering, tests.
# Extra arguments go to pytest (e.g. scripts/test.sh -k snapshot).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff check";         ruff check .
echo "== ruff format --check"; ruff format --check .
echo "== mypy --strict";      mypy
echo "== lint-imports";       lint-imports
echo "== pytest";             pytest "$@"
