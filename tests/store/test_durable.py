"""Durable workspaces: what was journalled comes back when the store is opened again,
after a clean close or a SIGKILL at any moment."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from support.interpreter import child_env
from workspacefs import BusyError, InMemoryFilesystem, NotPermittedError, StoreDamagedError
from workspacefs.store import Durability, open_workspace, read_journal


def state(fs: InMemoryFilesystem) -> dict[str, object]:
    """Everything a user sees of a workspace, by path."""
    seen: dict[str, object] = {}
    view = fs.tree
    for path, _, node in view.walk():
        info: dict[str, object] = {"mode": node.mode, "uid": node.uid, "nlink": node.nlink,
                                   "mtime": node.mtime_ns, "xattrs": node.xattrs}  # fmt: skip
        if stat.S_ISREG(node.mode):
            info["data"] = fs.read_bytes(path).content if node.size < 1 << 20 else node.size
        elif stat.S_ISLNK(node.mode):
            info["target"] = view.readlink(view.resolve_path(path) or 0)
        seen[path] = info
    return seen


def test_a_closed_workspace_opens_as_it_was(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    durable, recovery = open_workspace(store, durability=Durability.REQUESTED)
    assert (recovery.records, recovery.snapshots, recovery.damage) == (0, 0, None)
    fs = durable.fs
    fs.mkdir("src/pkg")
    fs.write("src/pkg/a.py", "print('a')\n")
    fs.write_bytes("data.bin", os.urandom(300_000))
    first = fs.snapshot(tag="first")
    fs.write("src/pkg/a.py", "print('changed')\n")
    fs.delete("data.bin")
    with fs.tree.lock:
        root = fs.tree.lookup(1, "src")
        fs.tree.symlink(root, "link", "pkg/a.py")
        fs.tree.setxattr(root, b"user.note", b"kept")
        fs.tree.link(fs.tree.resolve_path("src/pkg/a.py") or 0, root, "hard.py")
    second = fs.snapshot(tag="second")
    expected_second = state(fs)
    fs.restore(first)
    expected_first = state(fs)
    durable.close()

    again, recovery = open_workspace(store, durability=Durability.REQUESTED)
    with again:
        assert recovery.damage is None
        assert list(again.fs.snapshots()) == [first, second]
        assert state(again.fs) == expected_first  # the live state at close
        again.fs.restore(second)
        assert state(again.fs) == expected_second
        again.fs.restore(first)
        assert state(again.fs) == expected_first
        assert again.fs.workspace_id == fs.workspace_id


def _initial() -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write("src/app.py", "print('hello')\n")
    return fs


def test_a_new_workspace_is_kept_before_it_changes(tmp_path: Path) -> None:
    # What a store starts with is on disk by its first durability point: closed
    # before any change, it must not open empty.
    for policy in Durability:
        store = str(tmp_path / policy.value)
        durable, _ = open_workspace(store, durability=policy, initial=_initial)
        durable.close()
        again, recovery = open_workspace(store, durability=policy)
        with again:
            assert recovery.records == 1
            assert again.fs.read("src/app.py").content == "print('hello')\n", policy


def test_abandoning_keeps_nothing_of_a_new_store_and_all_of_an_old_one(tmp_path: Path) -> None:
    # The daemon abandons its store when its start fails: a new store must then hold
    # no workspace (the start may be tried again with a source), a resumed one all.
    store = str(tmp_path / "store")
    durable, _ = open_workspace(store, durability=Durability.ALWAYS, initial=_initial)
    durable.abandon()
    again, recovery = open_workspace(store, durability=Durability.REQUESTED, initial=_initial)
    with again:
        assert recovery.records == 0
        again.fs.write("b.txt", "kept\n")
    third, _ = open_workspace(store, durability=Durability.REQUESTED)
    third.fs.write("c.txt", "kept too\n")
    third.abandon()
    fourth, _ = open_workspace(store, durability=Durability.REQUESTED)
    with fourth:
        assert sorted(e.name for e in fourth.fs.list()) == ["b.txt", "c.txt", "src"]


KILLED_NEW = """
import os, signal, sys, time
from workspacefs import InMemoryFilesystem
from workspacefs.store import Durability, open_workspace
def initial():
    fs = InMemoryFilesystem()
    fs.write("src/app.py", "print('hello')\\n")
    return fs
