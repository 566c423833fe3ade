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

from workspacefs.fs import Filesystem
from workspacefs.tools import ToolContext, ToolResult, filesystem_tools

from .conftest import MakeWorkspace, Workspace


class Interleaved:
    """``fs`` with one interleaving point: ``then()`` runs once, right after the first
    call of ``verb`` returns, before the caller sees its result."""

    def __init__(self, fs: Filesystem, verb: str, then: Callable[[], object]) -> None:
        self._fs, self._verb, self._then = fs, verb, then
        self.fired = False

    def __getattr__(self, name: str) -> Any:
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
