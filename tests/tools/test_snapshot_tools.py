"""snapshot, restore and diff on every backend."""

from __future__ import annotations

import re

import pytest

from workspacefs import FilesystemDiff, FilesystemSnapshot, InMemoryFilesystem
from workspacefs.daemon import RemoteFilesystem
from workspacefs.tools import ToolContext, WorkspaceSnapshots, filesystem_tools

from .conftest import BACKENDS, MakeWorkspace

FILES = {"a.txt": "alpha\n", "keep.txt": "same\n", "gone.txt": "bye\n"}


def test_snapshot_restore_by_tag_and_id(make: MakeWorkspace) -> None:
    ws = make(FILES)
    taken = ws.call("snapshot", tag="start")
    assert taken.success
    record = taken.value
    assert isinstance(record, FilesystemSnapshot)
    short = str(record.snapshot_id)[:8]
    assert taken.message.startswith(f"Took snapshot `{short}` (tag `start`): 3 files, 15 bytes.")
    assert 'restore(id_or_tag="start")' in taken.message
    ws.ok("write_file", path="a.txt", content="changed\n")
    ws.ok("rm", path="gone.txt")
    ws.ok("write_file", path="new.txt", content="new\n")
    restored = ws.ok("restore", id_or_tag="start")
    kept = re.fullmatch(
        f"Restored snapshot `{short}` \\(tag `start`\\). Undid the changes since it "
        "\\(3 files: 1 added, 1 modified, 1 deleted\\); the state before is kept as snapshot "
        "`([0-9a-f]{8})`: restore it to bring them back.",
        restored,
    )
    assert kept is not None, restored
    assert ws.text("a.txt") == "alpha\n"
    assert ws.text("gone.txt") == "bye\n"
    assert not ws.fs.exists("new.txt")
    # What the restore discarded is there to come back to.
    assert "Undid" in ws.ok("restore", id_or_tag=kept[1])
    assert ws.text("a.txt") == "changed\n"
    assert ws.text("new.txt") == "new\n"
    ws.ok("restore", id_or_tag="start")
    ws.ok("write_file", path="a.txt", content="again\n")
    assert "Undid" in ws.ok("restore", id_or_tag=short)
    assert ws.text("a.txt") == "alpha\n"
    again = ws.ok("restore", id_or_tag=str(record.snapshot_id))
    assert again.endswith("nothing had changed since.")


def test_snapshot_and_restore_failures(make: MakeWorkspace) -> None:
    ws = make(FILES)
    ws.ok("snapshot", tag="t")
    duplicate = ws.fail("snapshot", tag="t")
    assert duplicate.startswith("Cannot take a snapshot tagged `t`: ")
    assert "already names snapshot" in duplicate
    assert ws.fail("restore", id_or_tag="nope") == (
        "Cannot restore snapshot `nope`: no such snapshot."
    )
    assert "no such snapshot" in ws.fail("diff", **{"from": "nope"})


