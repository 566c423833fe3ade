"""Over a daemon's client the built-in tools run in the daemon: one request a call.

Counted at the client's transport (its real connection pool), and compared
with the same tools run in the client on the same daemon, step by step over
the wire, as they ran before.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from workspacefs import AlreadyExistsError, Cause, InvalidArgumentError, attributed
from workspacefs.daemon import RemoteFilesystem
from workspacefs.tools import (
    Tool,
    ToolContext,
    ToolParams,
    ToolResult,
    UndoableToolset,
    filesystem_tools,
)

from .conftest import RemoteDaemons
from .test_reads import png

pytestmark = pytest.mark.fuse

FILES: dict[str, str | bytes] = {
    "src/app.py": "def main():\n    return 1\n\n\ndef helper():\n    return 2\n",
    "src/util.py": "VALUE = 1\n",
    "docs/readme.md": "# app\n\nSee src/app.py.\n",
    "logo.png": png(3, 2),
}

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("ls", {"path": "src"}),
    ("stat", {"path": "src/app.py"}),
    ("read_file", {"path": "src/app.py", "offset": 2, "limit": 2}),
    ("read_files", {"paths": ["src/util.py", "docs/readme.md"]}),
    ("read_bytes", {"path": "logo.png"}),
    ("glob", {"pattern": "**/*.py"}),
    ("grep", {"pattern": "return", "glob": "*.py"}),
    ("write_file", {"path": "notes/todo.md", "content": "- ship\n"}),
    ("edit_file", {"path": "src/app.py", "old_string": "return 1", "new_string": "return 10"}),
    (
        "multi_edit",
        {
            "path": "src/util.py",
            "edits": [{"old_string": "VALUE = 1", "new_string": "VALUE = 2"}],
        },
    ),
    ("mkdir", {"path": "build/out"}),
    ("mv", {"source": "notes/todo.md", "destination": "docs/todo.md"}),
    ("rm", {"path": "build", "recursive": True}),
    ("read_file", {"path": "missing.txt"}),  # refused
    ("edit_file", {"path": "src/app.py", "old_string": "return", "new_string": "x"}),
    ("read_file", {"limit": "x"}),  # invalid arguments
]


class Counted:
    """The number of requests a client's connection pool has sent."""

    def __init__(self) -> None:
        self.requests = 0


@contextlib.contextmanager
def counting(fs: RemoteFilesystem) -> Iterator[Counted]:
    """Count what ``fs`` sends its daemon, at its transport."""
    pool = fs._connection.pool
    post = pool.post
    counted = Counted()

    def counting_post(*args: Any, **kwargs: Any) -> Any:
        counted.requests += 1
        return post(*args, **kwargs)

    pool.post = counting_post  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        del pool.post


class _InClient:
    """A daemon's client without ``call_tool``: the tools run here, a verb at a time."""

    def __init__(self, fs: RemoteFilesystem) -> None:
        self._fs = fs

    def __getattr__(self, name: str) -> Any:
        if name == "call_tool":
            raise AttributeError(name)
        return getattr(self._fs, name)


def _fresh(daemons: RemoteDaemons) -> RemoteFilesystem:
    fs = daemons.fresh()
    for path, content in FILES.items():
        data = content.encode() if isinstance(content, str) else content
        fs.write_bytes(path, data)
    return fs


