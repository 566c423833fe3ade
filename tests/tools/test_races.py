"""A change made by another writer between a tool's look and its write is never lost.

Each test runs a tool on a workspace that has one interleaving point: right
after the tool's named read (``read_bytes``, ``stat``, ...) returns, another
writer changes the workspace through the same real backend. The tool must
then either fail visibly (and change nothing) or keep that change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from workspacefs import ContentChangedError
from workspacefs.fs import Filesystem
from workspacefs.tools import ToolContext, ToolResult, UndoableToolset, filesystem_tools

from .conftest import MakeWorkspace, Workspace


class Interleaved:
    """``fs`` with one interleaving point: ``then()`` runs once, right after the first
    call of ``verb`` returns, before the caller sees its result."""

    def __init__(self, fs: Filesystem, verb: str, then: Callable[[], object]) -> None:
        self._fs, self._verb, self._then = fs, verb, then
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        if name == "call_tool":
            # A daemon's client runs a built-in tool in the daemon (``ToolHost``), past the
            # interleaving point: the tool runs here, on the daemon's verbs, as it did
            # before tools ran where the workspace is.
            raise AttributeError(name)
        found = getattr(self._fs, name)
        if name != self._verb or self.fired:
            return found

        def interleaved(*args: Any, **kwargs: Any) -> Any:
            result = found(*args, **kwargs)
            self.fired = True
            self._then()
            return result

        return interleaved


def call(fs: Any, name: str, **arguments: object) -> ToolResult[object]:
    return filesystem_tools(fs).call(name, arguments, context=ToolContext(filesystem=fs))


def test_edit_fails_when_the_file_changes_between_its_read_and_its_write(
    make: MakeWorkspace,
) -> None:
    ws = make({"m.py": "a = 1\nb = 2\n"})
    racing = Interleaved(ws.fs, "read_bytes", lambda: ws.fs.write("m.py", "a = 1\nb = 3\n"))
    result = call(racing, "edit_file", path="m.py", old_string="a = 1", new_string="a = 10")
    assert racing.fired
    assert not result.success
    assert result.message == (
        "Cannot edit `m.py`: it changed after edit_file read it (another writer changed it "
        "meanwhile), so nothing was written. Read it again with read_file and redo the edit."
    )
    assert ws.text("m.py") == "a = 1\nb = 3\n"  # the other writer's change is kept
    # With nothing racing, the same edit lands on the new content.
    ws.ok("edit_file", path="m.py", old_string="a = 1", new_string="a = 10")
    assert ws.text("m.py") == "a = 10\nb = 3\n"


def test_edit_fails_when_the_file_is_removed_between_its_read_and_its_write(
    make: MakeWorkspace,
) -> None:
    ws = make({"m.py": "a = 1\n"})
    racing = Interleaved(ws.fs, "read_bytes", lambda: ws.fs.delete("m.py"))
    result = call(racing, "edit_file", path="m.py", old_string="a = 1", new_string="a = 2")
    assert not result.success
    assert result.message.startswith("Cannot edit `m.py`: it changed after edit_file read it")
    assert not ws.fs.exists("m.py")  # not made again by the edit


def _two_at_once(work: Callable[[int], ToolResult[object]]) -> list[ToolResult[object]]:
    """``work(0)`` and ``work(1)`` in two threads released together."""
    barrier = threading.Barrier(2)
    results: list[ToolResult[object] | None] = [None, None]

    def run(index: int) -> None:
        barrier.wait()
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert all(result is not None for result in results)
    return [result for result in results if result is not None]


def test_two_creators_one_wins(make: MakeWorkspace) -> None:
    ws: Workspace = make()
    for round_ in range(20):
        path = f"new-{round_}.txt"

        def create(index: int, path: str = path) -> ToolResult[object]:
            return ws.call("write_file", path=path, content=f"writer {index}\n", mode="create")

        results = _two_at_once(create)
        won = [index for index, result in enumerate(results) if result.success]
        assert len(won) == 1, [result.message for result in results]
        lost = results[1 - won[0]]
        assert lost.message.startswith(f"Cannot create `{path}`: it already exists")
        assert ws.text(path) == f"writer {won[0]}\n"


REPLACED = "replaced by another writer\n"


def test_rm_keeps_a_file_replaced_after_it_was_read(make: MakeWorkspace) -> None:
    ws = make({"old.txt": "old\n"})
    racing = Interleaved(ws.fs, "read_bytes", lambda: ws.fs.write("old.txt", REPLACED))
    result = call(racing, "rm", path="old.txt")
    assert racing.fired
    assert not result.success
    assert result.message == (
        "Cannot remove `old.txt`: it changed after rm looked at it (another writer changed it "
        "meanwhile), so nothing was removed. Look at it again, and remove it if it should "
        "still go."
    )
    assert ws.text("old.txt") == REPLACED


def test_rm_names_what_it_removed(make: MakeWorkspace) -> None:
    ws = make({"old.txt": "old\n"})
    racing = Interleaved(ws.fs, "stat", lambda: ws.fs.write("old.txt", REPLACED))
    result = call(racing, "rm", path="old.txt")
    assert racing.fired
    assert result.message == f"Removed file `old.txt` ({len(REPLACED)} bytes)."
    assert not ws.fs.exists("old.txt")


def test_restore_keeps_a_change_made_while_it_restores(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "a\n"})
    late = "written while restoring\n"
    racing = Interleaved(ws.fs, "diff", lambda: ws.fs.write("late.txt", late))
    assert call(racing, "snapshot", tag="start").success
    ws.fs.write("a.txt", "changed\n")
    result = call(racing, "restore", id_or_tag="start")
    assert racing.fired
    assert not result.success
    assert result.message == (
        "Cannot restore snapshot `start`: another writer changed the workspace while it was "
        "restoring (late.txt), so nothing was restored. Try again."
    )
    assert (ws.text("a.txt"), ws.text("late.txt")) == ("changed\n", late)
    again = call(racing, "restore", id_or_tag="start")  # nothing racing now
    assert "(2 files: 1 added, 1 modified)" in again.message
    assert ws.text("a.txt") == "a\n"
    assert not ws.fs.exists("late.txt")


def test_undo_keeps_a_change_made_after_the_call(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "a\n"})
    fs = ws.snapshotable()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    assert toolset.call("write_file", {"path": "a.txt", "content": "b\n"}).success
    fs.write("other.txt", "another writer's\n")
    with pytest.raises(ContentChangedError) as caught:
        toolset.undo()
    assert caught.value.strerror == (
        "another writer changed the workspace after call call-1 (other.txt), outside the "
        "recorded calls; rewinding would discard that too, so nothing was undone (a forced "
        "rewind discards it)"
    )
    assert (ws.text("a.txt"), ws.text("other.txt")) == ("b\n", "another writer's\n")
    assert [c.call_id for c in toolset.history] == ["call-1"]
    fs.delete("other.txt")  # the workspace is as the call left it again: undo goes through
    assert toolset.undo() is not None
    assert ws.text("a.txt") == "a\n"


def test_undo_keeps_a_change_made_between_calls(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "a\n"})
    fs = ws.snapshotable()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    assert toolset.call("write_file", {"path": "a.txt", "content": "b\n"}).success
    fs.write("other.txt", "another writer's\n")
    assert toolset.call("write_file", {"path": "c.txt", "content": "c\n"}).success
    with pytest.raises(ContentChangedError) as caught:
        toolset.undo_to("call-1")
    assert caught.value.strerror == (
        "another writer changed the workspace between calls call-1 and call-2 (other.txt), "
        "outside the recorded calls; rewinding would discard that too, so nothing was undone "
        "(a forced rewind discards it)"
    )
    assert ws.text("c.txt") == "c\n"
    toolset.undo_to("call-2")  # after the other writer's change: it stays
    assert not ws.fs.exists("c.txt")
    assert ws.text("other.txt") == "another writer's\n"
    with pytest.raises(ContentChangedError):  # call-1 is still before it
        toolset.undo_to("call-1")
    assert (ws.text("a.txt"), ws.text("other.txt")) == ("b\n", "another writer's\n")
