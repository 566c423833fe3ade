"""API grep and glob against GNU grep and ``glob.glob`` on the same files, in the same run.

Run: ``scripts/bench.sh search`` (or ``python -m benchmarks.bench_search [--quick]``).

The corpus is the interpreter's library (the tree the fuse and archive
benchmarks use: tens of thousands of real files, text and binary), copied to
tmpfs. ``InMemoryFilesystem`` holds the same files; ``HostFilesystem`` serves
the tmpfs copy itself. Every figure is the best of a few runs (ours and the
reference alternating), and the match counts are printed next to it: a fast
search that finds the wrong lines is no result.

The verdict compares CPU time (ours: this process; GNU grep: the child's
user + system time): both sides are single-threaded, so on a machine shared
with other work CPU time is the work each did, while wall time adds the
others' load. Wall times are printed too.
"""

from __future__ import annotations

import argparse
import functools
import glob as pyglob
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from workspacefs import HostFilesystem, HostMount, InMemoryFilesystem, Limits

from ._common import Result, scratch_dir

TARGET = 1.5
"""Our time may be at most this many times the reference's."""

GREP_PATTERNS = [r"import\s+os$", r"^class \w+Error\(", "zqxjv_nowhere"]
GLOB_PATTERN = "**/*.py"
LIMITS = Limits(max_grep_matches=1_000_000)  # compare whole result sets, not the first 1,000


def timed(action: Callable[[], object]) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of this process and its children, the result)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, wall = time.process_time(), time.perf_counter()
    result = action()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += after.ru_utime - children.ru_utime + after.ru_stime - children.ru_stime
    return wall, cpu, result


def gnu_grep(pattern: str, root: Path) -> int:
    """Matching lines found by ``grep -RnIE`` (binary files skipped, as the API does)."""
    done = subprocess.run(
        ["grep", "-RnIE", "-e", pattern, "."],
        cwd=root,
        env={**os.environ, "LC_ALL": "C.UTF-8"},  # UTF-8, as the API decodes
        stdout=subprocess.PIPE,  # not /dev/null, where grep stops at each file's first match
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return done.stdout.count(b"\n")


def compare(
    name: str, ours: Callable[[], Sequence[object]], reference: Callable[[], int], runs: int
) -> tuple[Result, str]:
    """The best of ``runs`` alternating timings of each: the CPU verdict, and a wall-time line."""
    best = {"ours": [float("inf")] * 2, "reference": [float("inf")] * 2}
    found: object = ()
    expected: object = 0
    for _ in range(runs):
        wall, cpu, expected = timed(reference)
        best["reference"] = [min(best["reference"][0], wall), min(best["reference"][1], cpu)]
        wall, cpu, found = timed(ours)
        best["ours"] = [min(best["ours"][0], wall), min(best["ours"][1], cpu)]
    assert isinstance(found, Sequence)
    assert isinstance(expected, int)
    (ours_wall, ours_cpu), (reference_wall, reference_cpu) = best["ours"], best["reference"]
    met = ours_cpu <= TARGET * reference_cpu
    result = Result(
        f"{name} [{len(found):,}/{expected:,}]",
        ours_cpu,
        reference_cpu,
        "cpu",
        f"<= {TARGET}x",
        met,
    )
    line = f"     {name:<40} wall {ours_wall:6.2f} s  baseline {reference_wall:6.2f} s"
    return result, line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    scratch = scratch_dir("wsfs-search-bench-")
    runs = 1 if args.quick else 5
    results: list[tuple[Result, str]] = []
    try:
        tree = scratch / "tree"
        shutil.copytree(stdlib / "json" if args.quick else stdlib, tree, symlinks=True)
        files = sum(1 for p in tree.rglob("*") if p.is_file())
        memory = InMemoryFilesystem(limits=LIMITS)
        memory.hydrate_from_host(HostMount(str(tree), mount_path="."), allowed_roots=[scratch])
        host = HostFilesystem(tree, limits=LIMITS)
        print(f"corpus: {stdlib} copied to tmpfs ({files:,} files)")
        for pattern in GREP_PATTERNS:
            reference = functools.partial(gnu_grep, pattern, tree)
            for name, backend in (("memory", memory), ("host  ", host)):
                search = functools.partial(backend.grep, pattern)
                results.append(compare(f"grep {name} {pattern}", search, reference, runs))

        def python_glob() -> int:
            return len(pyglob.glob(GLOB_PATTERN, root_dir=tree, recursive=True))

        results.append(
            compare(
                f"glob memory {GLOB_PATTERN}", lambda: memory.glob(GLOB_PATTERN), python_glob, runs
            )
        )
        results.append(
            compare(
                f"glob host   {GLOB_PATTERN}", lambda: host.glob(GLOB_PATTERN), python_glob, runs
            )
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"search benchmarks (python {sys.version.split()[0]}); baselines: GNU grep -RnIE "
        "and glob.glob on the same files; [matches ours/reference]; ratio = times faster"
    )
    for result, _ in results:
        print(result.line())
    for _, wall in results:
        print(wall)
    return 0 if all(result.met for result, _ in results) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
