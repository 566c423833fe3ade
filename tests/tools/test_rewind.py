"""Rewind on every backend: the calls a workspace records, the cut point of a rewind,
other writers refused (or, forced, discarded and named), every door seeing one history:
the free functions, ``UndoableToolset``, the ``history`` and ``rewind`` tools, MCP."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, types

from workspacefs import InMemoryFilesystem, Rule
from workspacefs.fs import (
    CallTag,
    RewindResult,
    call_history,
    call_tag,
    check_tag,
    parse_call_tag,
    rewind,
)
from workspacefs.tools import (
    CALL_ID_META,
    ToolContext,
    UndoableToolset,
    create_server,
    filesystem_tools,
)

from .conftest import MakeWorkspace
from .test_mcp import _calls, _server
from .test_undo import state


def test_rewind_gives_back_each_state_and_its_cut_point(make: MakeWorkspace) -> None:
    ws = make({"base.txt": "base\n"})
    fs = ws.snapshotable()
    mine = UndoableToolset(filesystem_tools(fs, rewind=True), fs)
    theirs = UndoableToolset(filesystem_tools(fs), fs)  # another door on the same workspace
    before = {}

    def call(toolset: UndoableToolset, call_id: str, name: str, **arguments: Any) -> None:
        before[call_id] = state(fs)
        toolset.call(name, arguments, call_id=call_id)

    call(mine, "m1", "write_file", path="a.txt", content="1\n")
    call(mine, "r1", "read_file", path="a.txt")  # read-only: not recorded
    call(theirs, "o1", "write_file", path="b/c.txt", content="c\n")
    call(mine, "m2", "edit_file", path="a.txt", old_string="1", new_string="2")
    call(mine, "m3", "edit_file", path="a.txt", old_string="nope", new_string="x")  # fails
    call(theirs, "o2", "mkdir", path="d/e")
    call(mine, "m4", "rm", path="b", recursive=True)
    call(mine, "m5", "write_file", path="a.txt", content="5\n")
    assert [c.call_id for c in call_history(fs)] == ["m1", "o1", "m2", "m3", "o2", "m4", "m5"]
    assert [c.after is None for c in call_history(fs)] == [False] * 3 + [True] + [False] * 3

    # The free function, the toolset and the tool: one history, one rewind.
    assert rewind(fs, "m5").undone == ("m5",)
    assert state(fs) == before["m5"]
    result = mine.rewind("o2")  # a call of the other toolset: the cut point says so
    assert (result.call_id, result.undone) == ("o2", ("o2", "m4"))
    assert result.changes.added == ("b/c.txt",)
    assert state(fs) == before["o2"]
    assert [c.call_id for c in mine.history] == ["m1", "r1", "m2", "m3"]
    call(mine, "m6", "write_file", path="f.txt", content="f\n")
    done = mine.call("rewind", {"call_id": "m2"})
    assert done.success, done.message
    assert isinstance(done.value, RewindResult)
    assert done.value.undone == ("m2", "m3", "m6")
    assert done.message.startswith("Rewound to just before call `m2`: 3 calls undone")
    assert state(fs) == before["m2"]
    assert [c.call_id for c in mine.history] == ["m1", "r1"]  # rewind is no call of its own
    listed = mine.call("history", {})
    assert listed.value is not None
    assert [c.call_id for c in listed.value] == ["m1", "o1"]
    assert "2 recorded calls" in listed.message
    theirs.rewind("m1")
    assert state(fs) == before["m1"] == {"base.txt": b"base\n"}
    assert call_history(fs) == []
    kept = fs.snapshots()  # type: ignore[attr-defined]  # every backend here lists them
    assert not [s for s in kept if parse_call_tag(s.tag)]  # no record left behind


def test_another_writer_is_refused_then_discarded_when_forced(make: MakeWorkspace) -> None:
    ws = make({"base.txt": "base\n"})
    fs = ws.snapshotable()
    toolset = UndoableToolset(filesystem_tools(fs, rewind=True), fs)
    start = state(fs)
    toolset.call("write_file", {"path": "a.txt", "content": "a\n"}, call_id="c1")
    fs.write("between.txt", "another writer\n")  # outside any recorded call
    toolset.call("write_file", {"path": "b.txt", "content": "b\n"}, call_id="c2")
    fs.write("after.txt", "another writer\n")
    held = state(fs)
    with pytest.raises(OSError, match=r"between calls c1 and c2 \(between.txt\)") as caught:
        rewind(fs, "c1")
    assert "nothing was undone" in str(caught.value)
    with pytest.raises(OSError, match=r"after call c2 \(after.txt\), outside the recorded"):
        rewind(fs, "c2")
    assert state(fs) == held  # refused: nothing changed, nothing forgotten
    assert [c.call_id for c in call_history(fs)] == ["c1", "c2"]
    refused = toolset.call("rewind", {"call_id": "c1"})
    assert not refused.success
    assert refused.message.startswith(
        "Cannot rewind to `c1`: another writer changed the workspace between calls c1 and c2"
    )
    assert state(fs) == held
    forced = rewind(fs, "c1", force=True)
    assert forced.undone == ("c1", "c2")
    assert forced.discarded == ("after.txt", "between.txt")
    assert state(fs) == start
    assert [c.call_id for c in toolset.history] == []  # seen from the toolset too


def test_another_writer_of_hidden_paths_is_refused_without_naming_them() -> None:
    # Hidden paths are in no listing, but a change to one is a change all the same:
    # a rewind that would discard it is refused, and says so without naming it.
    fs = InMemoryFilesystem()
    fs.write(".env", "TOKEN=1\n")
    fs.rules.add(Rule(".env", "hidden"))
    toolset = UndoableToolset(filesystem_tools(fs, rewind=True), fs)
    toolset.call("write_file", {"path": "a.txt", "content": "a\n"}, call_id="c1")
    fs.rules.clear()
    fs.write(".env", "TOKEN=2\n")  # another writer, while it is not hidden
    fs.rules.add(Rule(".env", "hidden"))
    with pytest.raises(OSError, match="after call c1") as caught:
        rewind(fs, "c1")
    assert ".env" not in str(caught.value)
    assert "hidden" in str(caught.value)
    toolset.call("write_file", {"path": "b.txt", "content": "b\n"}, call_id="c2")
    with pytest.raises(OSError, match="between calls c1 and c2") as caught:
        rewind(fs, "c1")  # the hidden change is between two calls now
    assert ".env" not in str(caught.value)
    assert [c.call_id for c in call_history(fs)] == ["c1", "c2"]
    forced = rewind(fs, "c1", force=True)
    assert forced.discarded == ()
    fs.rules.clear()
    assert fs.read(".env").content == "TOKEN=1\n"


def test_a_restore_refused_for_a_hidden_change_names_no_hidden_path() -> None:
    fs = InMemoryFilesystem()
    fs.write(".env", "TOKEN=1\n")
    first = fs.snapshot()
    fs.write(".env", "TOKEN=2\n")
    fs.rules.add(Rule(".env", "hidden"))
    with pytest.raises(OSError) as caught:
        fs.restore(first, if_unchanged_since=first)
    assert ".env" not in str(caught.value)


def test_a_rewind_through_another_door_frees_the_toolsets_ids() -> None:
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    toolset.call("write_file", {"path": "a", "content": "1"}, call_id="x1")
    toolset.call("ls", {}, call_id="x2")
    toolset.call("write_file", {"path": "a", "content": "2"}, call_id="x3")
    rewind(fs, "x3")  # not through the toolset
    assert [c.call_id for c in toolset.history] == ["x1", "x2"]
    toolset.call("write_file", {"path": "a", "content": "3"}, call_id="x3")  # free again
    with pytest.raises(FileExistsError):
        toolset.call("write_file", {"path": "a", "content": "4"}, call_id="x1")
    with pytest.raises(FileExistsError):  # recorded by another toolset
        UndoableToolset(filesystem_tools(fs), fs).call("rm", {"path": "a"}, call_id="x3")
    fresh = UndoableToolset(filesystem_tools(fs), fs)
    fresh.call("write_file", {"path": "b", "content": "b"})
    fresh.call("write_file", {"path": "c", "content": "c"})
    ids = [c.call_id for c in call_history(fs)]
    assert ids == ["x1", "x3", "call-1", "call-2"]
    other = UndoableToolset(filesystem_tools(fs), fs)  # its own count skips recorded ids
    other.call("write_file", {"path": "d", "content": "d"})
    assert [c.call_id for c in call_history(fs)][-1] == "call-3"
    assert fs.read("a").content == "3"


def test_an_unknown_call_is_refused_and_changes_nothing(make: MakeWorkspace) -> None:
    ws = make()
    fs = ws.snapshotable()
    toolset = UndoableToolset(filesystem_tools(fs, rewind=True), fs)
    toolset.call("write_file", {"path": "a", "content": "1"}, call_id="w")
    toolset.call("read_file", {"path": "a"}, call_id="r")
    held = state(fs)
    for call_id in ("r", "nope", "", "w\0"):
        with pytest.raises(LookupError):
            rewind(fs, call_id)
    for arguments, why in (
        ({"call_id": "r"}, "Cannot rewind to `r`: no recorded call has this id (history"),
        ({"call_id": ""}, "`call_id`: String should have at least 1 character"),
        ({"call_id": 3}, "`call_id`: Input should be a valid string"),
        ({"call": "w"}, "`call_id`: Field required"),
    ):
        result = toolset.call("rewind", arguments)
        assert not result.success
        assert why in result.message
    assert state(fs) == held
    assert [c.call_id for c in call_history(fs)] == ["w"]


@given(st.from_regex(r"[a-z][a-z_]{0,19}", fullmatch=True), st.text(min_size=1, max_size=8))
def test_a_call_tag_spells_any_id_and_reads_it_back(tool: str, call_id: str) -> None:
    for phase in ("undo", "after"):
        tag = call_tag(tool, call_id, phase)
        assert check_tag(tag) == tag  # a tag git persistence keeps
        assert parse_call_tag(tag) == CallTag(phase, tool, call_id)


def test_an_id_too_long_for_a_tag_is_cut_yet_names_its_call_alone() -> None:
    ids = ["x" * 200 + "1", "x" * 200 + "2"]
    tags = [call_tag("write_file", call_id) for call_id in ids]
    assert tags[0] != tags[1]
    assert all(len(check_tag(tag)) <= 128 for tag in tags)
    assert [parse_call_tag(tag) for tag in tags] == [
        CallTag("undo", "write_file", "x" * (128 - len("after:write_file:") - 18) + "...")
    ] * 2
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    for number, call_id in enumerate(ids):
        toolset.call("write_file", {"path": "f", "content": str(number)}, call_id=call_id)
    assert rewind(fs, ids[1]).undone == (parse_call_tag(tags[1]).call_id,)  # type: ignore[union-attr]
    assert fs.read("f").content == "0"


@pytest.mark.parametrize("tag", [None, "", "mid", "undo:", "undo:x", "undo::y", "exec-1-before"])
def test_other_tags_name_no_call(tag: str | None) -> None:
    assert parse_call_tag(tag) is None


def _meta(call_id: object) -> types.RequestParamsMeta:
    return cast("types.RequestParamsMeta", {CALL_ID_META: call_id})


def test_mcp_offers_history_and_rewind_and_names_each_call() -> None:
    fs = InMemoryFilesystem()
    seen: dict[str, Any] = {}

    async def session() -> None:
        async with Client(create_server(fs)) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            seen["names"] = names
            first = await client.call_tool(
                "write_file", {"path": "a", "content": "1"}, meta=_meta("toolu_1")
            )
            read = await client.call_tool("read_file", {"path": "a"})
            second = await client.call_tool("write_file", {"path": "a", "content": "2"})
            seen["ids"] = [(r.meta or {})[CALL_ID_META] for r in (first, read, second)]
            again = await client.call_tool(
                "write_file", {"path": "b", "content": "x"}, meta=_meta("toolu_1")
            )
            bad = await client.call_tool("write_file", {"path": "b", "content": "x"}, meta=_meta(7))
            seen["refused"] = [(r.is_error, _text(r)) for r in (again, bad)]
            history = await client.call_tool("history", {})
            seen["history"] = history.structured_content
            done = await client.call_tool("rewind", {"call_id": seen["ids"][2]})
            seen["rewind"] = (done.is_error, done.structured_content, _text(done))
            missing = await client.call_tool("rewind", {"call_id": "toolu_9"})
            seen["missing"] = (missing.is_error, _text(missing))
            seen["after"] = (await client.call_tool("history", {})).structured_content

    anyio.run(session)
    assert seen["names"] == filesystem_tools(fs, rewind=True).names
    assert seen["ids"][0] == "toolu_1"
    assert seen["ids"][2] not in ("toolu_1", seen["ids"][1])
    assert seen["refused"] == [
        (True, "The call id 'toolu_1' is recorded already; give each call an id of its own."),
        (True, "_meta['workspacefs/call_id'] must be a non-empty string, the call's id."),
    ]
    calls = seen["history"]["result"]  # a list, wrapped as MCP wants an object
    assert [(c["call_id"], c["tool"]) for c in calls] == [
        ("toolu_1", "write_file"),
        (seen["ids"][2], "write_file"),
    ]
    assert calls[0]["before"]["tag"] == "undo:write_file:toolu_1"
    is_error, structured, text = seen["rewind"]
    assert not is_error
    assert structured["undone"] == [seen["ids"][2]]
    assert structured["changes"]["modified"] == ["a"]
    assert text.startswith(f"Rewound to just before call `{seen['ids'][2]}`")
    assert seen["missing"][0] is True
    assert "no recorded call has this id" in seen["missing"][1]
    assert [c["call_id"] for c in seen["after"]["result"]] == ["toolu_1"]  # no rewind call
    assert fs.read("a").content == "1"
    assert not fs.exists("b")


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_workspace_that_cannot_record_serves_no_rewind() -> None:
    fs = InMemoryFilesystem()
    view = fs.at(fs.snapshot())
    assert "rewind" not in filesystem_tools(view, rewind=True).names

    async def session() -> list[str]:
        async with Client(create_server(view)) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert "rewind" not in anyio.run(session)
    result = filesystem_tools(rewind=True).call("history", {}, context=ToolContext(filesystem=view))
    assert not result.success
    assert result.message == "This workspace does not record tool calls (it cannot take snapshots)."


def test_mcp_on_a_host_directory_rewinds_unless_told_not_to(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("edit_file", {"path": "main.py", "old_string": "hi", "new_string": "hello"}),
        ("write_file", {"path": "new.txt", "content": "new\n"}),
        ("history", {}),
        ("rewind", {"call_id": "call-1"}),  # the server names calls ``call-<n>``
    ]
    names, results = anyio.run(_calls, _server("--host", str(root), "--rewind"), calls)
    assert {"history", "rewind"} <= set(names)
    assert results[2][1].splitlines()[1:] == [
        "1. `call-1` edit_file: changed the workspace",
        "2. `call-2` write_file: changed the workspace",
    ]
    assert results[3][1].startswith("Rewound to just before call `call-1`: 2 calls undone")
    assert (root / "main.py").read_text() == "print('hi')\n"  # back, in place
    assert not (root / "new.txt").exists()

    names, results = anyio.run(_calls, _server("--host", str(root)), calls[:2])  # the default
    assert names == filesystem_tools().names
    assert [error for error, _ in results] == [False, False]
    assert (root / "new.txt").read_text() == "new\n"
