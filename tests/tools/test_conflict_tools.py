"""Conflicts settled by tool calls alone: ``conflicts`` shows them, the ordinary file
tools edit the merge's fork, ``resolve`` finishes it all or nothing and ``abort_merge``
drops it; through the tools API and over MCP with the SDK's own client."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, types

from support.merges import State, contents, digest, three_way
from workspacefs.git import WorkspaceMerges
from workspacefs.tools import (
    ToolContext,
    ToolRegistry,
    ToolResult,
    conflict_tools,
    create_server,
    filesystem_tools,
)

LINES = b"1\n2\n3\n4\n5\n6\n7\n"
BIN = b"\0bin\n"
Call = tuple[str, dict[str, Any]]

CASES: dict[str, tuple[State, State, State, list[Call], State]] = {
    "same-line": (
        {"a": LINES},
        {"a": LINES.replace(b"4\n", b"four\n")},
        {"a": LINES.replace(b"4\n", b"vier\n"), "new": b"clean\n"},
        [
            (
                "edit_file",
                {
                    "path": "a",
                    "old_string": "<<<<<<< ours\nfour\n||||||| base\n4\n=======\nvier\n"
                    ">>>>>>> theirs\n",
                    "new_string": "four-vier\n",
                },
            )
        ],
        {"a": LINES.replace(b"4\n", b"four-vier\n"), "new": b"clean\n"},
    ),
    "delete/modify": (
        {"a": LINES, "b": b"b\n"},
        {"b": b"b\n"},
        {"a": LINES + b"8\n", "b": b"b\n"},
        [("rm", {"path": "a"})],
        {"b": b"b\n"},
    ),
    "add/add": (
        {"a": b"a\n"},
        {"a": b"a\n", "n": b"mine\n"},
        {"a": b"a\n", "n": b"theirs\n"},
        [("write_file", {"path": "n", "content": "mine and theirs\n"})],
        {"a": b"a\n", "n": b"mine and theirs\n"},
    ),
    "binary": (
        {"a": BIN + b"1"},
        {"a": BIN + b"2"},
        {"a": BIN + b"3"},
        [("resolve", {"take": {"a": "theirs"}})],
        {"a": BIN + b"3"},
    ),
    "mode": (
        {"a": LINES},
        {"a": ("x", LINES)},
        {"a": ("m", 0o600, LINES.replace(b"7\n", b"seven\n"))},
        [("resolve", {"take": {"a": "ours"}})],
        {"a": ("x", LINES.replace(b"7\n", b"seven\n"))},
    ),
    "symlink": (
        {"l": ("l", b"x"), "x": b"x\n"},
        {"l": ("l", b"y"), "x": b"x\n"},
        {"l": ("l", b"z"), "x": b"x\n"},
        [("resolve", {"take": {"l": "theirs"}})],
        {"l": ("l", b"z"), "x": b"x\n"},
    ),
}


KINDS = {
    "same-line": "content",
    "delete/modify": "delete/modify",
    "add/add": "add/add",
    "binary": "binary",
    "mode": "mode",
    "symlink": "symlink",
}
"""Each case's conflict kind."""


def _tools(merges: WorkspaceMerges) -> ToolRegistry:
    registry = filesystem_tools()
    for tool in conflict_tools(merges):
        registry.add(tool)
    return registry


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_case_table_resolved_by_tool_calls(case: str) -> None:
    base, ours, theirs, calls, expected = CASES[case]
    ws, fork = three_way(base, ours, theirs)
    merges = WorkspaceMerges.of(ws)
    opened = merges.merge(fork, hold=True, source="exp")
    assert [c.kind for c in opened.conflicts] == [KINDS[case]]
    held = merges.open
    assert held is not None
    registry = _tools(merges)
    context = ToolContext(filesystem=held.filesystem)  # the file tools act on the merge

    shown = registry.call("conflicts", {}, context=context)
    assert shown.success, shown.message
    assert f": {KINDS[case]} conflict" in shown.message
    assert shown.value is not None
    assert shown.value.unresolved == tuple(sorted({c.path for c in opened.conflicts}))
    early = registry.call("resolve", {}, context=context)
    assert not early.success
    assert early.message.startswith("Not merged, nothing changed: 1 path(s) still conflict")

    results: list[ToolResult[Any]] = [registry.call(n, a, context=context) for n, a in calls]
    assert all(r.success for r in results), [r.message for r in results]
    if calls[-1][0] != "resolve":
        done = registry.call("resolve", {}, context=context)
        assert done.success, done.message
    assert merges.open is None
    assert contents(ws) == expected


def test_the_text_hunks_are_in_the_message() -> None:
    base, ours, theirs, _, _ = CASES["same-line"]
    ws, fork = three_way(base, ours, theirs)
    merges = WorkspaceMerges.of(ws)
    merges.merge(fork, hold=True)
    held = merges.open
    assert held is not None
    shown = _tools(merges).call("conflicts", {}, context=ToolContext(filesystem=held.filesystem))
    assert shown.message.splitlines()[1:11] == [
        "a: content conflict",
        "  base: file 100644, 14 bytes",
        "  ours: file 100644, 17 bytes",
        "  theirs: file 100644, 17 bytes",
        "  hunk 1 at line 4:",
        "    base:",
        "      4",
        "    ours:",
        "      four",
        "    theirs:",
    ]


