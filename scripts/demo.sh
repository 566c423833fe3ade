#!/usr/bin/env bash
# The main job: installs what it needs, then runs the workspace demo end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