def _run(fs: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[ToolResult[Any]]:
    tools = filesystem_tools()
    return [tools.call(name, args, context=ToolContext(filesystem=fs)) for name, args in calls]


def _comparable(result: ToolResult[Any]) -> tuple[Any, ...]:
    """A result without the times of the files (written anew in each run)."""
    value: Any = result.value
    if hasattr(value, "modified_at"):
        value = dataclasses.replace(value, modified_at=None, created_at=None)
    lines = result.message.splitlines()
    message = [line for line in lines if not line.startswith(("created:", "modified:"))]
    return (message, value, result.success, result.attachments)


def test_a_tool_call_over_a_daemon_is_one_request(remote_daemons: RemoteDaemons) -> None:
    fs = _fresh(remote_daemons)
    try:
        tools = filesystem_tools(fs)
        for name, arguments in CALLS:
            with counting(fs) as counted:
                tools.call(name, arguments, context=ToolContext(filesystem=fs))
            # Arguments the model refuses are refused here, as the daemon would: no request.
            expected = 0 if arguments == {"limit": "x"} else 1
            assert counted.requests == expected, name
    finally:
        fs.close()


def test_the_daemon_answers_as_the_tools_run_in_the_client(remote_daemons: RemoteDaemons) -> None:
    fs = _fresh(remote_daemons)
    try:
        there = _run(fs, CALLS)
    finally:
        fs.close()
    fs = _fresh(remote_daemons)
    try:
        here = _run(_InClient(fs), CALLS)
    finally:
        fs.close()
    assert [_comparable(r) for r in there] == [_comparable(r) for r in here]
    assert not there[-1].success
    assert "`limit`" in there[-1].message
    assert there[4].attachments[0].data == FILES["logo.png"]


def test_a_recorded_call_is_one_request_with_the_same_record(
    remote_daemons: RemoteDaemons,
) -> None:
    fs = _fresh(remote_daemons)
    try:
        toolset = UndoableToolset(filesystem_tools(fs, rewind=True), fs)
        toolset.call("read_file", {"path": "src/util.py"})  # reads the record's ids once
        for name, arguments in CALLS[7:13]:
            with counting(fs) as counted:
                assert toolset.call(name, arguments).success, name
            assert counted.requests == 1, name
        history = toolset.history
        assert [call.call_id for call in history] == [f"call-{n}" for n in range(1, 8)]
        assert history[0].before is None  # read-only: no snapshot
        recorded = [(call.call_id, call.tool) for call in fs.call_history()]
        assert recorded == [(call.call_id, call.tool) for call in history[1:]]
        assert [call.before for call in fs.call_history()] == [c.before for c in history[1:]]
        # Each call's changes are blamed on it, as in process.
        causes = [[(c.tool, c.call_id) for c in e.causes] for e in fs.blame("src/app.py")]
        assert causes[0] == [("edit_file", "call-3")]
        # The latest call that changed a file (rm took directories only): mv, and rm after it.
        assert toolset.undo() is history[-2]
        assert fs.exists("notes/todo.md")
        assert fs.exists("build/out")
        with pytest.raises(AlreadyExistsError):
            toolset.call("write_file", {"path": "x", "content": "x"}, call_id="call-2")
    finally:
        fs.close()


def test_the_callers_cause_joins_the_calls(remote_daemons: RemoteDaemons) -> None:
    fs = _fresh(remote_daemons)
    try:
        fs.snapshot()  # what made the files is blamed apart
        tools = filesystem_tools(fs)
        edit = {"path": "src/util.py", "old_string": "VALUE = 1", "new_string": "VALUE = 3"}
        with attributed(Cause.call(label="agent-7")):
            assert tools.call("edit_file", edit, context=ToolContext(filesystem=fs)).success
        context = ToolContext(filesystem=fs, call_id="toolu_01")
        assert tools.call("write_file", {"path": "a.txt", "content": "a\n"}, context=context)
        assert fs.blame("src/util.py")[0].causes == (Cause.call("edit_file", None, "agent-7"),)
        assert [e.causes for e in fs.blame("a.txt")] == [(Cause.call("write_file", "toolu_01"),)]
    finally:
        fs.close()


class _Params(ToolParams):
    path: str = "."


def _mine(params: _Params, *, context: ToolContext) -> ToolResult[str]:
    return ToolResult.ok(f"mine: {context.workspace().exists(params.path)}")


def test_a_tool_of_the_callers_own_runs_in_the_caller(remote_daemons: RemoteDaemons) -> None:
    fs = _fresh(remote_daemons)
    try:
        own = Tool("ls", "Mine.", _Params, _mine)  # a built-in's name, not the built-in
        with counting(fs) as counted:
            result = own.invoke({"path": "src"}, context=ToolContext(filesystem=fs))
        assert result.message == "mine: True"
        assert counted.requests == 1  # its own ``exists``
    finally:
        fs.close()


def test_the_verb_refuses_what_is_no_call(remote_daemons: RemoteDaemons) -> None:
    fs = _fresh(remote_daemons)
    try:
        answer = fs.call_tool("cat", {"path": "src/app.py"})
        assert not answer.success
        assert answer.message.startswith("There is no tool named 'cat'; the tools are: ls, ")
        answer = fs.call_tool("read_file", {"path": "src/app.py", "limit": 0})
        assert not answer.success
        assert answer.value is None
        with pytest.raises(InvalidArgumentError, match="arguments"):
            fs._connection.request("call_tool", {"tool": "ls", "arguments": [1, 2]})
        with pytest.raises(InvalidArgumentError, match="takes no argument 'cwd'"):
            fs._connection.request("call_tool", {"tool": "ls", "cwd": "/"})
        first = {"path": "a", "content": "1"}
        fs.call_tool("write_file", first, call_id="toolu_1", record=True)
        second = {"path": "a", "content": "2"}
        with pytest.raises(AlreadyExistsError):
            fs.call_tool("write_file", second, call_id="toolu_1", record=True)
        assert fs.read("a").content == "1"  # refused: nothing written
        assert fs.call_tool("read_file", {"path": "a"}).message == "     1\t1"  # still serving
    finally:
        fs.close()
