"""A durable workspace holds several times its memory budget: data its store holds
leaves memory when the budget needs room and is read back on access, while the file
data held never passes the budget (sampled all along). Snapshots, restores, forks,
reopening and a SIGKILL all keep every byte."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.interpreter import child_env
from workspacefs import InMemoryFilesystem, NoSpaceError, git
from workspacefs.fs import TreeFilesystem
from workspacefs.store import Durability, DurableWorkspace, open_workspace

MIB = 1 << 20
BUDGET = 4 * MIB


class Sampler:
    """The most file data the budget held, read every millisecond in a thread."""

    def __init__(self, fs: InMemoryFilesystem) -> None:
        self.budget = fs.tree.budget
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, self.budget.held)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.budget.held)


def contents(seed: int, count: int) -> dict[str, bytes]:
    """``count`` files of 1 KiB to 600 KiB, of text and random bytes, in a few directories."""
    rng = random.Random(seed)
    files = {}
    for n in range(count):
        size = rng.choice([1 << 10, 40 << 10, 200 << 10, 600 << 10]) + rng.randrange(4096)
        data = rng.randbytes(size) if n % 3 else (b"line %d\n" % n) * (size // 8)
        files[f"d{n % 7}/sub{n % 3}/f{n}.bin"] = data
    return files


def write_all(fs: InMemoryFilesystem, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        fs.write_bytes(path, data, create_parents=True)


def assert_reads(fs: TreeFilesystem, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        got = fs.read_bytes(path).content
        assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest(), path


@contextmanager
def opened(store: Path, **options: object) -> Iterator[DurableWorkspace]:
    durable, recovery = open_workspace(str(store), memory_budget=BUDGET, **options)  # type: ignore[arg-type]
    assert recovery.damage is None
    with durable:
        yield durable


def total(files: dict[str, bytes]) -> int:
    return sum(map(len, files.values()))


def test_several_budgets_of_files_through_the_api(tmp_path: Path) -> None:
    files = contents(1, 100)
    assert total(files) > 4 * BUDGET
    with opened(tmp_path / "store") as durable:
        fs = durable.fs
        with Sampler(fs) as sampler:
            write_all(fs, files)
            assert_reads(fs, files)
            usage = fs.memory_usage()
            first = fs.snapshot(tag="first")
            changed = {path: data[::-1] for path, data in list(files.items())[::4]}
            write_all(fs, changed)
            fork = fs.fork()
            assert_reads(fs, {**files, **changed})
            fs.restore(first)
            assert_reads(fs, files)
            assert_reads(fork, {**files, **changed})
            assert_reads(fs.at(first), files)
        assert sampler.peak <= BUDGET
    assert fs.tree.budget.residency.evicted > len(files)
    assert usage.held <= BUDGET
    assert 0 < usage.evictable <= usage.held
    assert usage.on_disk + usage.live >= total(files)
    assert usage.on_disk > 3 * BUDGET
    with opened(tmp_path / "store") as again, Sampler(again.fs) as sampler:
        assert_reads(again.fs, files)
        again.fs.restore(next(s for s in again.fs.snapshots() if s.tag == "first"))
        assert_reads(again.fs, files)
    assert sampler.peak <= BUDGET


def test_a_file_larger_than_the_budget_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    files = contents(2, 30)
    with opened(tmp_path / "store") as durable:
        fs = durable.fs
        write_all(fs, files)
        with pytest.raises(NoSpaceError):
            fs.write_bytes("huge.bin", os.urandom(BUDGET + MIB))
        assert not fs.exists("huge.bin")
        path = next(iter(files))
        with pytest.raises(NoSpaceError):
            fs.write_bytes(path, os.urandom(BUDGET + MIB))
        assert_reads(fs, files)
        assert fs.tree.budget.held <= BUDGET


def test_a_fork_writes_only_what_the_budget_holds(tmp_path: Path) -> None:
    # Forks are not journalled: their data is never on disk, so it never leaves
    # memory, and once it fills the budget the fork's writes are refused.
    with opened(tmp_path / "store") as durable:
        fs = durable.fs
        write_all(fs, contents(3, 20))
        fork = fs.fork()
        for n in range(BUDGET // MIB):  # the workspace's own data all leaves for it
            fork.write_bytes(f"fork/{n}.bin", os.urandom(MIB), create_parents=True)
        with pytest.raises(NoSpaceError):
            fork.write_bytes("fork/more.bin", os.urandom(MIB))
        assert fs.tree.budget.held <= BUDGET
        with pytest.raises(NoSpaceError):  # no room left for anything to come back
            assert_reads(fs, contents(3, 20))
        fork.delete("fork", recursive=True)
        assert_reads(fs, contents(3, 20))  # the workspace's own data: back from disk


def test_files_loaded_from_a_repository_leave_memory_unchanged(tmp_path: Path) -> None:
    source = InMemoryFilesystem()
    files = contents(4, 60)
    write_all(source, files)
    repository = tmp_path / "base.git"
    git.persist(source, source.snapshot(tag="base"), str(repository))
    ref = f"refs/workspacefs/{source.workspace_id}/snapshots/1"
    with opened(
        tmp_path / "store", initial=lambda: git.load(str(repository), ref), base=str(repository)
    ) as durable:
        fs = durable.fs
        fs.memory_budget = BUDGET
        with Sampler(fs) as sampler:
            assert_reads(fs, files)
            assert_reads(fs, files)
        assert sampler.peak <= BUDGET
        # Nothing was written back: what left memory came from the base repository.
        packs = list((tmp_path / "store" / "git" / "objects" / "pack").glob("*.pack"))
        assert sum(pack.stat().st_size for pack in packs) < MIB
        assert fs.tree.budget.residency.evicted > 0


def test_a_checkpoint_makes_what_it_writes_evictable(tmp_path: Path) -> None:
    with opened(tmp_path / "store", durability=Durability.REQUESTED, checkpoints=False) as durable:
        fs = durable.fs
        fs.write_bytes("a.bin", os.urandom(MIB))
        assert fs.memory_usage().evictable == 0  # dirty: nothing holds it but memory
        durable.checkpoint()
        assert fs.memory_usage().evictable == MIB


KILLED = """
import hashlib, os, random, sys
from workspacefs.store import open_workspace
durable, _ = open_workspace(sys.argv[1], memory_budget=4 << 20)
fs = durable.fs
rng = random.Random(5)
for n in range(60):
    data = rng.randbytes(300 << 10)
    fs.write_bytes(f"f{n}.bin", data)
    if n % 20 == 19:
        durable.sync()
        print(n, flush=True)
sys.stdin.readline()
"""


def test_what_a_sync_acknowledged_survives_a_kill_after_eviction(tmp_path: Path) -> None:
    store = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert child.stdout is not None
    lines = [child.stdout.readline() for _ in range(3)]
    assert lines == ["19\n", "39\n", "59\n"]
    time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert child.stdin is not None
    child.stdin.close()
    rng = random.Random(5)
    expected = {f"f{n}.bin": rng.randbytes(300 << 10) for n in range(60)}
    with opened(store) as durable:
        assert_reads(durable.fs, expected)
