"""Forks on the mount and try-runs, each against a baseline measured in the same run.

Run: ``scripts/bench.sh forks`` (or ``python -m benchmarks.bench_forks [--quick]``).

- Fork-add: ``fs.fork()`` + ``Mount.add_fork()`` + the first ``stat`` of the
  fork's directory through the mount, on a 50,000-file workspace, against
  the same on a one-file workspace: both O(1), so the ratio should be ~1.
  Removing the fork (``remove_fork``, with the kernel's entries expired) is
  printed too.
- Try-run: ``sandbox.try_exec(cmd)`` (fork, a container of its own on a
  branch of the root filesystem, the command, a diff) against
  ``sandbox.exec(cmd)`` in the same sandbox, medians; then what accept
  (a fast-forward) and reject cost. The difference is mostly the try's
  container start, so it is also printed next to a one-shot
  ``podman run --rm true``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from workspacefs import InMemoryFilesystem, mount
from workspacefs.sandbox import PodmanSandbox, containers_conf, preflight

from ._common import Result, build_workspace

COMMAND = "echo made > made.txt && sed -i 's/1/2/' src/app.py"


def fork_add(files: int, rounds: int) -> tuple[float, float]:
    """(best fork-add ms, best remove ms) on a mounted workspace of ``files`` files."""
    fs = build_workspace(files)
    adds, removes = [], []
    with tempfile.TemporaryDirectory() as tmp, mount(fs, tmp) as handle:
        os.listdir(tmp)
        for i in range(rounds):
            started = time.perf_counter()
            path = handle.add_fork(f"f{i}", fs.fork())
            os.stat(os.path.join(path, "d0"))
            adds.append(time.perf_counter() - started)
            started = time.perf_counter()
            handle.remove_fork(f"f{i}")
            removes.append(time.perf_counter() - started)
    return min(adds) * 1e3, min(removes) * 1e3


def try_runs(rounds: int) -> dict[str, float]:
    """Median ms of exec, try_exec, accept and reject of ``COMMAND``, and a one-shot run."""
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.write("src/app.py", "x = 1\n")
    times: dict[str, list[float]] = {"exec": [], "try": [], "accept": [], "reject": []}
    with PodmanSandbox(fs) as box:
        box.exec("true")
        box.try_exec("true").reject()  # warm both paths
        for i in range(rounds):
            times["exec"].append(_timed(lambda: box.exec(COMMAND)))
            started = time.perf_counter()
            run = box.try_exec(COMMAND)
            times["try"].append(time.perf_counter() - started)
            started = time.perf_counter()
            if i % 2:
                run.reject()
                times["reject"].append(time.perf_counter() - started)
            else:
                assert run.accept().applied
                times["accept"].append(time.perf_counter() - started)
    run_true = ["podman", "run", "--rm", "--network=none", "--rootfs", "/:O", "true"]
    env = {**os.environ, "CONTAINERS_CONF": containers_conf()}
    one_shot = [
        _timed(lambda: subprocess.run(run_true, check=True, capture_output=True, env=env))
        for _ in range(max(2, rounds // 2))
    ]
    medians = {name: statistics.median(values) * 1e3 for name, values in times.items() if values}
    medians["one-shot"] = statistics.median(one_shot) * 1e3
    return medians


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    files, rounds, tries = (2_000, 3, 2) if args.quick else (50_000, 20, 10)
    results = []
    big_add, big_remove = fork_add(files, rounds)
    small_add, small_remove = fork_add(1, rounds)
    results.append(
        Result(
            f"fork-add, {files:,} files (baseline: a 1-file workspace)",
            big_add,
            small_add,
            "ms",
            "within 3x of the 1-file workspace (O(1))",
            big_add < 3 * small_add + 0.5,
            note=f"remove_fork: {big_remove:.2f} ms ({small_remove:.2f} ms for 1 file)",
        )
    )
    problems = preflight()
    if problems:
        print("try-run benchmarks skipped: " + "; ".join(problems))
    else:
        m = try_runs(tries)
        overhead = m["try"] - m["exec"]
        results.append(
            Result(
                "try_exec (baseline: exec of the same command)",
                m["try"],
                m["exec"],
                "ms",
                "overhead under 1.5x a one-shot podman run",
                overhead < 1.5 * m["one-shot"],
                note=f"overhead {overhead:.0f} ms; podman run --rm true {m['one-shot']:.0f} ms; "
                f"accept (fast-forward) {m.get('accept', 0):.2f} ms, "
                f"reject {m.get('reject', 0):.2f} ms",
            )
        )
    for result in results:
        print(result.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
