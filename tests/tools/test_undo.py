"""Undo at tool-call boundaries: 20 mixed calls, then back to before each of them."""

from __future__ import annotations

from typing import Any

import pytest

from workspacefs import InMemoryFilesystem, SnapshotableFilesystem
from workspacefs.daemon import RemoteFilesystem
from workspacefs.fs import Filesystem, call_history
from workspacefs.tools import ToolContext, UndoableToolset, filesystem_tools

from .conftest import MakeWorkspace

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("write_file", {"path": "a.txt", "content": "1\n"}),
    ("read_file", {"path": "a.txt"}),
    ("write_file", {"path": "b/c.txt", "content": "c\n"}),
    ("edit_file", {"path": "a.txt", "old_string": "1", "new_string": "2"}),
    ("ls", {"path": "."}),
    ("write_file", {"path": "a.txt", "content": "x", "mode": "create"}),  # refused
    ("grep", {"pattern": "c"}),
    ("rm", {"path": "b", "recursive": True}),
    ("write_file", {"path": "d.txt", "content": "d\n"}),
    ("glob", {"pattern": "**"}),
    ("edit_file", {"path": "d.txt", "old_string": "d", "new_string": "dd"}),
    ("snapshot", {"tag": "mid"}),
    ("write_file", {"path": "e.txt", "content": "e\n", "mode": "append"}),
    ("rm", {"path": "nope"}),  # fails
    ("read_file", {"path": "d.txt"}),
    ("write_file", {"path": "e.txt", "content": "more\n", "mode": "append"}),
    ("edit_file", {"path": "e.txt", "old_string": "more", "new_string": "less"}),
    ("restore", {"id_or_tag": "mid"}),
    ("write_file", {"path": "f/g/h.txt", "content": "h\n"}),
    ("rm", {"path": "a.txt"}),
]
FAILING = {5, 13}
READS = {"read_file", "ls", "grep", "glob"}


def state(fs: Filesystem) -> dict[str, bytes | None]:
    """Every path below the root: file content, or None for a directory."""
    found: dict[str, bytes | None] = {}
    stack = ["."]
    while stack:
        for entry in fs.list(stack.pop()):
            if entry.is_directory:
                found[entry.path] = None
                stack.append(entry.path)
            else:
                found[entry.path] = fs.read_bytes(entry.path).content
    return found


def test_undo_back_to_each_of_twenty_calls(make: MakeWorkspace) -> None:
    ws = make({"base.txt": "base\n"})
    fs = ws.snapshotable()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    before: list[dict[str, bytes | None]] = []
    for index, (name, arguments) in enumerate(CALLS):
        before.append(state(fs))
        result = toolset.call(name, arguments, call_id=f"c{index}")
        assert result.success is (index not in FAILING), (index, result.message)
    history = toolset.history
    assert [call.call_id for call in history] == [f"c{i}" for i in range(20)]
    for call, (name, _) in zip(history, CALLS, strict=True):
        assert (call.before is None) is (name in READS), name
    # Every mutating call, refused ones too, has a snapshot of its own, tagged with its id:
    # that is the workspace's record of the call, which every door reads.
    mutating = [f"c{i}" for i, (name, _) in enumerate(CALLS) if name not in READS]
    assert [call.call_id for call in call_history(fs)] == mutating
    assert history[7].before is not history[5].before
    assert history[5].after is history[5].before  # refused: changed nothing
    assert toolset.diff("c3").modified == ("a.txt",)
    assert toolset.diff("c5").changed is False
    assert toolset.diff("c1").changed is False
    assert toolset.diff("c7").deleted == ("b/c.txt",)
    if isinstance(fs, InMemoryFilesystem | RemoteFilesystem):  # they can read a snapshot
        assert "-1\n+2" in toolset.patch("c3")
    final = state(fs)
    assert final != before[0]
    for index in reversed(range(20)):
        undone = toolset.undo_to(f"c{index}")
        assert [call.call_id for call in undone] == [f"c{index}"]
        assert state(fs) == before[index], f"state before call {index}: {CALLS[index]}"
    assert toolset.history == ()
    assert state(fs) == {"base.txt": b"base\n"}


def test_read_only_calls_take_no_snapshot() -> None:
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    toolset.call("write_file", {"path": "a.txt", "content": "a\n"})
    taken = list(fs.snapshots())
    assert [s.tag for s in taken] == ["undo:write_file:call-1", "after:write_file:call-1"]
    for name, arguments in [
        ("read_file", {"path": "a.txt"}),
        ("ls", {}),
        ("grep", {"pattern": "a"}),
        ("glob", {"pattern": "*"}),
        ("diff", {"from": str(taken[0].snapshot_id)}),
    ]:
        assert toolset.call(name, arguments).success
    assert list(fs.snapshots()) == taken
    toolset.call("write_file", {"path": "a.txt", "content": "x", "mode": "create"})  # refused
    toolset.call("rm", {"path": "missing"})  # fails
    # A mutating call that changed nothing has its snapshot before (its record), no after.
    assert [s.tag for s in fs.snapshots()][2:] == ["undo:write_file:call-7", "undo:rm:call-8"]
    assert [call.after is call.before for call in toolset.history[-2:]] == [True, True]


def test_undo_skips_calls_that_changed_nothing() -> None:
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    toolset.call("write_file", {"path": "a.txt", "content": "a"})
    toolset.call("write_file", {"path": "b.txt", "content": "b"})
    toolset.call("read_file", {"path": "b.txt"})
    toolset.call("rm", {"path": "missing"})
    undone = toolset.undo()
    assert undone is not None
    assert undone.call_id == "call-2"
    assert [c.call_id for c in toolset.history] == ["call-1"]
    assert not fs.exists("b.txt")
    assert fs.exists("a.txt")
    assert toolset.undo() is not None
    assert not fs.exists("a.txt")
    assert toolset.undo() is None


def test_history_is_bounded_and_forgets_snapshots() -> None:
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs, max_history=3)
    for i in range(5):
        toolset.call("write_file", {"path": f"{i}.txt", "content": str(i)})
    assert [c.call_id for c in toolset.history] == ["call-3", "call-4", "call-5"]
    # The snapshots of the calls forgotten are deleted: the workspace forgets them too.
    assert [s.tag for s in fs.snapshots()] == [
        f"{phase}:write_file:call-{i}" for i in (3, 4, 5) for phase in ("undo", "after")
    ]
    assert [c.call_id for c in call_history(fs)] == ["call-3", "call-4", "call-5"]
    toolset.undo_to("call-3")
    assert sorted(e.name for e in fs.list()) == ["0.txt", "1.txt"]


def test_misuse_is_refused() -> None:
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    toolset.call("ls", {}, call_id="x")
    with pytest.raises(FileExistsError):
        toolset.call("ls", {}, call_id="x")
    with pytest.raises(ValueError, match="context"):
        toolset.call("ls", {}, context=ToolContext(filesystem=InMemoryFilesystem()))
    with pytest.raises(LookupError):
        toolset.undo_to("unknown")
    with pytest.raises(ValueError, match="max_history"):
        UndoableToolset(filesystem_tools(fs), fs, max_history=0)
    assert isinstance(toolset.filesystem, SnapshotableFilesystem)