durable, _ = open_workspace(sys.argv[1], durability=Durability(sys.argv[2]), interval=0.05,
                            initial=initial)
time.sleep(float(sys.argv[3]))
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize(("policy", "wait"), [("always", 0), ("interval", 0.5)])
def test_a_new_workspace_killed_before_it_changes_opens_as_it_began(
    tmp_path: Path, policy: str, wait: float
) -> None:
    # ``always``: on disk when open_workspace returns; ``interval``: within the interval.
    store = str(tmp_path / "store")
    killed = subprocess.run([sys.executable, "-c", KILLED_NEW, store, policy, str(wait)],
                            env=child_env(), check=False)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL
    again, recovery = open_workspace(store, durability=Durability.REQUESTED)
    with again:
        assert recovery.records == 1
        assert again.fs.read("src/app.py").content == "print('hello')\n"


def test_a_store_a_kill_left_half_made_opens(tmp_path: Path) -> None:
    # A kill while the store was made can leave its format file under its temporary
    # name: the store holds nothing yet, and opening it makes it anew.
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "lock").write_text("12345\n")
    (store / "format.new").write_text("workspace")  # cut short
    durable, recovery = open_workspace(str(store), durability=Durability.REQUESTED)
    with durable:
        assert recovery.records == 0
        durable.fs.write("a.txt", "kept\n")
    again, _ = open_workspace(str(store), durability=Durability.REQUESTED)
    with again:
        assert again.fs.read("a.txt").content == "kept\n"


def test_a_write_to_one_chunk_journals_that_chunk(tmp_path: Path) -> None:
    store = tmp_path / "store"
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED)
    with durable:
        durable.fs.write_bytes("big.bin", os.urandom(4 << 20))
        durable.sync()
        before = _journal_bytes(store)
        durable.fs.write_bytes("big.bin", b"x" * 10, mode="append")
        durable.sync()
        assert _journal_bytes(store) - before < 70_000  # one 64 KiB chunk, not 4 MiB


def _journal_bytes(store: Path) -> int:
    return sum(f.stat().st_size for f in (store / "journal").iterdir())


def test_a_torn_last_record_is_dropped_and_said(tmp_path: Path) -> None:
    store = tmp_path / "store"
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED)
    with durable:
        durable.fs.write("a.txt", "kept\n")
        durable.sync()
        durable.fs.write("b.txt", "torn\n")
        durable.sync()
    (segment,) = (store / "journal").iterdir()
    os.truncate(segment, read_journal(str(store / "journal")).records[-1].end - 5)
    again, recovery = open_workspace(str(store), durability=Durability.REQUESTED)
    with again:
        assert recovery.damage is not None
        assert recovery.damage.torn
        assert not recovery.lost_records
        assert [e.name for e in again.fs.list()] == ["a.txt"]
        again.fs.write("c.txt", "after\n")
    third, recovery = open_workspace(str(store), durability=Durability.REQUESTED)
    with third:
        assert recovery.damage is None
        assert [e.name for e in third.fs.list()] == ["a.txt", "c.txt"]


def test_a_store_is_served_by_one_process(tmp_path: Path) -> None:
    durable, _ = open_workspace(str(tmp_path / "store"), durability=Durability.REQUESTED)
    with durable:
        code = (
            "from workspacefs.store import open_workspace\n"
            f"open_workspace({str(tmp_path / 'store')!r})\n"
        )
        refused = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 env=child_env(), check=False)  # fmt: skip
        assert "BusyError" in refused.stderr
        assert f"in use by process {os.getpid()}" in refused.stderr
    inner, _ = open_workspace(str(tmp_path / "store"))
    with inner, pytest.raises(BusyError):
        open_workspace(str(tmp_path / "store"))


