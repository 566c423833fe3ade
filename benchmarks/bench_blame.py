"""What attribution costs on the mount's write path: the same writes with it on and off.

Run: ``scripts/bench.sh blame`` (or ``python -m benchmarks.bench_blame [--quick]``).

One mount, one run: rounds alternate between attribution off
(``fs.attribution = False``: the tree records no cause, the mount resolves
no process) and on, and each figure is the median of its rounds. With it on,
every write request costs a dict lookup and a clock read (the writer's cause
is cached per process), and a process's first request reads /proc once.

Workloads, each in its own processes writing through the mount:

* ``write``: one process writes a file in 4 KiB writes (one request each);
* ``create``: one process creates small files (create, write, release);
* ``spawn``: a shell starts one process per file (``sh -c 'echo > f'``), so
  every file is some new process's first request: the worst case for the
  /proc reads.

Target: attribution on within 5% of off (ratio >= 0.95).
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
from pathlib import Path

from workspacefs import InMemoryFilesystem, mount

from ._common import Result

WRITER = """
import os, sys, time
path, total = sys.argv[1], int(sys.argv[2])
block = os.urandom(4096)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
started = time.perf_counter()
for _ in range(total // 4096):
    os.write(fd, block)
os.close(fd)
print(time.perf_counter() - started)
"""

CREATOR = """
import os, sys, time
directory, count = sys.argv[1], int(sys.argv[2])
started = time.perf_counter()
for i in range(count):
    fd = os.open(f"{directory}/f{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"x" * 100)
    os.close(fd)
print(time.perf_counter() - started)
"""


def timed_python(script: str, *args: object) -> float:
    """Seconds the script reports (interpreter start left out)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], check=True, capture_output=True, text=True
    )
    return float(done.stdout)


def write(directory: Path, size: int) -> float:
    return timed_python(WRITER, directory / "f", size)


def create(directory: Path, count: int) -> float:
    return timed_python(CREATOR, directory, count)


def timed_spawn(directory: Path, count: int) -> float:
    loop = f'for i in $(seq {count}); do sh -c "echo x > {directory}/f$i"; done'
    started = time.perf_counter()
    subprocess.run(["sh", "-c", loop], check=True)
    return time.perf_counter() - started


def measure(
    fs: InMemoryFilesystem, root: Path, rounds: int, run: Callable[[Path], float]
) -> tuple[float, float]:
    """Median seconds with attribution (on, off), rounds interleaved."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for index in range(rounds):
        for on in (False, True) if index % 2 == 0 else (True, False):
            fs.attribution = on
            name = f"round{index}-{int(on)}"
            fs.mkdir(name)
            times[on].append(run(root / name))
            fs.delete(name, recursive=True)
    fs.attribution = True
    return statistics.median(times[True]), statistics.median(times[False])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    if args.quick:
        rounds, size, files, spawned = 2, 1 << 20, 50, 10
    else:
        rounds, size, files, spawned = 9, 32 << 20, 2000, 300
    fs = InMemoryFilesystem()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mnt"
        root.mkdir()
        with mount(fs, root):
            workloads: list[tuple[str, Callable[[Path], float]]] = [
                (f"write {size >> 20} MiB in 4 KiB writes", lambda d: write(d, size)),
                (f"create {files:,} files, one process", lambda d: create(d, files)),
                (f"create {spawned:,} files, a process each", lambda d: timed_spawn(d, spawned)),
            ]
            for name, run in workloads:
                on, off = measure(fs, root, rounds, run)
                met = off / on >= 0.95
                line = f"{name}: attribution on vs off"
                results.append(Result(line, on * 1000, off * 1000, "ms", ">= 0.95x", met))
    load = os.getloadavg()[0]
    print(f"blame benchmark (load {load:.2f}); ratio = off/on, medians of {rounds} rounds each")
    for result in results:
        print(result.line())
    return 0 if args.quick or all(result.met for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
