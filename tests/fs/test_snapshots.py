"""Snapshots of InMemoryFilesystem: records, restore, diff, views, retention."""

from __future__ import annotations

import gc
import json
import tracemalloc
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from workspacefs import (
    FilesystemSnapshot,
    InMemoryFilesystem,
    InMemorySnapshotStore,
    ReadOnlyError,
    SnapshotableFilesystem,
    SnapshotIncompatibleError,
    SnapshotNotFoundError,
    SnapshotRef,
    SnapshotRestoreError,
    SnapshotRetentionPolicy,
)
from workspacefs.fs import find_snapshot, short_id, snapshot_label


@pytest.fixture
def fs() -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write("src/a.py", "a = 1\n")
    fs.write("src/pkg/b.py", "b = 2\n")
    fs.write("README.md", "hi\n")
    return fs


def test_is_snapshotable(fs: InMemoryFilesystem) -> None:
    assert isinstance(fs, SnapshotableFilesystem)


def test_snapshot_record(fs: InMemoryFilesystem) -> None:
    assert fs.current_snapshot_id is None
    first = fs.snapshot(tag="start")
    fs.write("new.txt", "12345")
    second = fs.snapshot()
    assert first.tag == "start"
    assert first.parent_id is None
    assert second.parent_id == first.snapshot_id
    assert (first.file_count, first.total_bytes) == (3, 15)
    assert (second.file_count, second.total_bytes) == (4, 20)
    assert fs.current_snapshot_id == second.snapshot_id
    assert second.created_at >= first.created_at
    with pytest.raises(AttributeError):
        first.tag = "changed"  # type: ignore[misc]


def test_record_round_trips_through_json(fs: InMemoryFilesystem) -> None:
    record = fs.snapshot(tag="t")
    text = json.dumps(record.to_dict())
    assert FilesystemSnapshot.from_dict(json.loads(text)) == record


def test_record_says_what_it_refers_to(fs: InMemoryFilesystem) -> None:
    assert fs.snapshot().ref.kind == "memory"
    with pytest.raises(ValueError, match="tape"):
        SnapshotRef("tape", "x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("old", "ref"),
    [
        (
            {"commit_ref": "a" * 40, "git_dir": "/g.git", "strategy": "git"},
            SnapshotRef("git", "a" * 40, "/g.git"),
        ),
        (
            {"commit_ref": "/kept/1", "git_dir": None, "strategy": "copy"},
            SnapshotRef("copy", "/kept/1"),
        ),
        (
            {"commit_ref": "b" * 40, "git_dir": "/r.git", "strategy": None},  # loaded from git
            SnapshotRef("git", "b" * 40, "/r.git"),
        ),
        (
            {"commit_ref": "version-3", "git_dir": None, "strategy": None},
            SnapshotRef("memory", "version-3"),
        ),
    ],
)
def test_records_written_before_typed_refs_still_load(
    old: dict[str, object], ref: SnapshotRef
) -> None:
    data = {
        "snapshot_id": str(uuid.uuid4()),
        "created_at": "2026-01-01T00:00:00+00:00",
        "root_path": "/w",
        "tag": None,
        "parent_id": None,
        "file_count": 1,
        "total_bytes": 2,
        "workspace_id": None,
        **old,
    }
    record = FilesystemSnapshot.from_dict(data)
    assert record.ref == ref
    assert FilesystemSnapshot.from_dict(record.to_dict()) == record


def test_restore(fs: InMemoryFilesystem) -> None:
    snapshot = fs.snapshot()
    fs.write("src/a.py", "a = 99\n")
    fs.delete("README.md")
    fs.write("extra/new.txt", "x")
    fs.restore(snapshot)
    assert fs.read("src/a.py").content == "a = 1\n"
    assert fs.exists("README.md")
    assert not fs.exists("extra")
    assert fs.current_snapshot_id == snapshot.snapshot_id


def test_restore_then_branch(fs: InMemoryFilesystem) -> None:
    base = fs.snapshot()
    fs.write("branch1.txt", "1")
    one = fs.snapshot()
    fs.restore(base)
    fs.write("branch2.txt", "2")
    two = fs.snapshot()
    assert two.parent_id == base.snapshot_id
    diff = fs.diff(one, two)
    assert diff.added == ("branch2.txt",)
    assert diff.deleted == ("branch1.txt",)
    fs.restore(one)
    assert fs.exists("branch1.txt")
    assert not fs.exists("branch2.txt")


