"""The debug UI's server: time to first byte on a 50,000-file workspace.

Run: ``scripts/bench.sh debug`` (or ``python -m benchmarks.bench_debug [--quick]``).

Each target (a live workspace, a git repository of persisted snapshots, a
directory of archives) holds two snapshots of the same 50,000 files, one file
apart, and is served by the real server (hypercorn) over TCP. Measured from
sending the request to the first byte of the body:

* the tree of the snapshot as the page loads it (the top directory), and all
  of it (seed 003's ``/api/filesystem/tree``, every file's path and size);
* the diff of the two snapshots (one change in 50,000 files).

Warm figures are the median of several requests; "first" is the first
request after the target was opened (an archive builds its index then,
unless ``warm()`` ran: ``serve`` runs it before it listens). The baseline is
git doing the same job from the command line on the same repository, timed
to the first byte of its output too: ``git ls-tree -r -l`` for a tree (the
top directory is compared with it as well: it is what a user would run),
``git diff-tree -r --name-status`` for a diff.
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from workspacefs import FilesystemSnapshot, InMemoryFilesystem
from workspacefs import git as wgit
from workspacefs.archive import ArchiveSnapshots
from workspacefs.debug import DebugTarget, LiveTarget, open_target, start

from ._common import GIT_ENV, Result

GOAL_MS = 200.0
ROUNDS = 7


def build(files: int) -> tuple[InMemoryFilesystem, FilesystemSnapshot, FilesystemSnapshot]:
    """``files`` small files, 100 to a directory; a snapshot, one edit, another snapshot."""
    fs = InMemoryFilesystem(workspace_id="bench")
    with fs.transaction() as tree:
        top = tree.resolve_path("")
        assert top is not None
        directory = top
        for i in range(files):
            if i % 100 == 0:
                directory = tree.mkdir(top, f"d{i // 100:04d}", 0o755)
            tree.write(tree.create(directory, f"f{i}.txt", 0o644), 0, b"file %d\n" % i)
    before = fs.snapshot(tag="before")
    fs.write("d0007/f742.txt", "changed\n")
    after = fs.snapshot(tag="after")
    return fs, before, after


def first_byte_ms(url: str, token: str) -> tuple[float, float]:
    """(ms to the first body byte, ms to the last) of one GET over a new connection,
    with the server's secret as a bearer token."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    try:
        started = time.perf_counter()
        headers = {"Authorization": f"Bearer {token}"}
        connection.request("GET", f"{parts.path}?{parts.query}", headers=headers)
        response = connection.getresponse()
        response.read(1)
        first = time.perf_counter()
        response.read()
        done = time.perf_counter()
        if response.status != 200:
            raise RuntimeError(f"{url}: HTTP {response.status}")
    finally:
        connection.close()
    return (first - started) * 1000, (done - started) * 1000


def measure(url: str, token: str) -> tuple[float, float, float]:
    """(first request's TTFB, median warm TTFB, median warm total), in ms."""
    cold, _ = first_byte_ms(url, token)
    warm = [first_byte_ms(url, token) for _ in range(ROUNDS)]
    return (
        cold,
        statistics.median(ttfb for ttfb, _ in warm),
        statistics.median(total for _, total in warm),
    )


def git_first_byte_ms(repo: Path, *args: str) -> float:
    """Median time from starting a git command to the first byte of its output, in ms."""
    times = []
    for _ in range(5):
        started = time.perf_counter()
        with subprocess.Popen(
            ["git", f"--git-dir={repo}", *args], env=GIT_ENV, stdout=subprocess.PIPE
        ) as process:
            assert process.stdout is not None
            process.stdout.read(1)
            times.append((time.perf_counter() - started) * 1000)
            process.stdout.read()
    return statistics.median(times)


def bench_target(
    name: str,
    make: Callable[[], DebugTarget],
    ids: tuple[str, str],
    baseline_tree: float,
    baseline_diff: float,
    files: int,
) -> list[Result]:
    target = make()
    before, after = ids
    results = []
    with start(target) as server:
        base, token = server.base_url, server.token
        top = measure(f"{base}api/snapshots/{after}/tree?path=", token)
        whole = measure(f"{base}api/filesystem/tree?snapshot={after}", token)
        diff = measure(f"{base}api/diff?from={before}&to={after}", token)
    target.close()
    for label, (cold, warm, total), baseline in (
        ("top directory", top, baseline_tree),
        (f"whole tree, {files:,} files", whole, baseline_tree),
        (f"diff, 1 change in {files:,}", diff, baseline_diff),
    ):
        results.append(
            Result(
                f"{name}: {label} (first {cold:,.0f} ms; whole body {total:,.0f} ms)",
                warm,
                baseline,
                "ms",
                f"< {GOAL_MS:.0f} ms, first and warm",
                max(cold, warm) < GOAL_MS,
            )
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    files = 2_000 if args.quick else 50_000
    scratch = Path(tempfile.mkdtemp(prefix="wsfs-debug-bench-"))
    try:
        fs, before, after = build(files)
        repo = scratch / "repo.git"
        commits = [wgit.persist(fs, snapshot, repo).commit for snapshot in (before, after)]
        archives = scratch / "archives"
        for name, snapshot in (("before", before), ("after", after)):
            ArchiveSnapshots(fs.at(snapshot), archives).snapshot(name)
        ls_tree = git_first_byte_ms(repo, "ls-tree", "-r", "-l", commits[1])
        diff_tree = git_first_byte_ms(repo, "diff-tree", "-r", "--name-status", *commits)
        uuids = (str(before.snapshot_id), str(after.snapshot_id))

        def warmed_archives() -> DebugTarget:
            target = open_target(archives)
            target.warm()  # as serve() does before it listens
            return target

        results = [
            *bench_target("live", lambda: LiveTarget(fs), uuids, ls_tree, diff_tree, files),
            *bench_target("git", lambda: open_target(repo), uuids, ls_tree, diff_tree, files),
            *bench_target(
                "archive", warmed_archives, ("before", "after"), ls_tree, diff_tree, files
            ),
        ]
        started = time.perf_counter()
        open_target(archives).warm()
        index_s = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"debug UI benchmarks (python {sys.version.split()[0]}): median time to first byte "
        f"over TCP; baseline: first byte of git ls-tree -r -l / git diff-tree -r"
    )
    for result in results:
        print(result.line())
    print(
        f"     (indexing the two newest {files:,}-file archives as serve() starts: {index_s:.2f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
