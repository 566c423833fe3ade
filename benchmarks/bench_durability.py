"""Durable workspaces: what keeping a workspace in its store costs, measured in the same run.

Run: ``scripts/bench.sh durability`` (or ``python -m benchmarks.bench_durability [--quick]``).

1. Shell workloads (tar -x, git add + commit, grep -r, npm ci from a warm cache,
   rm -rf) on two daemons' mounts side by side: ``--durability interval`` (its store
   on the real disk) against ``--durability none``. Target: interval/none <= 1.15.
2. 200 sqlite single-insert transactions (``synchronous=FULL``: each commit fsyncs)
   and the latency of a 4 KiB write + fsync, on the interval mount against the
   same on the machine's disk (the filesystem /var/tmp is on). Targets: sqlite no
   slower than the disk; fsync p50/p99 at most 2x the disk's.
3. Resume: a workspace of 50,000 files whose journal holds 100 MB, its daemon
   killed with SIGKILL, then ``workspacefs mount DIR --name NAME`` until a stat in
   the mount is answered, against mounting a new named workspace. Target: < 2 s.
   Then the same workspace after a clean stop (which folds the journal into a
   checkpoint): opened in process, and resumed with ``mount --name`` until a stat
   is answered. Target: < 0.5 s.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import shlex
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

import workspacefs
from workspacefs.daemon import MountRecord, connect, start
from workspacefs.fuse import RequestStats, is_stale, recover, unavailable_reason
from workspacefs.store import Durability, open_workspace, segments

from ._common import PER_DIR, Result, scratch_dir
from .bench_fuse import MIB, WORKLOADS, make_corpus, requests_note, run_workload, timed

T = TypeVar("T")

RATIO_TARGET = 1.15
"""The most a workload may take under ``interval``, in times its time under ``none``."""

SHELL_WORKLOADS = [
    (name.removesuffix(" (first)"), command)
    for name, command, _ in WORKLOADS
    if name in ("tar -x", "git init + add -A + commit", "grep -r (first)")
]
RM_RF = next(command for name, command, _ in WORKLOADS if name == "rm -rf")

NPM_PACKAGE = {
    "name": "bench-durability",
    "version": "1.0.0",
    "private": True,
    "dependencies": {"chalk": "4.1.2", "debug": "4.3.4", "semver": "7.6.0", "ms": "2.1.3"},
}
NPM_FLAGS = "--no-audit --no-fund --no-update-notifier --loglevel=error"


# -- where things are ------------------------------------------------------------------


def disk_dir(prefix: str) -> Path:
    """A new directory on the machine's real disk (/var/tmp, else the temporary
    directory); the caller removes it."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path(tempfile.gettempdir())
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def filesystem_of(path: Path) -> str:
    """What /proc/mounts says ``path`` is on: ``TYPE DEVICE on MOUNTPOINT``."""
    real, found = os.path.realpath(path), ("?", "?", "/")
    with open("/proc/mounts") as table:
        for line in table:
            device, point, kind = line.split()[:3]
            inside = real == point or real.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(found[2]):
                found = (kind, device, point)
    return f"{found[0]} {found[1]} on {found[2]}"


# -- the daemon ------------------------------------------------------------------------


def requests_of(record: MountRecord) -> RequestStats:
    """The requests the daemon's mount has served (its ``status``)."""
    with connect(record.socket) as fs:
        served = fs.status()["requests"]
    return RequestStats(MappingProxyType(served["counts"]), MappingProxyType(served["seconds"]))


def journal_bytes(store: str) -> int:
    """The size of the store's journal."""
    return sum(os.path.getsize(path) for _, path in segments(os.path.join(store, "journal")))


def stop(record: MountRecord) -> None:
    with connect(record.socket) as fs:
        fs.unmount()


def sync_mount(mnt: Path) -> float:
    """fsync the mount's root: a durability point, answered once the journal holds
    everything (immediate under ``none``). Seconds it took."""
    fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return timed(functools.partial(os.fsync, fd))
    finally:
        os.close(fd)


