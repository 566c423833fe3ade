"""Attribution in the tree and the in-memory workspace: who changed what, per snapshot.

The model test checks ``changes`` against an oracle that follows every file
through writes, renames and deletes with the cause of each operation, and
against ``diff`` for which paths changed at all.
"""

from __future__ import annotations

import json
import threading

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from workspacefs import (
    Cause,
    InMemoryFilesystem,
    InvalidArgumentError,
    IsADirectoryFsError,
    SnapshotRetentionPolicy,
    attributed,
)
from workspacefs.tree import current_cause

A = Cause.call("write_file", "call-a")
B = Cause.call("edit_file", "call-b")
P = Cause(pid=4242, command=("sed", "-i", "s/x/y/", "f"), container="c" * 64, uid=1000)


def history(fs: InMemoryFilesystem, path: str) -> list[tuple[str | None, str, list[str]]]:
    """(snapshot tag, kind, cause descriptions) of each change to ``path``, newest first."""
    return [
        (e.snapshot.tag if e.snapshot else None, e.kind, [c.describe() for c in e.causes])
        for e in fs.blame(path)
    ]


# -- the cause itself ---------------------------------------------------------------


def test_a_cause_round_trips_through_json() -> None:
    for cause in (A, P, P.with_call(A), Cause(uid=0), Cause.call(label="import")):
        assert Cause.from_dict(json.loads(json.dumps(cause.to_dict()))) == cause
    assert A.to_dict() == {"tool": "write_file", "call_id": "call-a"}
    assert (A.kind, P.kind, Cause(uid=3).kind) == ("call", "process", "unknown")


@pytest.mark.parametrize(
    "data",
    [
        {"tool": 3},
        {"pid": "12"},
        {"pid": True},
        {"command": "ls -l"},
        {"command": ["ls", 3]},
        {"who": "me"},
        ["tool"],
    ],
)
def test_a_bad_cause_is_refused(data: object) -> None:
    with pytest.raises(InvalidArgumentError):
        Cause.from_dict(data)  # type: ignore[arg-type]


def test_a_cause_is_bounded_and_describes_itself_in_one_line() -> None:
    huge = Cause(pid=1, command=tuple(f"arg\n{i}" for i in range(1000)), label="x" * 10_000)
    cut = huge.bounded()
    assert len(cut.command) == 64
    assert len(cut.label or "") == 4096
    assert "\n" not in cut.describe()
    assert len(cut.describe()) < 4096 + 300
    assert P.describe() == f"pid 4242 `sed -i s/x/y/ f` in container {'c' * 12} uid 1000"
    assert P.with_call(A).describe().startswith("write_file call call-a pid 4242")


def test_a_process_says_its_call_through_the_environment() -> None:
    assert Cause.from_environment(A.environment()) == A
    assert Cause.from_environment('{"tool": "shell", "pid": 1}') == Cause.call("shell")
    for junk in (None, "", "{", "[]", '{"tool": 3}', '{"pid": 3}', "[" * 5000 + "]" * 5000):
        assert Cause.from_environment(junk) is None


# -- recording ----------------------------------------------------------------------


def test_blame_names_each_change_newest_first() -> None:
    fs = InMemoryFilesystem()
    with attributed(A):
        fs.write("src/app.py", "1\n")
        fs.write("notes.txt", "n\n")
    fs.snapshot(tag="one")
    with attributed(B):
        fs.write("src/app.py", "2\n")
    with attributed(P):
        fs.delete("notes.txt")
    fs.snapshot(tag="two")
    with attributed(A):
        fs.write("src/app.py", "3\n")
    assert history(fs, "src/app.py") == [
        (None, "modified", [A.describe()]),
        ("two", "modified", [B.describe()]),
        ("one", "added", [A.describe()]),
    ]
    assert history(fs, "notes.txt") == [
        ("two", "deleted", [P.describe()]),
        ("one", "added", [A.describe()]),
    ]
    assert fs.blame("/never/was") == []
    with pytest.raises(IsADirectoryFsError):
        fs.blame("src")


