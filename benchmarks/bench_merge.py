"""Merging one change of a fork into a large workspace, against ``git merge-tree``.

Run: ``python -m benchmarks.bench_merge [--quick]``.

Each side of the merge changed one file of ``files`` (1,000 to a directory).
Ours: ``workspacefs.git.merge`` of a fork into a sibling, applied (snapshot
before, one transaction), best of a few runs on fresh forks. Baseline: ``git
merge-tree --write-tree`` on the same three trees as commits in a real
repository (git 2.38+), best of a few runs, process start included as a user
would pay it. Target: under 10 ms at 100,000 files.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

import pygit2

from workspacefs.git import merge

from ._common import GIT_ENV, PER_DIR, Result, build_workspace


def time_ours(files: int, repeat: int) -> float:
    origin = build_workspace(files)
    base = origin.snapshot()
    best = float("inf")
    for i in range(repeat):
        ours, theirs = origin.fork(base), origin.fork(base)
        ours.write_bytes(f"d0/f{i}.txt", b"ours\n")
        theirs.write_bytes(f"d0/f{i + 1}.txt", b"theirs\n")
        started = time.perf_counter()
        result = merge(ours, theirs)
        best = min(best, time.perf_counter() - started)
        assert result.applied
        assert result.changed == (f"d0/f{i + 1}.txt",)
    return best * 1000


def time_git(files: int, repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        repo = pygit2.init_repository(tmp, bare=True)
        blob = repo.create_blob(b"line\n" * 4)
        signature = pygit2.Signature("bench", "bench@example.invalid", 0, 0)

        def commit(changes: dict[str, bytes], ref: str) -> None:
            top = repo.TreeBuilder()
            for d in range(max(1, files // PER_DIR)):
                sub = repo.TreeBuilder()
                for f in range(min(files, PER_DIR)):
                    path = f"d{d}/f{f}.txt"
                    oid = repo.create_blob(changes[path]) if path in changes else blob
                    sub.insert(f"f{f}.txt", oid, pygit2.enums.FileMode.BLOB)
                top.insert(f"d{d}", sub.write(), pygit2.enums.FileMode.TREE)
            parents = (
                [] if ref == "refs/heads/base" else [repo.references["refs/heads/base"].target]
            )
            repo.create_commit(ref, signature, signature, ref, top.write(), parents)

        commit({}, "refs/heads/base")
        commit({"d0/f0.txt": b"ours\n"}, "refs/heads/ours")
        commit({"d0/f1.txt": b"theirs\n"}, "refs/heads/theirs")
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            subprocess.run(
                ["git", "--git-dir", tmp, "merge-tree", "--write-tree", "ours", "theirs"],
                check=True,
                capture_output=True,
                env=GIT_ENV,
            )
            best = min(best, time.perf_counter() - started)
    return best * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    files, repeat = (2_000, 2) if args.quick else (100_000, 5)
    ours, git = time_ours(files, repeat), time_git(files, repeat)
    result = Result(
        f"merge 1 change into {files:,} files vs git merge-tree",
        ours,
        git,
        "ms",
        "< 10 ms",
        ours < 10,
    )
    print("merge benchmark; ratio = times faster than git merge-tree on the same trees")
    print(result.line())
    return 0 if result.met or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