def test_a_store_others_may_reach_or_of_another_format_is_refused(tmp_path: Path) -> None:
    open_workspace(str(tmp_path / "store"), durability=Durability.REQUESTED)[0].close()
    os.chmod(tmp_path / "store", 0o755)
    with pytest.raises(NotPermittedError, match="chmod 700") as refused:
        open_workspace(str(tmp_path / "store"))
    assert refused.value.errno == errno.EPERM
    os.chmod(tmp_path / "store", 0o700)
    (tmp_path / "store" / "format").write_text("workspacefs-store 9\n")
    with pytest.raises(StoreDamagedError, match=r"'workspacefs-store 9'.*'workspacefs-store 1'"):
        open_workspace(str(tmp_path / "store"))


WORKLOAD = """
import os, sys
from workspacefs.store import Durability, open_workspace
durable, _ = open_workspace(sys.argv[1], durability=Durability.INTERVAL, interval=0.02)
fs = durable.fs
step = 0
while True:
    step += 1
    fs.write(f"f{step % 7}.txt", f"step {step}\\n" * (step % 50 + 1))
    if step % 11 == 0:
        fs.delete(f"f{(step // 11) % 7}.txt") if fs.exists(f"f{(step // 11) % 7}.txt") else None
    if step % 5 == 0:
        fs.snapshot(tag=f"s{step}")
        print(step, flush=True)  # acknowledged: the snapshot returned, so it is on disk
"""


def model(step: int) -> dict[str, str]:
    """The files after ``step`` steps of ``WORKLOAD``."""
    files: dict[str, str] = {}
    for n in range(1, step + 1):
        files[f"f{n % 7}.txt"] = f"step {n}\n" * (n % 50 + 1)
        if n % 11 == 0:
            files.pop(f"f{(n // 11) % 7}.txt", None)
    return files


def files_of(fs: InMemoryFilesystem) -> dict[str, str]:
    return {e.name: fs.read(e.name).content for e in fs.list()}