def test_several_causes_of_one_step_are_kept_oldest_first() -> None:
    fs = InMemoryFilesystem()
    with attributed(A):
        fs.write("f", "1")
    with attributed(B):
        fs.write("f", "2")
    with attributed(A):
        fs.write("f", "3")  # A again: it moves to the end
    (entry,) = fs.blame("f")
    assert entry.causes == (B, A)
    for n in range(20):
        with attributed(Cause.call("t", str(n))):
            fs.write("f", str(n))
    assert [c.call_id for c in fs.blame("f")[0].causes] == [str(n) for n in range(12, 20)]


def test_unattributed_changes_name_nobody_and_attribution_can_be_off() -> None:
    fs = InMemoryFilesystem()
    fs.write("plain", "x")
    fs.attribution = False
    with attributed(A):
        fs.write("off", "x")
    fs.attribution = True
    assert [e.causes for e in fs.blame("plain")] == [()]
    assert [e.causes for e in fs.blame("off")] == [()]


def test_a_moved_directory_blames_the_move() -> None:
    fs = InMemoryFilesystem()
    with attributed(A):
        fs.write("old/inner/f.txt", "x")
    fs.snapshot(tag="one")
    with attributed(P), fs.transaction() as tree:
        tree.rename(1, "old", 1, "new")
    assert history(fs, "new/inner/f.txt") == [(None, "added", [P.describe()])]
    assert history(fs, "old/inner/f.txt") == [
        (None, "deleted", [P.describe()]),
        ("one", "added", [A.describe()]),
    ]


