"""Checkpoints: the journal folded into the store's git objects, so opening replays a
short tail and loads file contents on first read; what a checkpoint covers leaves
the journal only once the checkpoint is durable, and a crash while one is written
changes nothing that opening finds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support.interpreter import child_env
from workspacefs.store import Durability, open_workspace, read_journal, segments


def _open(store: Path, **options: object):  # type: ignore[no-untyped-def]
    return open_workspace(str(store), durability=Durability.REQUESTED, **options)  # type: ignore[arg-type]


def _pack_bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in (store / "git" / "objects" / "pack").glob("*.pack"))


def test_a_checkpoint_replaces_the_journal_and_files_load_on_first_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    durable, _ = _open(store, checkpoints=False)
    with durable:
        fs = durable.fs
        for n in range(200):
            fs.write(f"src/f{n}.py", f"print({n})\n" * 50)
        fs.write_bytes("blob.bin", os.urandom(3 << 20))
        first = fs.snapshot(tag="first")
        fs.write("src/f0.py", "changed\n")
        fs.delete("src/f1.py")
        second = fs.snapshot(tag="second")
        fs.write("src/f2.py", "live only\n")
        expected = {p: fs.read_bytes(p).content for p in ("src/f0.py", "src/f2.py", "blob.bin")}
        covers = durable.checkpoint()
        # After the checkpoint: a tail the next open replays on top of it.
        fs.write("tail.txt", "after the checkpoint\n")
        fs.delete_snapshot(first)
        durable.sync()
    journal = store / "journal"
    assert [first_seq for first_seq, _ in segments(str(journal))] == [1]  # one segment, kept
    assert (store / "checkpoints" / str(covers)).is_dir()
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=store / "git", capture_output=True)
    assert fsck.returncode == 0, fsck.stderr

    again, recovery = _open(store)
    with again:
        assert recovery.records == len(read_journal(str(journal), after=covers).records)
        fs = again.fs
        node = fs.tree.get(fs.tree.lookup(fs.tree.lookup(1, "src"), "f5.py"))
        assert node is not None
        assert node.deferred_key is not None  # loaded on first read, not at open
        for path, data in expected.items():
            assert fs.read_bytes(path).content == data
        assert fs.read("tail.txt").content == "after the checkpoint\n"
        assert [s.tag for s in fs.snapshots()] == ["second"]  # "first" was forgotten after
        fs.restore(next(s for s in fs.snapshots() if s.snapshot_id == second.snapshot_id))
        assert fs.read("src/f0.py").content == "changed\n"
        assert not fs.exists("src/f1.py")
        assert fs.read("src/f2.py").content == "print(2)\n" * 50


def test_a_second_checkpoint_writes_only_what_changed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    durable, _ = _open(store, checkpoints=False)
    with durable:
        for n in range(20):
            durable.fs.write_bytes(f"f{n}.bin", os.urandom(256 << 10))
        durable.checkpoint()
        after_first = _pack_bytes(store)
        durable.fs.write_bytes("f3.bin", b"small now")
        durable.checkpoint()
    assert after_first >= 20 * (256 << 10)
    assert _pack_bytes(store) - after_first < 4096  # one small blob, not 20 files again
    assert len(list((store / "checkpoints").iterdir())) == 1  # the older one removed


def test_a_sparse_file_is_checkpointed_as_its_chunks_not_a_blob_of_zeros(tmp_path: Path) -> None:
    store = tmp_path / "store"
    durable, _ = _open(store, checkpoints=False)
    with durable:
        tree = durable.fs.tree
        with tree.lock:  # as a mount's pwrite past the end makes it
            tree.write(tree.create(1, "sparse.img"), (8 << 30) - 3, b"end")
        durable.checkpoint()
    kept = [p for p in store.rglob("*") if p.is_file() and "journal" not in p.parts]
    assert sum(p.stat().st_size for p in kept) < 1 << 20  # the checkpoint and its blobs
    again, _ = _open(store)
    with again:
        assert again.fs.stat("sparse.img").size_bytes == 8 << 30
        assert again.fs.read_bytes("sparse.img", offset=(8 << 30) - 3).content == b"end"


_CHECKPOINTING = textwrap.dedent(
    """
    import os, sys
    from workspacefs.store import Durability, open_workspace
    durable, _ = open_workspace(sys.argv[1], durability=Durability.REQUESTED, checkpoints=False)
    fs = durable.fs
    round = 0
    while True:
        round += 1
        for n in range(8):
            fs.write_bytes(f"f{n}.bin", bytes([round % 251]) * (512 << 10))
        fs.write("round.txt", str(round))
        durable.sync()
        print(round, flush=True)
        durable.checkpoint()
    """
)


@pytest.mark.parametrize("seed", range(4))
def test_a_kill_during_a_checkpoint_loses_nothing_synced(tmp_path: Path, seed: int) -> None:
    store = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHECKPOINTING, str(store)],
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert child.stdout is not None
    synced = 0
    deadline = time.monotonic() + 0.5 + seed * 0.37
    while time.monotonic() < deadline or synced < 2:
        line = child.stdout.readline()
        if not line:
            break
        synced = int(line)
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    durable, recovery = _open(store)
    with durable:
        assert recovery.damage is None or recovery.damage.torn
        round_seen = int(durable.fs.read("round.txt").content)
        assert round_seen >= synced  # everything synced is there
        for n in range(8):  # and one consistent state: every file of the same round
            assert durable.fs.read_bytes(f"f{n}.bin").content == bytes([round_seen % 251]) * (
                512 << 10
            )
    assert not [p for p in (store / "checkpoints").iterdir() if p.name.startswith(".new-")]


@pytest.mark.parametrize("cap", ["high", "low"])
def test_a_checkpoint_waits_for_the_mount_to_be_quiet_up_to_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: str
) -> None:
    from workspacefs.store import _durable
    from workspacefs.tree import mount_request

    monkeypatch.setattr(_durable, "CHECKPOINT_BYTES", 10_000)
    monkeypatch.setattr(_durable, "BUSY_CHECKPOINT_BYTES", 10**12 if cap == "high" else 20_000)
    monkeypatch.setattr(_durable, "QUIET_NS", 300_000_000)
    store = tmp_path / "store"
    durable, _ = open_workspace(str(store), durability=Durability.INTERVAL, interval=0.05)
    with durable:
        text = "".join(f"line {n} of a text that compresses well\n" for n in range(20_000))
        ends = time.monotonic() + 1.0
        n = 0
        while time.monotonic() < ends:  # a mount busy answering requests meanwhile
            mount_request(time.perf_counter_ns())
            durable.fs.write_bytes(f"f{n % 5}.txt", (text + str(n)).encode())
            n += 1
            time.sleep(0.01)
        checkpoints = store / "checkpoints"
        busy = [p.name for p in checkpoints.iterdir()] if checkpoints.exists() else []
        if cap == "high":
            assert busy == []  # none while the mount was busy
            ends = time.monotonic() + 10
            while not (checkpoints.exists() and any(checkpoints.iterdir())):
                assert time.monotonic() < ends, "no checkpoint once the mount was quiet"
                time.sleep(0.05)
            assert _pack_bytes(store) < len(text)  # compressed: there was time
        else:
            assert busy, "the bound starts one even while the mount is busy"
            assert _pack_bytes(store) >= len(text)  # stored: the mount needed the CPU