def test_diff_between_two_snapshots_not_just_since_start(make: MakeWorkspace) -> None:
    ws = make(FILES)
    ws.ok("snapshot", tag="s1")
    ws.ok("write_file", path="a.txt", content="alpha\nbeta\n")
    ws.ok("snapshot", tag="s2")
    ws.ok("rm", path="gone.txt")
    ws.ok("write_file", path="b.txt", content="bee\n")
    ws.ok("snapshot", tag="s3")
    ws.ok("write_file", path="keep.txt", content="live\n")
    middle = ws.call("diff", **{"from": "s2", "to": "s3"})
    assert middle.success
    assert isinstance(middle.value, FilesystemDiff)
    assert (middle.value.added, middle.value.modified, middle.value.deleted) == (
        ("b.txt",),
        (),
        ("gone.txt",),
    )
    lines = middle.message.splitlines()
    assert lines[0].startswith("From snapshot `")
    assert "(tag `s2`) to snapshot `" in lines[0]
    assert lines[0].endswith("(tag `s3`): 2 files: 1 added, 1 deleted.")
    assert lines[1:5] == ["added (1):", "  b.txt", "deleted (1):", "  gone.txt"]
    first = ws.ok("diff", **{"from": "s1", "to": "s2"})
    assert "modified (1):\n  a.txt" in first
    assert "b.txt" not in first
    live = ws.ok("diff", **{"from": "s3"})
    assert "to the live workspace: 1 file: 1 modified." in live
    assert "keep.txt" in live
    if isinstance(ws.fs, InMemoryFilesystem | RemoteFilesystem):  # they can read a snapshot
        patch = [
            "diff --git a/a.txt b/a.txt",
            "--- a/a.txt",
            "+++ b/a.txt",
            "@@ -1 +1,2 @@",
            " alpha",
            "+beta",
        ]
        assert "\n".join(patch) in first
        assert "-same\n+live" in live
    else:
        assert "no line diff" in first
    scoped = ws.ok("diff", **{"from": "s1", "path": "./b.txt"})
    assert "under `b.txt`: 1 file: 1 added." in scoped
    assert "a.txt" not in scoped
    assert "outside the workspace" in ws.fail("diff", **{"from": "s1", "path": "../x"})


def test_diff_patch_is_capped() -> None:
    fs = InMemoryFilesystem()
    fs.write("long.txt", "".join(f"{i}\n" for i in range(100)))
    tools, context = filesystem_tools(fs), ToolContext(filesystem=fs)
    assert tools.call("snapshot", {"tag": "before"}, context=context).success
    fs.write("long.txt", "".join(f"{i}!\n" for i in range(100)))
    message = tools.call("diff", {"from": "before", "max_lines": 10}, context=context).message
    patch = message.split("\n\n", 1)[1].splitlines()
    assert len(patch) == 11
    assert patch[-1].startswith(
        "[... patch cut at max_lines=10: 1 more changed file not shown in full; pass path="
    )


def test_snapshot_tools_on_a_filesystem_without_snapshots() -> None:
    memory = InMemoryFilesystem()
    memory.write("x", "x")
    view = memory.at(memory.snapshot())
    assert "snapshot" not in filesystem_tools(view)
    result = filesystem_tools().call("snapshot", {}, context=ToolContext(filesystem=view))
    assert result.message == "This workspace does not support snapshots."
    assert not result.success


# The backends that delete snapshots: another client deletes the one the tools know.
@pytest.mark.parametrize("backend", ["memory", "remote"])
def test_a_failed_restore_leaves_no_snapshot_of_its_own(make: MakeWorkspace) -> None:
    ws = make(FILES)
    fs = ws.fs
    assert isinstance(fs, InMemoryFilesystem | RemoteFilesystem)
    snaps = WorkspaceSnapshots.of(fs)
    ws.ok("snapshot", tag="gone")
    record = snaps.find("gone")
    fs.delete_snapshot(record)  # meanwhile, by another client: the tools still list it
    ws.ok("write_file", path="a.txt", content="changed\n")
    message = ws.fail("restore", id_or_tag="gone")
    assert message.startswith("Cannot restore snapshot `gone`: "), message
    assert ws.text("a.txt") == "changed\n"
    # The state it would have kept before restoring is not left behind.
    assert not fs.snapshots()
    # The snapshot tools remember what they took where they run: in the daemon, for its
    # client (it is a ``ToolHost``), whose own list then holds nothing.
    taken = [] if isinstance(fs, RemoteFilesystem) else [record.snapshot_id]
    assert [r.snapshot_id for r in snaps.list()] == taken


# Not on memory: a read-only in-memory view cannot snapshot (checked above).
@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "memory"])
def test_restore_refused_on_read_only_host(make: MakeWorkspace) -> None:
    ws = make(FILES, read_only=True)
    WorkspaceSnapshots.of(ws.snapshotable()).snapshot("ro")
    message = ws.fail("restore", id_or_tag="ro")
    assert message == "Cannot restore snapshot `ro`: the workspace is read-only."