def test_threads_and_tasks_never_share_a_cause() -> None:
    fs = InMemoryFilesystem()
    ready = threading.Barrier(2)

    def writer(cause: Cause, path: str) -> None:
        with attributed(cause):
            ready.wait()
            for n in range(200):
                fs.write(path, str(n))

    threads = [threading.Thread(target=writer, args=(c, p)) for c, p in ((A, "a"), (B, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e.causes for e in fs.blame("a")] == [(A,)]
    assert [e.causes for e in fs.blame("b")] == [(B,)]

    async def task(cause: Cause, path: str) -> None:
        with attributed(cause):
            for n in range(50):
                fs.write(path, str(n))
                await trio.sleep(0)  # the other task runs in between

    async def both() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(task, A, "ta")
            nursery.start_soon(task, P, "tp")

    trio.run(both)
    assert [e.causes for e in fs.blame("ta")] == [(A,)]
    assert [e.causes for e in fs.blame("tp")] == [(P,)]
    assert current_cause() is None


# -- across versions ------------------------------------------------------------------


def test_restore_brings_a_versions_attribution_back() -> None:
    fs = InMemoryFilesystem()
    with attributed(A):
        fs.write("f", "a")
    one = fs.snapshot(tag="one")
    with attributed(B):
        fs.write("f", "b")
    fs.snapshot(tag="two")
    fs.restore(one)
    assert history(fs, "f") == [("one", "added", [A.describe()])]
    with attributed(P):
        fs.write("f", "p")
    assert history(fs, "f") == [
        (None, "modified", [P.describe()]),
        ("one", "added", [A.describe()]),
    ]
    two = fs.snapshots()[1]
    assert [e.causes for e in fs.blame("f", snapshot=two)] == [(B,), (A,)]


def test_a_fork_inherits_history_and_keeps_its_own() -> None:
    origin = InMemoryFilesystem()
    with attributed(A):
        origin.write("f", "a")
    origin.snapshot(tag="one")
    with attributed(B):
        origin.write("g", "b")  # after the last snapshot: the fork gets it too
    fork = origin.fork()
    with attributed(P):
        fork.write("f", "p")
    with attributed(A):
        origin.write("f", "origin only")
    assert history(fork, "f") == [
        (None, "modified", [P.describe()]),
        ("one", "added", [A.describe()]),
    ]
    assert history(fork, "g") == [(None, "added", [B.describe()])]
    assert history(origin, "f") == [
        (None, "modified", [A.describe()]),
        ("one", "added", [A.describe()]),
    ]


def test_a_pruned_snapshot_merges_into_the_next_kept_one() -> None:
    fs = InMemoryFilesystem(retention=SnapshotRetentionPolicy(max_count=2, keep_tagged=False))
    with attributed(A):
        fs.write("f", "1")
    fs.snapshot(tag="one")
    with attributed(B):
        fs.write("f", "2")
    fs.snapshot(tag="two")
    with attributed(P):
        fs.write("f", "3")
    fs.snapshot(tag="three")  # "one" goes
    assert [s.tag for s in fs.snapshots()] == ["two", "three"]
    assert history(fs, "f") == [
        ("three", "modified", [P.describe()]),
        ("two", "added", [A.describe(), B.describe()]),
    ]
    steps = list(fs.history())
    assert [(s.snapshot and s.snapshot.tag, s.base and s.base.tag) for s in steps] == [
        (None, "three"),
        ("three", "two"),
        ("two", None),
    ]


def test_changes_of_a_snapshot_and_of_the_live_tree() -> None:
    fs = InMemoryFilesystem()
    assert fs.changes().changes == ()
    with attributed(A):
        fs.write("a", "1")
        fs.write("b", "1")
    one = fs.snapshot()
    with attributed(B):
        fs.write("b", "2")
        fs.delete("a")
        fs.write("c", "3")
    live = fs.changes()
    assert (live.snapshot, live.base) == (None, one)
    assert [(c.path, c.kind, c.causes) for c in live.changes] == [
        ("a", "deleted", (B,)),
        ("b", "modified", (B,)),
        ("c", "added", (B,)),
    ]
    assert live.change_of("b") == live.changes[1]
    assert live.change_of("zz") is None
    first = fs.changes(one)
    assert (first.snapshot, first.base) == (one, None)
    assert [(c.path, c.kind) for c in first.changes] == [("a", "added"), ("b", "added")]


# -- the model test -------------------------------------------------------------------

NAMES = ("d/a", "d/b", "d/c", "e/x")
CAUSES = tuple(Cause.call("tool", str(n)) for n in range(6))

operation = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), st.binary(max_size=3)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("rename"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
)
step = st.lists(st.tuples(operation, st.sampled_from(CAUSES)), max_size=6)


@settings(max_examples=150, deadline=None)
@given(st.lists(step, min_size=1, max_size=5))
def test_changes_name_exactly_the_causes_of_each_file(steps: list[list]) -> None:  # type: ignore[type-arg]
    fs = InMemoryFilesystem()
    fs.mkdir("d")
    fs.mkdir("e")
    files: dict[str, int] = {}  # path -> the file (identity) there
    made = iter(range(1_000_000))
    previous = fs.snapshot()
    for operations in steps:
        touched: dict[int, list[Cause]] = {}  # identity -> causes in this step, oldest first
        at_start = dict(files)

        def note(identity: int, cause: Cause, touched: dict[int, list[Cause]] = touched) -> None:
            causes = [c for c in touched.get(identity, []) if c != cause]
            touched[identity] = [*causes, cause]

        for (kind, path, argument), cause in operations:
            with attributed(cause):
                if kind == "write":
                    assert isinstance(argument, bytes)
                    fs.write_bytes(path, argument)
                    identity = files.setdefault(path, next(made))
                    note(identity, cause)
                elif kind == "delete" and path in files:
                    fs.delete(path)
                    note(files.pop(path), cause)
                elif kind == "rename" and path in files and argument != path:
                    assert isinstance(argument, str)
                    with fs.transaction() as tree:
                        source_dir, source = path.split("/")
                        target_dir, target = argument.split("/")
                        tree.rename(
                            tree.resolve_path(source_dir) or 0,
                            source,
                            tree.resolve_path(target_dir) or 0,
                            target,
                        )
                    if argument in files:
                        note(files[argument], cause)  # replaced: dropped
                    files[argument] = files.pop(path)
                    note(files[argument], cause)
        snapshot = fs.snapshot()
        found = fs.changes(snapshot)
        diff = fs.diff(previous, snapshot)
        assert found.base == previous
        assert [c.path for c in found.changes] == sorted(
            [*diff.added, *diff.modified, *diff.deleted]
        )
        for change in found.changes:
            identity = (files if change.kind != "deleted" else at_start)[change.path]
            assert list(change.causes) == touched[identity], change
        previous = snapshot
