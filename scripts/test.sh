#!/usr/bin/env bash
# The whole test suite: installs what it needs, then lint, format, types, layering, tests.
# Extra arguments go to pytest (e.g. scripts/test.sh -k snapshot).
#
# scripts/test.sh --fast: the loop while editing. No set-up (run the full form once
# first), the same checks, and only the tests that need no FUSE mount, container,
# browser or long soak (the fuse, container, browser and slow markers).
set -euo pipefail
cd "$(dirname "$0")/.."

fast=false
if [[ "${1:-}" == "--fast" ]]; then
    fast=true
    shift
fi
$fast || scripts/setup.sh

export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff check";         ruff check .
echo "== ruff format --check"; ruff format --check .
echo "== mypy --strict";      mypy
echo "== lint-imports";       lint-imports
if $fast; then
    echo "== pytest (no fuse, container, browser or slow)"
    pytest -m "not fuse and not container and not browser and not slow" "$@"
else
    echo "== pytest"; pytest "$@"
fi