def cli_env(data: Path) -> dict[str, str]:
    """The environment of ``workspacefs`` commands: this workspacefs, named stores
    under ``data`` (on the disk)."""
    package_root = str(Path(workspacefs.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "XDG_DATA_HOME": str(data)}


def cli_mount(mnt: Path, name: str, env: dict[str, str]) -> MountRecord:
    """``workspacefs mount MNT --name NAME``, as a user types it."""
    done = subprocess.run(
        [sys.executable, "-m", "workspacefs.cli", "mount", str(mnt), "--name", name, "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"workspacefs mount failed: {done.stderr[-2000:]}")
    return MountRecord.from_dict(json.loads(done.stdout))


def kill(record: MountRecord) -> None:
    """SIGKILL the daemon, then detach its dead mount (as ``doctor --fix`` does)."""
    os.kill(record.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not is_stale(record.mountpoint) and time.monotonic() < deadline:
        time.sleep(0.01)
    recover(record.mountpoint)


# -- 1. workloads: interval vs none ----------------------------------------------------


def npm_project(work: Path) -> tuple[Path, Path] | str:
    """A package.json with its lock and an npm cache that holds every package (the
    first ``npm ci``); (project, cache), or why there is none."""
    if shutil.which("npm") is None:
        return "npm is not installed"
    project, cache = work / "npm-project", work / "npm-cache"
    project.mkdir()
    (project / "package.json").write_text(json.dumps(NPM_PACKAGE, indent=2))
    flags = f"{NPM_FLAGS} --cache {shlex.quote(str(cache))}"
    for command in (f"npm install --package-lock-only {flags}", f"npm ci {flags}"):
        done = subprocess.run(
            ["bash", "-c", command], cwd=project, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            return f"{command!r} failed (the npm registry unreachable?): {done.stderr[-300:]}"
    return project, cache


def npm_ci(project: Path, cache: Path, root: Path, tarball: Path) -> None:
    """``project``'s package.json and lock copied to a fresh directory under ``root``
    (two small files), then ``npm ci --offline`` there: every package from the cache."""
    fresh = root / "node-app"
    fresh.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(project / name, fresh / name)
    run_workload(f"npm ci --offline {NPM_FLAGS} --cache {shlex.quote(str(cache))}", fresh, tarball)


def workload_benchmarks(
    durable: MountRecord,
    volatile: MountRecord,
    tarball: Path,
    npm: tuple[Path, Path] | str,
    rounds: int,
) -> list[Result]:
    """Each workload on one mount, then (once the interval mount's journal caught up)
    on the other; the mount that goes first alternates from round to round."""
    steps = [(name, functools.partial(run_workload, command)) for name, command in SHELL_WORKLOADS]
    if not isinstance(npm, str):
        steps.append(("npm ci (warm cache)", functools.partial(npm_ci, *npm)))
    else:
        print(f"skip  workload: npm ci (warm cache): {npm}")
    steps.append(("rm -rf", functools.partial(run_workload, RM_RF)))
    mounts = [durable, volatile]
    times: dict[tuple[str, int], list[float]] = {}
    catch_ups: dict[str, list[float]] = {}
    requests: dict[tuple[str, int], RequestStats] = {}
    for round_ in range(rounds):
        for name, step in steps:
            order = (0, 1) if round_ % 2 == 0 else (1, 0)
            for index in order:
                record, root = mounts[index], Path(mounts[index].mountpoint)
                before = requests_of(record)
                elapsed = timed(functools.partial(step, root, tarball))
                times.setdefault((name, index), []).append(elapsed)
                requests[name, index] = requests_of(record) - before
                # Not timed: the journal catching up, which would otherwise go on
                # while the other mount is measured.
                catch_up = sync_mount(root)
                if index == 0:
                    catch_ups.setdefault(name, []).append(catch_up)
    results = []
    for name, _ in steps:
        ours, base = (statistics.median(times[name, index]) for index in (0, 1))
        results.append(
            Result(
                f"workload: {name} (interval vs none)",
                ours,
                base,
                "s",
                f"interval/none <= {RATIO_TARGET}",
                ours <= RATIO_TARGET * base,
                note=(
                    f"interval/none {ours / base:.2f} (median of {rounds}); on disk "
                    f"{statistics.median(catch_ups[name]):.2f} s later (fsync of the mount); "
                    f"interval: {requests_note(requests[name, 0])}; "
                    f"none: {requests_note(requests[name, 1])}"
                ),
            )
        )
    return results


# -- 2. sqlite and fsync: the mount vs the disk ----------------------------------------
#
# The three places (the interval mount, the disk, the none mount) take turns sample by
# sample: the disk's own state (writeback of what came before) varies tenfold within a
# run and would otherwise favour whichever ran last.


def sqlite_inserts(directories: list[Path], count: int, mode: str) -> list[float]:
    """Seconds each directory's database took for ``count`` single-insert transactions
    (a new database each; journal ``mode``, ``synchronous=FULL``), taking turns."""
    databases = []
    for directory in directories:
        db = sqlite3.connect(directory / "bench.db", isolation_level=None)  # a transaction each
        db.execute(f"PRAGMA journal_mode={mode}")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        databases.append(db)
    totals = [0.0] * len(databases)
    try:
        for i in range(count):
            for index, db in enumerate(databases):
                totals[index] += timed(
                    functools.partial(
                        db.execute, "INSERT INTO notes (body) VALUES (?)", (f"note {i} " * 10,)
                    )
                )
    finally:
        for db, directory in zip(databases, directories, strict=True):
            db.close()
            for leftover in directory.glob("bench.db*"):
                leftover.unlink()
    return totals


def fsync_latencies(directories: list[Path], count: int) -> list[tuple[float, float]]:
    """p50 and p99, in ms, of appending 4 KiB to a file and fsyncing it, in each
    directory, taking turns."""
    block = os.urandom(4096)
    fds = [
        os.open(directory / "fsync.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for directory in directories
    ]
    samples: list[list[float]] = [[] for _ in fds]
    try:
        for _ in range(count):
            for fd, taken in zip(fds, samples, strict=True):
                started = time.perf_counter()
                os.write(fd, block)
                os.fsync(fd)
                taken.append((time.perf_counter() - started) * 1e3)
    finally:
        for fd, directory in zip(fds, directories, strict=True):
            os.close(fd)
            (directory / "fsync.bin").unlink()
    return [(statistics.median(s), sorted(s)[int(len(s) * 0.99) - 1]) for s in samples]


def served(record: MountRecord, action: Callable[[], T]) -> tuple[T, str]:
    """What ``action`` returned, and what the daemon did meanwhile: the requests its
    mount served, and how much its journal grew."""
    assert record.store is not None
    requests, journal = requests_of(record), journal_bytes(record.store)
    value = action()
    requests, journal = requests_of(record) - requests, journal_bytes(record.store) - journal
    fsyncs = requests.counts.get("fsync", 0)
    per_fsync = f", {journal / fsyncs / 1024:.0f} KiB an fsync" if fsyncs else ""
    return value, f"journal +{journal / MIB:.1f} MB{per_fsync}; {requests_note(requests)}"


def sync_phases(disk: Path, count: int) -> str:
    """What a mount's fsync handler does, in this process: a 4 KiB append to a file of a
    durable workspace, then its journal record written (``flush(sync=False)``: freeze,
    encode, append) and synced (``sync()``: the ``fdatasync``); the p50 of each."""
    durable, _ = open_workspace(str(disk / "phases"), durability=Durability.REQUESTED)
    tree, block = durable.fs.tree, os.urandom(4096)
    with tree.lock:
        ino = tree.create(1, "fsync.bin")
    writing, syncing = [], []
    try:
        for i in range(count):
            with tree.lock:
                tree.write(ino, i * len(block), block)
            writing.append(timed(functools.partial(durable.flush, sync=False)))
            syncing.append(timed(durable.sync))
    finally:
        durable.close()
    written, synced = (statistics.median(samples) * 1e3 for samples in (writing, syncing))
    return (
        f"in process, the fsync handler's work: the record written {written:.3f} ms, "
        f"synced {synced:.3f} ms"
    )


def sync_benchmarks(
    durable: MountRecord, volatile: MountRecord, disk: Path, transactions: int, fsyncs: int
) -> list[Result]:
    places = [Path(durable.mountpoint), disk, Path(volatile.mountpoint)]
    os.sync()  # start from a disk that is not writing back the workloads' journal
    results = []
    # WAL: one fsync a transaction (the acceptance's measure); rollback: two and a
    # directory's, each a durability point.
    for mode, what in (("WAL", "WAL, one fsync a commit"), ("DELETE", "rollback journal")):
        insert = functools.partial(sqlite_inserts, places, transactions, mode)
        times, did = served(durable, insert)
        ours, base, unjournalled = times
        results.append(
            Result(
                f"sqlite {mode}: {transactions} single-insert transactions (mount vs disk)",
                ours,
                base,
                "s",
                "<= the disk's time",
                ours <= base,
                note=f"synchronous=FULL, {what}; {unjournalled:.2f} s on the none mount; {did}",
            )
        )
    latencies, did = served(durable, functools.partial(fsync_latencies, places, fsyncs))
    did += f"; {sync_phases(disk, fsyncs)}"
    for index, label in enumerate(("p50", "p99")):
        ours_ms, base_ms, none_ms = (latency[index] for latency in latencies)
        results.append(
            Result(
                f"fsync latency {label}: 4 KiB write + fsync x{fsyncs} (mount vs disk)",
                ours_ms,
                base_ms,
                "ms",
                "<= 2x the disk's",
                ours_ms <= 2 * base_ms,
                note=f"{none_ms:.3f} ms on the none mount; {did}",
            )
        )
    return results


# -- 3. resume after SIGKILL -----------------------------------------------------------


def many_files_tarball(path: Path, files: int, size: int) -> None:
    """A tarball of ``files`` files of ``size`` bytes, ``PER_DIR`` a directory (the
    layout of ``build_workspace``), each with bytes of its own."""
    noise = os.urandom(size + files)
    with tarfile.open(path, "w") as archive:
        for i in range(files):
            member = tarfile.TarInfo(f"d{i // PER_DIR}/f{i % PER_DIR}.txt")
            member.size, member.mode, member.mtime = size, 0o644, 1_700_000_000
            archive.addfile(member, io.BytesIO(noise[i : i + size]))


def import_seconds(module: str, env: dict[str, str]) -> float:
    """Seconds a fresh interpreter takes to import ``module``, less its own start."""
    python = [sys.executable, "-c"]
    bare = timed(lambda: subprocess.run([*python, "pass"], env=env, check=True))
    loaded = timed(lambda: subprocess.run([*python, f"import {module}"], env=env, check=True))
    return loaded - bare


def opening_seconds(store: str, profile: bool = False) -> tuple[float, int]:
    """Seconds ``open_workspace`` takes on the stopped store in this process, and the
    records it replayed (nothing is written: no checkpoint is taken)."""
    started = time.perf_counter()
    durable, recovery = open_workspace(store, durability=Durability.REQUESTED, checkpoints=False)
    opening = time.perf_counter() - started
    durable.close()
    if profile:
        profiler = cProfile.Profile()
        durable, _ = profiler.runcall(
            open_workspace, store, durability=Durability.REQUESTED, checkpoints=False
        )
        durable.close()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(18)
        print(f"profile of open_workspace on {store}:\n{out.getvalue()}")
    return opening, recovery.records


def resume_benchmark(
    work: Path, disk: Path, files: int, journal_mb: int, profile: bool
) -> list[Result]:
    """A workspace of ``files`` files killed with SIGKILL, resumed with ``mount --name``
    until a stat is served; and its store opened in process before (the tail the kill
    left, replayed whole) and after the resumed daemon stopped (checkpointed)."""
    env = cli_env(disk / "data")
    tarball = work / "many.tar"
    many_files_tarball(tarball, files, journal_mb * MIB // files)
    mnt = work / "resume"
    mnt.mkdir()
    record = cli_mount(mnt, "resumed", env)
    try:
        run_workload("tar -xf {tarball}", mnt, tarball)
        sync_mount(mnt)  # everything acknowledged: the kill loses nothing
        size = journal_bytes(str(record.store))
    except BaseException:
        stop(record)
        raise
    kill(record)
    store = str(record.store)
    crashed, tail = opening_seconds(store, profile)
    probe = mnt / f"d{(files - 1) // PER_DIR}" / f"f{(files - 1) % PER_DIR}.txt"
    started = time.perf_counter()
    record = cli_mount(mnt, "resumed", env)
    try:
        os.stat(probe)
        resumed = time.perf_counter() - started
        count = sum(len(entries) for _, _, entries in os.walk(mnt))
        if count != files:
            raise RuntimeError(f"resumed with {count} files of {files}")
    finally:
        stop(record)  # closing folds what it replayed into a checkpoint
    checkpointed, records = opening_seconds(store, profile)
    started = time.perf_counter()
    record = cli_mount(mnt, "resumed", env)
    try:
        os.stat(probe)
        remounted = time.perf_counter() - started
    finally:
        stop(record)
    fresh_mnt = work / "fresh"
    fresh_mnt.mkdir()
    started = time.perf_counter()
    fresh = cli_mount(fresh_mnt, "fresh", env)
    os.stat(fresh_mnt)
    baseline = time.perf_counter() - started
    stop(fresh)
    imports = (
        f"importing the command {import_seconds('workspacefs.cli', env):.2f} s and the daemon "
        f"{import_seconds('workspacefs.daemon._server', env):.2f} s (fresh interpreters)"
    )
    return [
        Result(
            f"resume: {files:,} files, {size / MIB:.0f} MB journal, SIGKILLed (vs new)",
            resumed,
            baseline,
            "s",
            "< 2 s, mount --name to a stat served",
            resumed < 2.0,
            note=f"{imports}; the store opened in process in {crashed:.2f} s ({tail:,} records)",
        ),
        Result(
            "open a checkpointed store: the same workspace after a clean stop (vs crashed)",
            checkpointed,
            crashed,
            "s",
            "< 0.5 s, open_workspace in process",
            checkpointed < 0.5,
            note=f"{records:,} journal records after the checkpoint; contents load on first read",
        ),
        Result(
            "resume a checkpointed workspace: mount --name to a stat served (vs new)",
            remounted,
            baseline,
            "s",
            "< 0.5 s",
            remounted < 0.5,
            note="the daemon's start included (the new workspace's time)",
        ),
    ]


# -- the run ---------------------------------------------------------------------------


@contextmanager
def daemons(work: Path, disk: Path) -> Iterator[tuple[MountRecord, MountRecord]]:
    """A daemon keeping its workspace in a store on the disk (``interval``), and one
    keeping none."""
    started: list[MountRecord] = []
    try:
        for policy, store in (("interval", str(disk / "store")), ("none", None)):
            mnt = work / policy
            mnt.mkdir()
            started.append(start(mnt, durability=policy, store=store))
        yield started[0], started[1]
    finally:
        for record in started:
            stop(record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    parser.add_argument(
        "--corpus",
        choices=["small", "stdlib", "full"],
        help="what tar -x extracts (default: small with --quick, else stdlib)",
    )
    parser.add_argument(
        "--copies", type=int, default=1, help="copies of the standard library in the stdlib corpus"
    )
    parser.add_argument(
        "--rounds", type=int, help="run the workloads this many times (default: 3, 1 with --quick)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of replaying the resumed store"
    )
    args = parser.parse_args(argv)
    if reason := unavailable_reason():
        print(f"durability benchmarks skipped: {reason}")
        return 0
    corpus = args.corpus or ("small" if args.quick else "stdlib")
    transactions, fsyncs = (20, 50) if args.quick else (200, 500)
    rounds = args.rounds or (1 if args.quick else 3)
    files, journal_mb = (2_000, 4) if args.quick else (50_000, 100)
    work, disk = scratch_dir("bench-durability-"), disk_dir("bench-durability-")
    try:
        tarball = work / "corpus.tar"
        print(make_corpus(tarball, corpus, args.copies))
        print(f"the disk: {disk} is on {filesystem_of(disk)}; the stores are there")
        # npm needs the registry for its first run: the quick form never asks it.
        npm = (
            "not in --quick (the first npm ci needs the registry)"
            if args.quick
            else npm_project(work)
        )
        with daemons(work, disk) as (durable, volatile):
            results = workload_benchmarks(durable, volatile, tarball, npm, rounds)
            results += sync_benchmarks(durable, volatile, disk, transactions, fsyncs)
        results += resume_benchmark(work, disk, files, journal_mb, args.profile)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(disk, ignore_errors=True)
    print(
        f"durability benchmarks (python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}); "
        "ratio = times better than the baseline"
    )
    for result in results:
        print(result.line())
    return 0 if all(r.met for r in results) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
