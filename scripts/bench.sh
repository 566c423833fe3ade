#!/usr/bin/env bash
# Runs the benchmarks; each prints figures next to a baseline measured in the same run.
# Usage: scripts/bench.sh [all|NAME...] [--quick]   (NAME: benchmarks/bench_NAME.py)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
names=()
while [[ $# -gt 0 && $1 != -* ]]; do names+=("$1"); shift; done
available=$(ls benchmarks/bench_*.py | sed 's|benchmarks/bench_||; s|\.py$||' | sort)
if [[ ${#names[@]} -eq 0 || ${names[0]} == all ]]; then
    mapfile -t names <<<"$available"
fi
status=0
for name in "${names[@]}"; do
    if ! grep -qx "$name" <<<"$available"; then
        echo "usage: $0 [all|$(tr '\n' '|' <<<"$available" | sed 's/|$//')] [--quick]" >&2
        exit 2
    fi
    .venv/bin/python -m "benchmarks.bench_$name" "$@" || status=1
done
exit $status
