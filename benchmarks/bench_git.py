"""Git persistence against plain git, measured in the same run.

Run: ``scripts/bench.sh git`` (or ``python -m benchmarks.bench_git [--quick]``).

The baseline is what a user would do without workspacefs: the same files in
a tmpfs directory, committed with ``git add -A && git commit`` into an
external git dir.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from workspacefs import HostMount, InMemoryFilesystem
from workspacefs import git as wgit

from ._common import GIT_ENV, Result, scratch_dir


def plain_git(work: Path, git_dir: Path, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        ["git", f"--git-dir={git_dir}", f"--work-tree={work}", *args],
        check=True,
        env=GIT_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def commit_all(work: Path, git_dir: Path) -> float:
    return plain_git(work, git_dir, "add", "-A") + plain_git(
        work, git_dir, "commit", "-qm", "snapshot", "--allow-empty"
    )


def small_tree(root: Path, files: int) -> InMemoryFilesystem:
    """``files`` small files, 100 to a directory, both on disk and in a workspace."""
    fs = InMemoryFilesystem()
    tree = fs.tree
    with tree.lock:
        top = tree.resolve_path("")
        assert top is not None
        for i in range(files):
            if i % 100 == 0:
                directory = tree.mkdir(top, f"d{i // 100}")
                (root / f"d{i // 100}").mkdir()
            data = b"file %d\n" % i
            tree.write(tree.create(directory, f"f{i}.txt"), 0, data)
            (root / f"d{i // 100}" / f"f{i}.txt").write_bytes(data)
    return fs


def bench_one_change(scratch: Path, files: int) -> Result:
    work = scratch / "small"
    work.mkdir()
    fs = small_tree(work, files)
    repo, git_dir = scratch / "small-persist.git", scratch / "small-plain.git"
    wgit.persist(fs, fs.snapshot(), repo)
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True, env=GIT_ENV)
    commit_all(work, git_dir)
    ours, base = [], []
    for round_ in range(10):
        path = f"d{(round_ * 37) % (files // 100)}/f{round_}.txt"
        fs.write(path, f"changed {round_}\n")
        snapshot = fs.snapshot()
        started = time.perf_counter()
        wgit.persist(fs, snapshot, repo)
        ours.append((time.perf_counter() - started) * 1000)
        (work / path).write_text(f"changed {round_}\n")
        base.append(commit_all(work, git_dir) * 1000)
    ours.sort()
    base.sort()
    median = ours[len(ours) // 2]
    return Result(
        f"persist 1 changed file in {files:,} files",
        median,
        base[len(base) // 2],
        "ms",
        "<= 20 ms",
        median <= 20,
    )


def bench_initial(scratch: Path, source: Path) -> list[Result]:
    work = scratch / "corpus"
    shutil.copytree(source, work, symlinks=True)
    count = sum(len(f) for _, _, f in os.walk(work))
    size = sum(p.stat().st_size for p in work.rglob("*") if p.is_file() and not p.is_symlink())
    fs = InMemoryFilesystem()
    fs.hydrate_from_host(HostMount(str(work), mount_path="."), allowed_roots=[scratch])
    snapshot = fs.snapshot()
    git_dir = scratch / "corpus-plain.git"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True, env=GIT_ENV)
    base = commit_all(work, git_dir)
    label = f"{count:,} files, {size / 2**20:,.0f} MB"
    results = []
    for level in (wgit.DEFAULT_COMPRESSION, 0):  # the default, and stored for speed
        repo = scratch / f"corpus-persist-{level}.git"
        started = time.perf_counter()
        wgit.persist(fs, snapshot, repo, compression=level)
        ours = time.perf_counter() - started
        packed = sum(p.stat().st_size for p in (repo / "objects" / "pack").iterdir()) / 2**20
        name = f"initial persist, level {level}, {packed:,.0f} MB pack ({label})"
        results.append(Result(name, ours, base, "s", "<= 0.5x plain git", ours <= 0.5 * base))
    # Lazy load in a fresh process: time to the first read, and memory.
    probe = next(p for p in work.rglob("*.py") if p.is_file())
    relative = probe.relative_to(work).as_posix()
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the parent.
    script = (
        "import time; t = time.perf_counter()\n"
        "from workspacefs import git\n"
        f"fs = git.load({str(repo)!r}, '1', workspace={fs.workspace_id!r})\n"
        f"fs.read_bytes({relative!r})\n"
        "elapsed = time.perf_counter() - t\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(elapsed, peak)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    load_s, load_kb = map(float, out.stdout.split())
    checkout = scratch / "checkout"
    started = time.perf_counter()
    subprocess.run(
        [
            "git",
            f"--git-dir={repo}",
            "worktree",
            "add",
            "-q",
            "--detach",
            str(checkout),
            f"refs/workspacefs/{fs.workspace_id}/snapshots/1",
        ],
        check=True,
        env=GIT_ENV,
        stdout=subprocess.DEVNULL,
    )
    checkout_s = time.perf_counter() - started
    checkout_kb = sum(p.stat().st_size for p in checkout.rglob("*") if p.is_file()) / 1024
    results.append(
        Result(
            "lazy load: time to first read (baseline: full checkout)",
            load_s,
            checkout_s,
            "s",
            "report",
            True,
        )
    )
    results.append(
        Result(
            "lazy load: peak RSS (baseline: checked-out bytes)",
            load_kb / 1024,
            checkout_kb / 1024,
            "MB",
            "report",
            True,
        )
    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    args = parser.parse_args(argv)
    files = 2_000 if args.quick else 100_000
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    source = stdlib / "json" if args.quick else stdlib
    scratch = scratch_dir("wsfs-git-bench-")
    try:
        results = [bench_one_change(scratch, files)]
        results += bench_initial(scratch, source)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"git benchmarks (python {sys.version.split()[0]}, peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB); "
        "ratio = times better than plain git"
    )
    for result in results:
        print(result.line())
    return 0 if all(r.met for r in results) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
