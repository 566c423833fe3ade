"""Tool calls are attributed to their tool and call id; the ``blame`` tool reports it."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import anyio
from mcp import Client, types

from workspacefs import Cause, HostFilesystem, InMemoryFilesystem, attributed
from workspacefs.tools import (
    BLAME,
    CALL_ID_META,
    ToolContext,
    ToolRegistry,
    UndoableToolset,
    create_server,
    filesystem_tools,
)


def call_meta(call_id: str) -> types.RequestParamsMeta:
    """A request's ``_meta`` naming the call (an open mapping: any key travels)."""
    return cast("types.RequestParamsMeta", {CALL_ID_META: call_id})


def causes(fs: InMemoryFilesystem, path: str) -> list[list[tuple[str | None, str | None]]]:
    return [[(c.tool, c.call_id) for c in e.causes] for e in fs.blame(path)]


def test_every_call_is_attributed_to_its_tool_and_call_id() -> None:
    fs = InMemoryFilesystem()
    tools = filesystem_tools(fs)
    context = ToolContext(filesystem=fs, call_id="toolu_01")
    assert tools.call("write_file", {"path": "a.txt", "content": "x\n"}, context=context).success
    fs.snapshot()
    edit = {"path": "a.txt", "old_string": "x", "new_string": "y"}
    with attributed(Cause.call(label="agent-7")):  # the caller's label joins the call's
        assert tools.call("edit_file", edit, context=ToolContext(filesystem=fs)).success
    assert [e.causes for e in fs.blame("a.txt")] == [
        (Cause.call("edit_file", None, "agent-7"),),
        (Cause.call("write_file", "toolu_01"),),
    ]


def test_undo_attributes_each_call_to_its_recorded_id() -> None:
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    toolset.call("write_file", {"path": "a", "content": "1"})
    toolset.call("write_file", {"path": "a", "content": "2"}, call_id="toolu_x")
    given = ToolContext(filesystem=fs, call_id="toolu_y")
    toolset.call("write_file", {"path": "b", "content": "1"}, context=given)
    assert [call.call_id for call in toolset.history] == ["call-1", "toolu_x", "toolu_y"]
    assert causes(fs, "a") == [
        [("write_file", "toolu_x")],  # undo snapshots between calls: one change each
        [("write_file", "call-1")],
    ]
    assert causes(fs, "b") == [[("write_file", "toolu_y")]]


def test_the_blame_tool_lists_changes_newest_first() -> None:
    fs = InMemoryFilesystem()
    tools = filesystem_tools(fs, blame=True)
    assert "blame" in tools.names
    assert "blame" not in filesystem_tools(fs).names

    def call(name: str, call_id: str | None = None, **arguments: object) -> str:
        result = tools.call(name, arguments, context=ToolContext(filesystem=fs, call_id=call_id))
        assert result.success, result.message
        return result.message

    call("write_file", "toolu_1", path="src/app.py", content="1\n")
    call("snapshot", tag="first")
    with attributed(Cause(pid=31, command=("sed", "-i", "s/1/2/", "src/app.py"), uid=1000)):
        fs.write("src/app.py", "2\n")
    message = call("blame", path="src/app.py")
    lines = message.splitlines()
    assert lines[0] == "`src/app.py`: 2 changes, newest first (who wrote it):"
    assert lines[1] == (
        "1. modified by pid 31 `sed -i s/1/2/ src/app.py` uid 1000 (not in a snapshot yet)"
    )
    assert lines[2].startswith("2. added by write_file call toolu_1 (snapshot `")
    assert "(tag `first`)" in lines[2]
    result = tools.call(
        "blame", {"path": "src/app.py", "limit": 1}, context=ToolContext(filesystem=fs)
    )
    assert result.message.splitlines()[-1] == "[... 1 older change not shown]"
    assert [entry.kind for entry in result.value or []] == ["modified", "added"]

    assert call("blame", path="nope.txt") == (
        "`nope.txt` does not exist and has no recorded change in the kept history."
    )
    failed = tools.call("blame", {"path": "src"}, context=ToolContext(filesystem=fs))
    assert not failed.success
    assert failed.message == "Cannot blame `src`: it is a directory."


def test_a_workspace_that_cannot_attribute_says_so(tmp_path: Path) -> None:
    host = HostFilesystem(tmp_path)
    assert "blame" not in filesystem_tools(host, blame=True).names
    result = ToolRegistry([BLAME]).call(
        "blame", {"path": "x"}, context=ToolContext(filesystem=host)
    )
    assert not result.success
    assert result.message == "This workspace does not record who changed its files."


def test_mcp_calls_are_attributed_to_their_request() -> None:
    fs = InMemoryFilesystem()

    async def session() -> list[str]:
        async with Client(create_server(fs)) as client:
            named = await client.call_tool(
                "write_file", {"path": "a", "content": "x"}, meta=call_meta("toolu_01")
            )
            unnamed = await client.call_tool("write_file", {"path": "b", "content": "y"})
            assert not named.is_error
            assert not unnamed.is_error
            return [str((r.meta or {})[CALL_ID_META]) for r in (named, unnamed)]

    # A call is attributed to the id the client gave it, else to one the server gave it,
    # which its result names.
    ids = anyio.run(session)
    assert ids[0] == "toolu_01"
    for path, call_id in zip(("a", "b"), ids, strict=True):
        ((cause,),) = [entry.causes for entry in fs.blame(path)]
        assert (cause.tool, cause.call_id) == ("write_file", call_id)
