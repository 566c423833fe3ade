"""Host snapshots against plain git, measured in the same run.

Run: ``scripts/bench.sh host`` (or ``python -m benchmarks.bench_host [--quick]``).

* The shadow provider: a repository of N committed files; one file modified;
  then a snapshot by the provider, by ``git stash create``, and by
  ``git add -A && git commit`` in a copy.
* ``HostFilesystem`` git snapshots: N files, ten modified and one directory
  added; then a restore (through descriptors, only what differs), against
  ``git checkout -f && git clean -fdxq`` bringing a copy back to its commit.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from workspacefs import HostFilesystem
from workspacefs.host import GitShadowProvider

from ._common import GIT_ENV, Result, scratch_dir


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        env=GIT_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def commit_all(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "snapshot")


def timed_ms(action: object) -> float:
    assert callable(action)
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def git_restore(repo: Path) -> None:
    """git's own way back to the commit: tracked files checked out, everything else removed."""
    git(repo, "checkout", "-qf", "HEAD", "--", ".")
    git(repo, "clean", "-fdxq")


def restore_rounds(files: int) -> tuple[float, float]:
    """Median ms of a HostFilesystem restore and of git's checkout + clean, same changes."""
    scratch = scratch_dir("wsfs-restore-bench-")
    try:
        root, copy = scratch / "root", scratch / "copy"
        for i in range(files):
            (root / f"d{i // 200}").mkdir(parents=True, exist_ok=True)
            (root / f"d{i // 200}" / f"f{i}.py").write_text(f"value = {i}\n")
        shutil.copytree(root, copy)
        git(copy, "init", "-q", "-b", "main")
        commit_all(copy)
        fs = HostFilesystem(root, git_dir=scratch / "g.git", snapshot_strategy="git")
        snapshot = fs.snapshot()
        ours, theirs = [], []
        for round_ in range(5):
            for target in (root, copy):
                for k in range(10):
                    index = (round_ * 997 + k * 131) % files
                    (target / f"d{index // 200}" / f"f{index}.py").write_text(f"x = {round_}\n")
                (target / f"new{round_}").mkdir()
                (target / f"new{round_}" / "file.txt").write_text("new\n")
            ours.append(timed_ms(lambda: fs.restore(snapshot)))
            theirs.append(timed_ms(lambda: git_restore(copy)))
        return statistics.median(ours), statistics.median(theirs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    files = 500 if args.quick else 20_000
    scratch = scratch_dir("wsfs-host-bench-")
    try:
        repo = scratch / "repo"
        for i in range(files):
            (repo / f"d{i // 200}").mkdir(parents=True, exist_ok=True)
            (repo / f"d{i // 200}" / f"f{i}.py").write_text(f"value = {i}\n")
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "initial")
        copy = scratch / "copy"
        shutil.copytree(repo, copy, symlinks=True)
        provider = GitShadowProvider(repo, session_id="bench")
        provider.snapshot()  # the first one fills the stat cache
        ours, stash, commit = [], [], []
        for round_ in range(7):
            index = files // 2 + round_
            for target in (repo, copy):
                (target / f"d{index // 200}" / f"f{index}.py").write_text(f"changed = {round_}\n")
            ours.append(timed_ms(provider.snapshot))
            stash.append(timed_ms(lambda: git(repo, "stash", "create")))
            commit.append(timed_ms(lambda: commit_all(copy)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    restore, checkout = restore_rounds(files=files)
    mine = statistics.median(ours)
    results = [
        Result(
            f"snapshot after 1 change, {files:,} files (baseline: {name})",
            mine,
            statistics.median(base),
            "ms",
            "well under both",
            mine < statistics.median(base),
        )
        for name, base in (("git stash create", stash), ("add -A && commit in a copy", commit))
    ]
    results.append(
        Result(
            f"restore after 10 changes, {files:,} files (baseline: checkout -f && clean)",
            restore,
            checkout,
            "ms",
            "within 3x of git's C",
            restore < 3 * checkout,
        )
    )
    print(f"host benchmarks (python {sys.version.split()[0]}); ratio = times better than git")
    for result in results:
        print(result.line())
    return 0 if all(r.met for r in results) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