def test_diff_against_live_and_between(fs: InMemoryFilesystem) -> None:
    base = fs.snapshot()
    fs.write("src/a.py", "a = 2\n")
    fs.delete("README.md")
    fs.write("docs/new.md", "x")
    live = fs.diff(base)
    assert live.added == ("docs/new.md",)
    assert live.modified == ("src/a.py",)
    assert live.deleted == ("README.md",)
    assert live.unchanged_count == 1
    assert live.changed
    after = fs.snapshot()
    assert fs.diff(base, after) == live
    assert not fs.diff(after).changed


def test_diff_of_renamed_directory(fs: InMemoryFilesystem) -> None:
    base = fs.snapshot()
    tree = fs.tree
    with tree.lock:
        src = tree.resolve_path("")
        assert src is not None
        tree.rename(src, "src", src, "lib")
    diff = fs.diff(base)
    assert diff.added == ("lib/a.py", "lib/pkg/b.py")
    assert diff.deleted == ("src/a.py", "src/pkg/b.py")
    assert diff.modified == ()


def test_diff_ignores_changes_that_were_undone(fs: InMemoryFilesystem) -> None:
    base = fs.snapshot()
    fs.write("src/a.py", "other\n")
    fs.write("src/a.py", "a = 1\n")
    fs.write("tmp.txt", "x")
    fs.delete("tmp.txt")
    assert not fs.diff(base).changed


def test_diff_sees_exec_bit(fs: InMemoryFilesystem) -> None:
    base = fs.snapshot()
    with fs.tree.lock:
        ino = fs.tree.resolve_path("src/a.py")
        assert ino is not None
        fs.tree.setattr(ino, mode=0o755)
    assert fs.diff(base).modified == ("src/a.py",)


def test_at_is_read_only_view(fs: InMemoryFilesystem) -> None:
    snapshot = fs.snapshot()
    fs.write("src/a.py", "changed")
    view = fs.at(snapshot)
    assert view.read_only
    assert view.read("src/a.py").content == "a = 1\n"
    with pytest.raises(ReadOnlyError):
        view.write("x", "y")
    with pytest.raises(PermissionError):
        view.delete("src/a.py")


def test_restore_errors(fs: InMemoryFilesystem) -> None:
    snapshot = fs.snapshot()
    unknown = replace(snapshot, snapshot_id=uuid.uuid4())
    with pytest.raises(SnapshotNotFoundError):
        fs.restore(unknown)
    other = InMemoryFilesystem()
    with pytest.raises(SnapshotIncompatibleError):
        other.restore(snapshot)
    with pytest.raises(SnapshotRestoreError):  # the family a caller catches
        other.restore(snapshot)
    fs.write("src/a.py", "kept")
    with pytest.raises(SnapshotNotFoundError):
        fs.restore(unknown)
    assert fs.read("src/a.py").content == "kept"  # nothing changed


def test_restore_refused_when_read_only() -> None:
    fs = InMemoryFilesystem(read_only=True)
    snapshot = fs.snapshot()
    with pytest.raises(ReadOnlyError):
        fs.restore(snapshot)


def test_delete_snapshot(fs: InMemoryFilesystem) -> None:
    snapshot = fs.snapshot()
    fs.delete_snapshot(snapshot)
    assert fs.snapshots() == []
    with pytest.raises(SnapshotNotFoundError):
        fs.restore(snapshot)


def test_diff_across_a_pruned_snapshot(fs: InMemoryFilesystem) -> None:
    first = fs.snapshot()
    fs.write("one.txt", "1")
    middle = fs.snapshot()
    fs.write("two.txt", "2")
    last = fs.snapshot()
    fs.delete_snapshot(middle)
    assert fs.diff(first, last).added == ("one.txt", "two.txt")


# -- retention -------------------------------------------------------------------


def record(minutes_ago: float, tag: str | None = None) -> FilesystemSnapshot:
    return FilesystemSnapshot(
        snapshot_id=uuid.uuid4(),
        created_at=NOW - timedelta(minutes=minutes_ago),
        ref=SnapshotRef("memory", "x"),
        root_path="/",
        tag=tag,
    )


NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_policy_max_count_keeps_newest() -> None:
    records = [record(m) for m in (50, 40, 30, 20, 10)]
    expired = SnapshotRetentionPolicy(max_count=2).expired(records, NOW)
    assert expired == records[:3]


