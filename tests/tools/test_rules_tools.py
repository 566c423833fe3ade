"""Access rules through the agent tools: each changing tool refused with a failed result
naming the rule, nothing changed, the denial kept with the call; hidden paths absent
from every reading tool; a tool's own rules; ``blame`` showing the denials; MCP."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, types

from support.rules import picture
from workspacefs import Cause, InMemoryFilesystem, Rule
from workspacefs.tools import ToolContext, create_server, filesystem_tools

READ_ONLY = Rule(".git")
HIDDEN = Rule(".env", "hidden")
QUOTA = Rule("logs/**", "quota", quota=16)


def workspace(*rules: Rule) -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write(".git/config", "[core]\n\tbare = false\n")
    fs.write(".env", "TOKEN=hunter2\n")
    fs.write("src/app.py", "print(1)\n")
    fs.write("logs/a.log", "0123456789")
    fs.rules.set(rules)
    return fs


EDIT = {"path": ".git/config", "old_string": "false", "new_string": "true"}
# (tool, arguments, rule, path the denial names)
CALLS: list[tuple[str, dict[str, Any], Rule, str]] = [
    ("write_file", {"path": ".git/config", "content": "x"}, READ_ONLY, ".git/config"),
    ("write_file", {"path": ".git/hooks/post", "content": "x"}, READ_ONLY, ".git/hooks/post"),
    ("edit_file", EDIT, READ_ONLY, ".git/config"),
    (
        "multi_edit",
        {"path": ".git/config", "edits": [{"old_string": "false", "new_string": "true"}]},
        READ_ONLY,
        ".git/config",
    ),
    ("rm", {"path": ".git/config"}, READ_ONLY, ".git/config"),
    ("rm", {"path": ".git", "recursive": True}, READ_ONLY, ".git"),
    ("mv", {"source": ".git/config", "destination": "config"}, READ_ONLY, ".git/config"),
    ("mv", {"source": "src/app.py", "destination": ".git/app.py"}, READ_ONLY, ".git/app.py"),
    ("mkdir", {"path": ".git/refs/heads"}, READ_ONLY, ".git/refs/heads"),
    ("write_file", {"path": ".env", "content": "TOKEN=mine\n"}, HIDDEN, ".env"),
    ("mv", {"source": "src/app.py", "destination": ".env"}, HIDDEN, ".env"),
    ("write_file", {"path": "logs/b.log", "content": "x" * 7}, QUOTA, "logs/b.log"),
    ("write_file", {"path": "logs/a.log", "content": "x" * 17}, QUOTA, "logs/a.log"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "rule", "path"),
    CALLS,
    ids=[f"{c[0]}-{c[3]}-{c[2].mode}" for c in CALLS],
)
def test_every_changing_tool_is_refused(
    tool: str, arguments: dict[str, Any], rule: Rule, path: str
) -> None:
    fs = workspace(rule)
    tools = filesystem_tools(fs)
    before = picture(fs)
    result = tools.call(tool, arguments, context=ToolContext(filesystem=fs, call_id="toolu_5"))
    assert not result.success
    assert rule.describe() in result.message, result.message
    assert "nothing was changed" in result.message
    assert picture(fs) == before
    (denial,) = fs.denials()
    assert denial.path == path
    assert denial.rule == rule
    assert denial.cause == Cause.call(tool, "toolu_5")


def test_hidden_paths_are_absent_from_every_reading_tool() -> None:
    fs = workspace(HIDDEN)
    tools = filesystem_tools(fs)
    context = ToolContext(filesystem=fs)

    def run(tool: str, **arguments: Any) -> str:
        return tools.call(tool, arguments, context=context).message

    for tool, arguments in (
        ("read_file", {"path": ".env"}),
        ("read_bytes", {"path": ".env"}),
        ("stat", {"path": ".env"}),
        ("read_files", {"paths": [".env", "src/app.py"]}),
        ("grep", {"pattern": "TOKEN", "path": ".env"}),
    ):
        message = run(tool, **arguments)
        assert "hunter2" not in message
        assert "no such file" in message, (tool, message)
    for tool, arguments in (
        ("ls", {"path": "."}),
        ("glob", {"pattern": ".*"}),
        ("glob", {"pattern": "**"}),
        ("grep", {"pattern": "TOKEN"}),
    ):
        message = run(tool, **arguments)
        assert ".env" not in message, (tool, message)
        assert "hunter2" not in message


def test_hidden_paths_are_absent_from_what_changed() -> None:
    fs = workspace()
    fs.snapshot(tag="start")
    fs.write(".env", "TOKEN=changed\n")
    fs.write("src/app.py", "print(2)\n")
    fs.snapshot(tag="later")
    fs.rules.set([HIDDEN])
    tools = filesystem_tools(fs, blame=True)
    context = ToolContext(filesystem=fs, call_id="toolu_8")
    for tool, arguments in (
        ("diff", {"from": "start"}),
        ("diff", {"from": "start", "to": "later", "path": "."}),
        ("blame", {"path": ".env"}),
    ):
        result = tools.call(tool, arguments, context=context)
        assert ".env" not in result.message.replace("`.env`", ""), (tool, result.message)
        assert "hunter2" not in result.message
        assert "changed" not in result.message.replace("changed by", "")
    shown = tools.call("diff", {"from": "start"}, context=context).message
    assert "src/app.py" in shown


def test_a_tools_own_rules() -> None:
    fs = workspace(Rule("src/**", tool="write_file"), Rule(".env", "hidden", tool="read_file"))
    tools = filesystem_tools(fs)
    context = ToolContext(filesystem=fs, call_id="toolu_6")
    refused = tools.call("write_file", {"path": "src/app.py", "content": "x"}, context=context)
    assert not refused.success
    assert "for tool write_file" in refused.message
    edit = {"path": "src/app.py", "old_string": "1", "new_string": "2"}
    assert tools.call("edit_file", edit, context=context).success
    assert not tools.call("read_file", {"path": ".env"}, context=context).success
    assert tools.call("grep", {"pattern": "TOKEN"}, context=context).value


def test_blame_shows_the_denials() -> None:
    fs = workspace(READ_ONLY)
    tools = filesystem_tools(fs, blame=True)
    context = ToolContext(filesystem=fs, call_id="toolu_7")
    tools.call("write_file", {"path": ".git/config", "content": "x"}, context=context)
    message = tools.call("blame", {"path": ".git/config"}, context=context).message
    lines = message.splitlines()
    assert lines[-2] == "Refused by access rules (1 time, latest last):"
    assert lines[-1].startswith(
        "- write of `.git/config` refused by workspace rule read-only '.git' (EACCES), "
        "tried by write_file call toolu_7"
    )


def test_refused_over_mcp() -> None:
    fs = workspace(READ_ONLY)
    before = picture(fs)

    async def session() -> types.CallToolResult:
        async with Client(create_server(fs)) as client:
            return await client.call_tool("write_file", {"path": ".git/config", "content": "x"})

    result = anyio.run(session)
    assert result.is_error
    text = "".join(part.text for part in result.content if isinstance(part, types.TextContent))
    assert "read-only '.git'" in text
    assert picture(fs) == before
    (denial,) = fs.denials()
    assert denial.cause is not None
    assert denial.cause.tool == "write_file"