@pytest.mark.parametrize("kill_after", [5, 40, 150, 400])
def test_every_acknowledged_snapshot_survives_sigkill(tmp_path: Path, kill_after: int) -> None:
    store = str(tmp_path / "store")
    child = subprocess.Popen([sys.executable, "-c", WORKLOAD, store], stdout=subprocess.PIPE,
                             text=True, env=child_env())  # fmt: skip
    assert child.stdout is not None
    acknowledged = 0
    for line in child.stdout:
        acknowledged = int(line)
        if acknowledged >= kill_after:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    durable, recovery = open_workspace(store, durability=Durability.REQUESTED)
    with durable:
        fs = durable.fs
        assert not recovery.lost_records
        tags = [s.tag for s in fs.snapshots()]
        assert tags[: acknowledged // 5] == [f"s{n}" for n in range(5, acknowledged + 1, 5)]
        live = files_of(fs)
        # The live state is the state after some step at or after the last acknowledged one.
        assert any(live == model(step) for step in range(acknowledged, acknowledged + 200))
        for snapshot in fs.snapshots():
            fs.restore(snapshot)
            assert files_of(fs) == model(int(str(snapshot.tag)[1:])), snapshot.tag
    assert read_journal(str(tmp_path / "store" / "journal")).damage is None


def test_a_file_grown_by_truncate_comes_back_at_its_size(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    durable, _ = open_workspace(store, durability=Durability.REQUESTED)
    with durable:
        durable.fs.write("f.txt", "hello")
        durable.sync()
        with durable.fs.tree.lock:
            durable.fs.tree.truncate(durable.fs.tree.resolve_path("f.txt") or 0, 1 << 20)
        durable.sync()
    again, _ = open_workspace(store, durability=Durability.REQUESTED)
    with again:
        assert again.fs.stat("f.txt").size_bytes == 1 << 20
        assert again.fs.read_bytes("f.txt", limit=8).content == b"hello\0\0\0"


def test_a_change_set_larger_than_a_record_is_one_group(tmp_path: Path) -> None:
    store = tmp_path / "store"
    data = os.urandom(40 << 20)  # past PART_BYTES: several records
    # No checkpoint on close: this is about the journal's groups.
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED, checkpoints=False)
    with durable:
        durable.fs.write("small.txt", "before\n")
        durable.sync()
        for start in range(0, len(data), 8 << 20):
            durable.fs.write_bytes("big.bin", data[start : start + (8 << 20)], mode="append")
        durable.fs.write("small.txt", "after\n")
        durable.sync()
    reading = read_journal(str(store / "journal"))
    assert len(reading.records) >= 4  # one group before, three or more in the big one
    again, _ = open_workspace(str(store), durability=Durability.REQUESTED, checkpoints=False)
    with again:
        read = again.fs.read_bytes
        pieces = [
            read("big.bin", offset=at, limit=8 << 20).content for at in range(0, 40 << 20, 8 << 20)
        ]
        assert b"".join(pieces) == data
        assert again.fs.read("small.txt").content == "after\n"
    # A group cut short (its last record gone) was never acknowledged: none of it counts.
    (segment,) = (store / "journal").glob("*.wal")
    last = reading.records[-1]
    os.truncate(segment, last.start + 10)
    third, recovery = open_workspace(str(store), durability=Durability.REQUESTED)
    with third:
        assert recovery.damage is not None
        assert recovery.damage.torn
        assert [e.name for e in third.fs.list()] == ["small.txt"]
        assert third.fs.read("small.txt").content == "before\n"


@pytest.mark.parametrize("size", [40 << 20, 72 << 20], ids=["one-segment", "two-segments"])
def test_what_follows_a_group_cut_short_is_kept(tmp_path: Path, size: int) -> None:
    # A kill tore the last record of a group: the group is dropped whole, its intact
    # records too (they are cut off the journal): the records written after it take
    # their sequence numbers, and must not be read as covered already. (No checkpoint
    # on close: this is about the journal.)
    store = tmp_path / "store"
    piece = bytes(range(256)) * (32 << 10)  # 8 MiB
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED, checkpoints=False)
    with durable:
        durable.fs.write("small.txt", "before\n")
        durable.sync()
        for _ in range(size // len(piece)):
            durable.fs.write_bytes("big.bin", piece, mode="append")
        durable.sync()
    last = read_journal(str(store / "journal")).records[-1]
    os.truncate(last.segment, last.start + 10)
    again, recovery = open_workspace(str(store), durability=Durability.REQUESTED, checkpoints=False)
    with again:
        assert recovery.damage is not None
        assert recovery.damage.torn
        assert [e.name for e in again.fs.list()] == ["small.txt"]
        again.fs.write("later.txt", "acknowledged\n")
        again.sync()
    third, recovery = open_workspace(str(store), durability=Durability.REQUESTED, checkpoints=False)
    with third:
        assert recovery.damage is None
        assert [e.name for e in third.fs.list()] == ["later.txt", "small.txt"]
    assert read_journal(str(store / "journal")).damage is None


def test_journal_freezes_add_nothing_to_history(tmp_path: Path) -> None:
    durable, _ = open_workspace(str(tmp_path / "store"), durability=Durability.REQUESTED)
    with durable:
        depth = durable.fs.tree.pending().depth
        for n in range(50):
            durable.fs.write("f.txt", f"{n}\n")
            durable.sync()
        assert durable.fs.tree.pending().depth == depth


def test_a_merge_and_the_journal_thread_do_not_wait_on_each_other(tmp_path: Path) -> None:
    from workspacefs import git

    durable, _ = open_workspace(str(tmp_path / "store"), interval=0.001)
    finished = threading.Event()

    def merges() -> None:
        for n in range(30):
            fork = durable.fs.fork()
            fork.write(f"from-fork-{n}.txt", "x\n")
            durable.fs.write(f"live-{n}.txt", "y\n")
            git.merge(durable.fs, fork)
        finished.set()

    with durable:
        worker = threading.Thread(target=merges, daemon=True)
        worker.start()
        worker.join(60)  # a liveness bound: a deadlock never finishes
        assert finished.is_set()
    again, _ = open_workspace(str(tmp_path / "store"), durability=Durability.REQUESTED)
    with again:
        names = {e.name for e in again.fs.list()}
        assert {f"from-fork-{n}.txt" for n in range(30)} <= names
        assert {f"live-{n}.txt" for n in range(30)} <= names


def test_blame_comes_back_with_the_snapshots(tmp_path: Path) -> None:
    from workspacefs.fs import Cause, attributed

    store = str(tmp_path / "store")
    durable, _ = open_workspace(store, durability=Durability.REQUESTED)
    with durable:
        fs = durable.fs
        with attributed(Cause.call(tool="write_file", call_id="call-1")):
            fs.write("a.txt", "one\n")
        first = fs.snapshot(tag="first")
        with attributed(Cause.call(tool="edit_file", call_id="call-2")):
            fs.write("a.txt", "two\n")
        fs.snapshot(tag="second")
        expected = [(e.kind, [c.call_id for c in e.causes]) for e in fs.blame("a.txt")]
        durable.checkpoint()  # the checkpoint carries it too
        with attributed(Cause.call(tool="edit_file", call_id="call-3")):
            fs.write("b.txt", "three\n")
        fs.snapshot(tag="third")
    assert expected == [("modified", ["call-2"]), ("added", ["call-1"])]
    again, _ = open_workspace(store, durability=Durability.REQUESTED)
    with again:
        blamed = again.fs.blame("a.txt")
        assert [(e.kind, [c.call_id for c in e.causes]) for e in blamed] == expected
        assert blamed[-1].snapshot is not None
        assert blamed[-1].snapshot.snapshot_id == first.snapshot_id
        assert [c.call_id for c in again.fs.blame("b.txt")[0].causes] == ["call-3"]


def test_a_hidden_path_s_blame_is_journalled_all_the_same(tmp_path: Path) -> None:
    from workspacefs.fs import Cause, Rule, attributed

    store = str(tmp_path / "store")
    durable, _ = open_workspace(store, durability=Durability.REQUESTED)
    with durable:
        fs = durable.fs
        fs.rules.add(Rule(".env", "hidden"))
        with fs.transaction(), attributed(Cause.call(tool="write_file", call_id="call-1")):
            fs.write(".env", "TOKEN=1\n")  # the owner's bulk change: not bound
        fs.snapshot(tag="first")
        assert fs.blame(".env") == []
    again, _ = open_workspace(store, durability=Durability.REQUESTED)
    with again:
        blamed = again.fs.blame(".env")  # the rules are the daemon's, not the journal's
        assert [[c.call_id for c in e.causes] for e in blamed] == [["call-1"]]


def test_a_time_past_64_bits_is_journalled_within_them(tmp_path: Path) -> None:
    # A source can record any integer as a time (a hostile git record: 2^80 ns); the
    # journal holds 64 bits, as the mount shows: clamped, never a failed flush.
    store = str(tmp_path / "store")
    durable, _ = open_workspace(store, durability=Durability.REQUESTED)
    with durable:
        durable.fs.write("old.txt", "x")
        tree = durable.fs.tree
        with tree.lock:
            tree.setattr(tree.lookup(1, "old.txt"), mtime_ns=1 << 80)
        durable.sync()
    again, _ = open_workspace(store, durability=Durability.REQUESTED)
    with again:
        tree = again.fs.tree
        assert tree.node(tree.lookup(1, "old.txt")).mtime_ns == (1 << 63) - 1


def test_a_resumed_workspace_persists_on_top_of_what_it_persisted_before(tmp_path: Path) -> None:
    import pygit2

    from workspacefs import git
    from workspacefs.git._history import recorded_history

    store, repo = str(tmp_path / "store"), str(tmp_path / "repo.git")
    durable, _ = open_workspace(store, durability=Durability.REQUESTED)
    with durable:
        durable.fs.write("a.txt", "one\n")
        first = git.persist(durable.fs, durable.fs.snapshot(tag="first"), repo)
    again, _ = open_workspace(store, durability=Durability.REQUESTED)
    with again:
        again.fs.write("a.txt", "two\n")
        second = git.persist(again.fs, again.fs.snapshot(tag="second"), repo)
    repository = pygit2.Repository(repo)
    commit = repository[second.commit].peel(pygit2.Commit)
    assert [str(parent) for parent in commit.parent_ids] == [first.commit]
    # The history the first commit holds is not repeated in the second.
    meta = repository[second.meta_commit].peel(pygit2.Commit)
    history = recorded_history(repository.odb, meta, 1 << 20)
    assert [step.snapshot.tag for step in history or [] if step.snapshot] == ["second"]


def test_a_snapshot_deleted_after_resuming_frees_its_data(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    durable, _ = open_workspace(store, durability=Durability.REQUESTED, checkpoints=False)
    with durable:
        durable.fs.write_bytes("big.bin", os.urandom(2 << 20))
        durable.fs.snapshot(tag="with-the-file")
        durable.fs.delete("big.bin")
        durable.fs.snapshot(tag="without")
    again, _ = open_workspace(store, durability=Durability.REQUESTED, checkpoints=False)
    with again:
        fs = again.fs
        held = fs.tree.budget.held
        assert held >= 2 << 20  # replayed: the first snapshot holds the file's data
        fs.delete_snapshot(fs.snapshots()[0])
        assert fs.tree.budget.held < held - (1 << 20)


KILLED_LOADED = """
import os, signal, sys
from workspacefs import git
from workspacefs.store import Durability, open_workspace
store, repo, background = sys.argv[1], sys.argv[2], sys.argv[3] == "background"
def initial():
    return git.load(repo, "v1", workspace="big", background=background)
durable, _ = open_workspace(store, durability=Durability.INTERVAL, interval=3600.0,
                            initial=initial, base=repo)
fs = durable.fs
with fs.tree.lock:
    fs.tree.list_all()  # a background load adopts its snapshot once all is listed
fs.write("after-load.txt", "written after the load\\n")
durable.sync()  # the first record: no checkpoint yet
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("how", ["at-once", "background"])
def test_a_loaded_snapshot_is_journalled_with_the_first_record(tmp_path: Path, how: str) -> None:
    # The snapshot a workspace was loaded from is an undo point like any other: it must
    # be in the journal, not only in the first checkpoint.
    from support.large_repos import large_repo

    repo = large_repo(tmp_path / "repo.git")
    store = str(tmp_path / "store")
    killed = subprocess.run([sys.executable, "-c", KILLED_LOADED, store, str(repo), how],
                            env=child_env(), check=False)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL
    again, _ = open_workspace(store, durability=Durability.REQUESTED)
    with again:
        fs = again.fs
        [loaded] = fs.snapshots()
        assert loaded.tag == "v1"
        assert fs.read("after-load.txt").content == "written after the load\n"
        assert fs.diff(loaded).added == ("after-load.txt",)
        fs.restore(loaded)
        assert not fs.exists("after-load.txt")
        assert fs.read_bytes("src/p9/m9.py").content == b"src/p9/m9.py\n" * 3


def test_a_snapshot_journals_only_what_changed_since_the_last_record(tmp_path: Path) -> None:
    # Files changed since the journal last froze the tree (a second, by default) were
    # journalled again by every snapshot: two a recorded tool call.
    store = tmp_path / "store"
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED)
    with durable:
        fs = durable.fs
        for n in range(300):
            fs.write(f"d/f{n}.txt", f"{n}\n")
        fs.snapshot(tag="first")
        before = _recorded_bytes(store)
        for n in range(10):
            fs.write("d/f0.txt", f"again {n}\n")
            fs.snapshot(tag=f"again-{n}")
            fs.snapshot(tag=f"same-{n}")
        grown = _recorded_bytes(store) - before
        expected = state(fs)
        tags = [s.tag for s in fs.snapshots()]
    assert grown < 40_000  # each of the 300 files again in each snapshot: over 600,000
    again, recovery = open_workspace(str(store), durability=Durability.REQUESTED)
    with again:
        assert recovery.damage is None
        assert state(again.fs) == expected
        assert [s.tag for s in again.fs.snapshots()] == tags
        same = next(s for s in again.fs.snapshots() if s.tag == "same-3")
        assert again.fs.at(same).read("d/f0.txt").content == "again 3\n"


def _recorded_bytes(store: Path) -> int:
    """The bytes of the journal's records (its segments are made longer ahead)."""
    return sum(r.end - r.start for r in read_journal(str(store / "journal")).records)