def test_policy_max_age_and_tags() -> None:
    old_tagged, old, fresh = record(180, "release"), record(120), record(30)
    policy = SnapshotRetentionPolicy(max_age_hours=1)
    assert policy.expired([old_tagged, old, fresh], NOW) == [old]
    policy = SnapshotRetentionPolicy(max_age_hours=1, keep_tagged=False)
    assert policy.expired([old_tagged, old, fresh], NOW) == [old_tagged, old]


def test_policy_count_with_tags() -> None:
    tagged, a, b = record(30, "keep"), record(20), record(10)
    assert SnapshotRetentionPolicy(max_count=1).expired([tagged, a, b], NOW) == [a, b]


def test_policy_validation() -> None:
    with pytest.raises(ValueError):
        SnapshotRetentionPolicy(max_count=0)
    with pytest.raises(ValueError):
        SnapshotRetentionPolicy(max_age_hours=-1)


def test_store_protocol() -> None:
    store: InMemorySnapshotStore[str] = InMemorySnapshotStore()
    a, b = record(2), record(1)
    store.save(a, "payload-a")
    store.save(b, "payload-b")
    assert store.list() == [a, b]
    # Seed 001's store: ``load`` is the record, ``prune`` a count; the payload apart.
    assert store.load(a.snapshot_id) == a
    assert store.payload(a.snapshot_id) == "payload-a"
    assert store.prune(SnapshotRetentionPolicy(max_count=1), now=NOW) == 1
    assert store.list() == [b]
    with pytest.raises(SnapshotNotFoundError):
        store.delete(a.snapshot_id)


def test_retention_applied_on_snapshot() -> None:
    fs = InMemoryFilesystem(retention=SnapshotRetentionPolicy(max_count=3))
    tagged = fs.snapshot(tag="keep")
    for i in range(5):
        fs.write("f.txt", str(i))
        fs.snapshot()
    kept = fs.snapshots()
    assert len(kept) == 3
    assert tagged in kept


def test_pruning_frees_unshared_memory() -> None:
    fs = InMemoryFilesystem()
    tracemalloc.start()
    try:
        fs.write_bytes("big.bin", b"a" * 4_000_000)
        snapshot = fs.snapshot()
        fs.write_bytes("big.bin", b"b" * 4_000_000)
        held = tracemalloc.get_traced_memory()[0]
        fs.delete_snapshot(snapshot)
        gc.collect()
        freed = held - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert freed > 3_900_000


def test_snapshots_share_unchanged_data() -> None:
    fs = InMemoryFilesystem()
    tracemalloc.start()
    try:
        for i in range(1000):
            fs.write_bytes(f"d{i % 10}/f{i}.bin", bytes([i % 256]) * 4096)
        content = 1000 * 4096
        base = tracemalloc.get_traced_memory()[0]
        for round_ in range(10):
            fs.snapshot()
            for j in range(round_, 1000, 100):  # 1% of the files
                fs.write_bytes(f"d{j % 10}/f{j}.bin", b"x" * 4096)
        growth = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    # Ten snapshots of 1% changes cost about 10% of the content, not 10x.
    assert growth < 0.2 * content


def test_names_find_one_snapshot_or_say_why_not(fs: InMemoryFilesystem) -> None:
    first = replace(
        fs.snapshot(tag="v1"), snapshot_id=uuid.UUID("abcd1111-0000-4000-8000-000000000000")
    )
    second = replace(fs.snapshot(), snapshot_id=uuid.UUID("abcd2222-0000-4000-8000-000000000000"))
    third = replace(
        fs.snapshot(tag="v1"), snapshot_id=uuid.UUID("12345678-0000-4000-8000-000000000000")
    )
    records = [first, second, third]
    assert find_snapshot(records, "v1") is third  # the newest with the tag
    assert find_snapshot(records, " ABCD2 ") is second
    assert find_snapshot(records, str(first.snapshot_id)) is first
    assert find_snapshot(records, first.snapshot_id) is first
    assert find_snapshot([], first) is first
    unknown = "no snapshot has this tag or id"
    for name, why in [("abcd", "id prefix matches 2 snapshots"), ("123", unknown), ("v2", unknown)]:
        with pytest.raises(SnapshotNotFoundError) as caught:
            find_snapshot(records, name)
        assert (caught.value.strerror, caught.value.filename) == (why, name)
    assert (short_id(third.snapshot_id), snapshot_label(third)) == ("12345678", "12345678 (v1)")
    assert (short_id("step-1"), short_id("live")) == ("step-1", "live")  # archive ids are names
