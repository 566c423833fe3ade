#!/usr/bin/env bash
# Runs the benchmarks; each prints figures next to a baseline measured in the same run.
# Usage: scripts/bench.sh [all|tree|fuse|git|archive|host|soak] [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
which="${1:-all}"
[[ $# -gt 0 ]] && shift
case "$which" in
    tree) .venv/bin/python -m benchmarks.bench_tree "$@" ;;
    fuse) .venv/bin/python -m benchmarks.bench_fuse "$@" ;;
    git) .venv/bin/python -m benchmarks.bench_git "$@" ;;
    archive) .venv/bin/python -m benchmarks.bench_archive "$@" ;;
    host) .venv/bin/python -m benchmarks.bench_host "$@" ;;
    soak) .venv/bin/python -m benchmarks.soak "$@" ;;
    all)
        status=0
        .venv/bin/python -m benchmarks.bench_tree "$@" || status=1
        .venv/bin/python -m benchmarks.bench_fuse "$@" || status=1
        .venv/bin/python -m benchmarks.bench_git "$@" || status=1
        .venv/bin/python -m benchmarks.bench_archive "$@" || status=1
        .venv/bin/python -m benchmarks.bench_host "$@" || status=1
        exit $status
        ;;
    *) echo "usage: $0 [all|tree|fuse|git|archive|host|soak] [--quick]" >&2; exit 2 ;;
esac
