"""Benchmarks of the in-memory tree, each against a baseline measured in the same run.

Run: ``scripts/bench.sh tree`` (or ``python benchmarks/bench_tree.py [--quick]``).

Baselines are the naive designs the tree replaces: a ``dict`` of path -> bytes
copied on snapshot, a whole-file copy on write, a full dict comparison for
diff, and plain ``dict`` stores for throughput.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable

from workspacefs import InMemoryFilesystem
from workspacefs.tree import ROOT_INO, Tree

from ._common import Result

MIB = 1 << 20


def median_us(action: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``action`` in microseconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter_ns()
        action()
        samples.append((time.perf_counter_ns() - started) / 1000)
    return statistics.median(samples)


def build_tree(files: int, size: int = 100, tree: Tree | None = None) -> Tree:
    """A tree of ``files`` small files, 100 to a directory."""
    tree = tree or Tree()
    data = b"x" * size
    directory = ROOT_INO
    with tree.lock:  # as every tree user does: its release drops the change journal
        for i in range(files):
            if i % 100 == 0:
                directory = tree.mkdir(ROOT_INO, f"d{i // 100}")
            tree.write(tree.create(directory, f"f{i}.txt"), 0, data)
    return tree


def build_dict(files: int, size: int = 100) -> dict[str, bytes]:
    return {f"d{i // 100}/f{i}.txt": b"x" * size for i in range(files)}


def bench_snapshot(sizes: list[int], repeat: int) -> list[Result]:
    results = []
    figures = {}
    for files in sizes:
        tree = build_tree(files)
        naive = build_dict(files)
        ino = tree.resolve_path("d0/f0.txt")
        assert ino is not None

        def snapshot_after_write(tree: Tree = tree, ino: int = ino) -> None:
            tree.write(ino, 0, b"y")
            tree.snapshot()

        ours = median_us(snapshot_after_write, repeat)
        baseline = median_us(naive.copy, max(3, repeat // 10))
        figures[files] = ours
        results.append(
            Result(
                f"snapshot (after 1 write), {files:,} files",
                ours,
                baseline,
                "us",
                "<= 100 us at 100k",
                ours <= 100,
            )
        )
    small, large = figures[min(sizes)], figures[max(sizes)]
    results.append(
        Result(
            f"snapshot at {max(sizes):,} files (baseline: at {min(sizes):,})",
            large,
            small,
            "us",
            "within 2x of the baseline",
            large <= 2 * small,
        )
    )
    return results


def bench_first_write_big_file(size_mb: int, repeat: int) -> Result:
    tree = Tree()
    ino = tree.create(ROOT_INO, "big.bin")
    tree.write(ino, 0, b"a" * (size_mb * MIB))
    offsets = iter(range(0, size_mb * MIB, 4099))

    def first_write() -> None:
        tree.snapshot()
        tree.write(ino, next(offsets), b"z")

    ours = median_us(first_write, repeat)
    content = b"a" * (size_mb * MIB)
    baseline = median_us(lambda: bytearray(content), max(3, repeat // 10))
    return Result(
        f"first 1-byte write into {size_mb} MB file after snapshot",
        ours,
        baseline,
        "us",
        "<= 1000 us",
        ours <= 1000,
    )


def bench_diff(files: int, repeat: int) -> Result:
    fs = InMemoryFilesystem()
    build_tree(files, tree=fs.tree)
    counter = iter(range(10**9))
    pairs = []
    for _ in range(repeat):
        a = fs.snapshot()
        fs.write(f"d5/f{500 + next(counter) % 100}.txt", f"change {next(counter)}")
        b = fs.snapshot()
        pairs.append((a, b))
    pairs_iter = iter(pairs)

    def diff() -> None:
        a, b = next(pairs_iter)
        result = fs.diff(a, b)
        assert len(result.modified) == 1

    ours = median_us(diff, repeat)
    naive_a = build_dict(files)
    naive_b = dict(naive_a)
    naive_b["d5/f500.txt"] = b"changed"

    def naive_diff() -> None:
        [k for k in naive_b if naive_a.get(k) != naive_b[k]]

    baseline = median_us(naive_diff, max(3, repeat // 10))
    return Result(
        f"diff of consecutive snapshots, 1 change in {files:,}",
        ours,
        baseline,
        "us",
        "<= 1000 us",
        ours <= 1000,
    )


def overhead_per_file(build: Callable[[], object], files: int, content_size: int) -> float:
    """Bytes ``build`` allocates per file beyond the content itself."""
    gc.collect()
    tracemalloc.start()
    try:
        built = build()  # kept alive while measured
        allocated = tracemalloc.get_traced_memory()[0]
        del built
        return allocated / files - content_size
    finally:
        tracemalloc.stop()


def bench_memory(files: int) -> list[Result]:
    content_size = 100
    ours = overhead_per_file(lambda: build_tree(files, content_size), files, content_size)
    baseline = overhead_per_file(lambda: build_dict(files, content_size), files, content_size)
    results = [
        Result(
            f"memory per small file beyond content, {files:,} files",
            ours,
            baseline,
            "B",
            "<= 1024 B (baseline: dict path -> bytes)",
            ours <= 1024,
        )
    ]
    # Ten snapshots, each after changing 1% of the files.
    count, size = files // 10, 4096
    fs = InMemoryFilesystem()
    for i in range(count):
        fs.write_bytes(f"d{i % 100}/f{i}.bin", bytes([i % 256]) * size)
    content = count * size
    gc.collect()
    tracemalloc.start()
    for round_ in range(10):
        fs.snapshot()
        for j in range(round_, count, 100):
            fs.write_bytes(f"d{j % 100}/f{j}.bin", b"n" * size)
    growth = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    results.append(
        Result(
            f"10 snapshots x 1% changed, growth % of content ({count:,} files)",
            100 * growth / content,
            100 * 10.0,
            "%",
            "about 10% of content (baseline: 10 full copies = 1000%)",
            growth / content <= 0.2,
        )
    )
    return results


def bench_throughput(files: int) -> list[Result]:
    payload = b"p" * MIB
    fs = InMemoryFilesystem()
    naive: dict[str, bytes] = {}

    def mb_per_s(action: Callable[[int], object]) -> float:
        started = time.perf_counter()
        for i in range(files):
            action(i)
        return files / (time.perf_counter() - started)

    write_ours = mb_per_s(lambda i: fs.write_bytes(f"f{i}.bin", payload))
    # The baseline copies, as a store that owns its data must.
    write_base = mb_per_s(lambda i: naive.__setitem__(f"f{i}.bin", bytes(memoryview(payload))))
    read_ours = mb_per_s(lambda i: fs.read_bytes(f"f{i}.bin"))
    read_base = mb_per_s(lambda i: bytes(memoryview(naive[f"f{i}.bin"])))
    return [
        Result(
            "API write_bytes of 1 MB files (baseline: dict)",
            write_ours,
            write_base,
            "MB/s",
            "report",
            True,
            higher_is_better=True,
        ),
        Result(
            "API read_bytes of 1 MB files (baseline: dict)",
            read_ours,
            read_base,
            "MB/s",
            "report",
            True,
            higher_is_better=True,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    if args.quick:
        sizes, repeat, big, files, mem = [100, 1_000], 5, 4, 1_000, 1_000
    else:
        sizes, repeat, big, files, mem = [1_000, 10_000, 100_000], 200, 100, 100_000, 100_000
    results: list[Result] = []
    results += bench_snapshot(sizes, repeat)
    results.append(bench_first_write_big_file(big, repeat))
    results.append(bench_diff(files, repeat))
    results += bench_memory(mem)
    results += bench_throughput(20 if args.quick else 200)
    print(f"tree benchmarks (python {sys.version.split()[0]}); ratio = times better than baseline")
    for result in results:
        print(result.line())
    return 0 if all(r.met for r in results) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
