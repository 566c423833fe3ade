#!/usr/bin/env bash
# Runs the benchmarks and prints ratios against baselines measured in the same run.
# Usage: scripts/bench.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m benchmarks.bench_tree "$@"