def test_abort_by_tool_leaves_the_workspace_bit_identical() -> None:
    base, ours, theirs, _, _ = CASES["same-line"]
    ws, fork = three_way(base, ours, theirs)
    before = digest(ws)
    merges = WorkspaceMerges.of(ws)
    merges.merge(fork, hold=True)
    held = merges.open
    assert held is not None
    registry = _tools(merges)
    context = ToolContext(filesystem=held.filesystem)
    assert registry.call("write_file", {"path": "a", "content": "x\n"}, context=context).success
    dropped = registry.call("abort_merge", {}, context=context)
    assert dropped.success, dropped.message
    assert digest(ws) == before
    again = registry.call("resolve", {}, context=context)
    assert not again.success
    assert "No merge is held open" in again.message


def test_a_refused_resolve_names_the_paths_and_changes_nothing() -> None:
    ws, fork = three_way(
        {"a": LINES, "b": BIN + b"1"},
        {"a": LINES.replace(b"1\n", b"one\n"), "b": BIN + b"2"},
        {"a": LINES.replace(b"1\n", b"eins\n"), "b": BIN + b"3"},
    )
    merges = WorkspaceMerges.of(ws)
    merges.merge(fork, hold=True)
    held = merges.open
    assert held is not None
    before, fork_before = digest(ws), digest(held.filesystem)
    refused = _tools(merges).call(
        "resolve", {"take": {"b": "theirs"}}, context=ToolContext(filesystem=held.filesystem)
    )
    assert not refused.success
    assert "a (conflict markers on lines 1, 3, 5, 7)" in refused.message
    assert (digest(ws), digest(held.filesystem)) == (before, fork_before)
    bad = _tools(merges).call(
        "resolve", {"take": {"b": "mine"}}, context=ToolContext(filesystem=held.filesystem)
    )
    assert not bad.success
    assert "take.b" in bad.message
    outside = _tools(merges).call(
        "resolve", {"take": {"../b": "ours"}}, context=ToolContext(filesystem=held.filesystem)
    )
    assert not outside.success
    assert "outside the workspace" in outside.message
    unknown = _tools(merges).call(
        "resolve", {"take": {"./nope": "ours"}}, context=ToolContext(filesystem=held.filesystem)
    )
    assert not unknown.success
    assert "not a conflicting path of this merge" in unknown.message
    assert (digest(ws), digest(held.filesystem)) == (before, fork_before)


def test_sides_are_taken_by_the_paths_the_other_tools_take() -> None:
    """``/workspace/b`` and ``./b`` name ``b``, as for every file tool."""
    from workspacefs import InMemoryFilesystem

    ws = InMemoryFilesystem(mount_point="/workspace")
    ws.write_bytes("b", BIN + b"1")
    ws.write_bytes("c", BIN + b"1")
    fork = ws.fork()
    ws.write_bytes("b", BIN + b"2")
    ws.write_bytes("c", BIN + b"2")
    fork.write_bytes("b", BIN + b"3")
    fork.write_bytes("c", BIN + b"3")
    merges = WorkspaceMerges.of(ws)
    merges.merge(fork, hold=True)
    held = merges.open
    assert held is not None
    done = _tools(merges).call(
        "resolve",
        {"take": {"/workspace/b": "theirs", "./c": "base"}},
        context=ToolContext(filesystem=held.filesystem),
    )
    assert done.success, done.message
    assert (ws.read_bytes("b").content, ws.read_bytes("c").content) == (BIN + b"3", BIN + b"1")


async def _over_mcp(server: Any, calls: list[Call]) -> list[types.CallToolResult]:
    async with Client(server) as client:
        return [await client.call_tool(name, arguments) for name, arguments in calls]


def test_the_whole_table_at_once_over_mcp() -> None:
    """Every case of the table in one merge, settled by an MCP client: conflicts
    (structured content too), edits, then resolve."""
    base: State = {}
    ours: State = {}
    theirs: State = {}
    expected: State = {}
    calls: list[Call] = []
    take: dict[str, str] = {}
    for number, (b, o, t, steps, e) in enumerate(CASES.values()):
        prefix = f"c{number}/"

        def moved(state: State, prefix: str = prefix) -> State:
            return {prefix + path: value for path, value in state.items()}

        base |= moved(b)
        ours |= moved(o)
        theirs |= moved(t)
        expected |= moved(e)
        for name, arguments in steps:
            if name == "resolve":
                take |= {prefix + path: side for path, side in arguments["take"].items()}
            else:
                calls.append((name, {**arguments, "path": prefix + arguments["path"]}))
    ws, fork = three_way(base, ours, theirs)
    merges = WorkspaceMerges.of(ws)
    merges.merge(fork, hold=True, source="exp")
    held = merges.open
    assert held is not None
    server = create_server(held.filesystem, tools=_tools(merges))
    results = anyio.run(
        _over_mcp, server, [("conflicts", {"hunks": False}), *calls, ("resolve", {"take": take})]
    )
    assert [r.is_error for r in results] == [False] * len(results), [
        r.content for r in results if r.is_error
    ]
    structured = results[0].structured_content
    assert structured is not None
    assert structured["source"] == "exp"
    assert sorted(c["kind"] for c in structured["conflicts"]) == sorted(KINDS.values())
    assert [s["resolved"] for s in structured["states"]] == [False] * len(CASES)
    assert results[-1].structured_content is not None
    assert results[-1].structured_content["applied"] is True
    assert contents(ws) == expected
