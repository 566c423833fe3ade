"""The MCP server in a subprocess, driven by the SDK's own client over stdio."""

from __future__ import annotations

import base64
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

import workspacefs
from support.daemon import cli
from workspacefs import InMemoryFilesystem
from workspacefs.cli import EXIT_FAILED, EXIT_USAGE
from workspacefs.tools import (
    FILE_TOOLS,
    Tool,
    ToolContext,
    ToolParams,
    ToolResult,
    UndoableToolset,
    create_server,
    filesystem_tools,
)

from .conftest import RemoteDaemons
from .test_reads import png

SOURCE_ROOT = str(Path(workspacefs.__file__).resolve().parents[1])


def _text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _server(*args: str) -> StdioServerParameters:
    """``workspacefs mcp ARGS``, for the SDK's client."""
    path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
    env = {"PYTHONPATH": path}
    if "XDG_RUNTIME_DIR" in os.environ:
        # A daemon's record is in this runtime directory (the SDK passes on no more of the
        # environment than a shell's basics).
        env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"]
    return StdioServerParameters(
        command=sys.executable, args=["-m", "workspacefs.cli", "mcp", *args], env=env
    )


async def _calls(
    server: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[list[str], list[tuple[bool, str]]]:
    """The names of the tools ``server`` lists, and whether each of ``calls`` failed and
    what it answered."""
    async with Client(server, read_timeout_seconds=60) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        results = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            results.append((result.is_error, _text(result)))
    return names, results


async def _scenario(project: Path) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with Client(_server("--from", str(project)), read_timeout_seconds=60) as client:
        listed = (await client.list_tools()).tools
        seen["names"] = [tool.name for tool in listed]
        seen["tools"] = {tool.name: tool for tool in listed}

        async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
            result = await client.call_tool(name, arguments)
            return result.is_error, _text(result)

        steps: list[tuple[str, dict[str, Any]]] = [
            ("ls", {"path": "."}),
            ("read_file", {"path": "/workspace/main.py"}),
            ("write_file", {"path": "notes/todo.md", "content": "- ship\n"}),
            ("snapshot", {"tag": "before-edit"}),
            ("edit_file", {"path": "main.py", "old_string": "hi", "new_string": "hello"}),
            ("glob", {"pattern": "**/*.md"}),
            ("grep", {"pattern": "hello"}),
            ("diff", {"from": "before-edit"}),
            ("rm", {"path": "notes", "recursive": True}),
            ("restore", {"id_or_tag": "before-edit"}),
            ("read_file", {"path": "notes/todo.md"}),
        ]
        seen["steps"] = [await call(name, arguments) for name, arguments in steps]
        seen["missing"] = await call("read_file", {"path": "missing.txt"})
        seen["invalid"] = await call("read_file", {"limit": "x"})
        seen["unknown"] = await call("cat", {})
        seen["still_serving"] = await call("read_file", {"path": "main.py"})
        seen["image"] = (await client.call_tool("read_bytes", {"path": "logo.png"})).content
    return seen


@pytest.mark.fuse
def test_mcp_command_on_a_running_daemon(remote_daemons: RemoteDaemons) -> None:
    fs = remote_daemons.fresh()
    try:
        fs.write("notes.md", "written through the daemon\n")
        names, results = anyio.run(
            _calls,
            _server(fs.mountpoint),
            [
                ("read_file", {"path": "notes.md"}),
                ("read_file", {"path": f"{fs.mountpoint}/notes.md"}),
                ("write_file", {"path": "from-mcp.txt", "content": "mcp\n"}),
                ("read_file", {"path": "missing.txt"}),
            ],
        )
        assert names == filesystem_tools(fs, rewind=True).names
        assert "snapshot" in names  # the daemon's workspace takes snapshots
        assert "rewind" in names  # and records the calls
        assert results == [
            (False, "     1\twritten through the daemon"),
            (False, "     1\twritten through the daemon"),
            (False, "Wrote `from-mcp.txt` (1 line, 4 bytes)."),
            (True, "Cannot read `missing.txt`: no such file or directory."),
        ]
        assert fs.read("from-mcp.txt").content == "mcp\n"
        assert Path(fs.mountpoint, "from-mcp.txt").read_text() == "mcp\n"
    finally:
        fs.close()


@pytest.mark.fuse
def test_mcp_refuses_to_reshape_a_running_workspace(
    remote_daemons: RemoteDaemons, tmp_path: Path
) -> None:
    """The options that make the fresh workspace are a usage error with a running one (it
    was made by ``workspacefs mount``), not silently ignored; the workspace is unchanged."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "planted.txt").write_text("not for the running workspace\n")
    fs = remote_daemons.fresh()
    try:
        refused = cli("mcp", fs.mountpoint, "--from", str(project))
        assert refused.returncode == EXIT_USAGE, refused.stderr
        assert "MOUNTPOINT and --from name two workspaces; give one" in refused.stderr
        refused = cli("mcp", fs.mountpoint, "--mount-point", "/srv", "--read-only")
        assert refused.returncode == EXIT_USAGE, refused.stderr
        assert "--mount-point, --read-only shape a fresh workspace" in refused.stderr
        assert refused.stdout == ""
        assert not fs.exists("planted.txt")
        fs.write("still.txt", "writable\n")  # not made read-only either
    finally:
        fs.close()


def test_mcp_says_in_one_line_what_cannot_make_the_fresh_workspace(tmp_path: Path) -> None:
    for args, message in (
        (["--from", str(tmp_path / "missing")], "--from: no such file or directory"),
        (["--host", str(tmp_path / "missing")], "workspace root is not a directory"),
        (["--mount-point", "relative"], "mount point must be an absolute path"),
    ):
        refused = cli("mcp", *args)
        assert refused.returncode == EXIT_FAILED, refused.stderr
        assert refused.stderr.startswith("workspacefs: error: ")
        assert message in refused.stderr
        assert refused.stderr.count("\n") == 1
        assert refused.stdout == ""  # nothing was served


def test_mcp_options_make_the_fresh_workspace(tmp_path: Path) -> None:
    """``--from``, ``--mount-point`` and ``--read-only``, as a client sees them."""
    first = tmp_path / "first"
    (first / "src").mkdir(parents=True)
    (first / "src" / "app.py").write_text("print('app')\n")
    (first / "README.md").write_text("# second\n")
    args = ["--from", str(first), "--mount-point", "/srv/project"]
    names, results = anyio.run(
        _calls,
        _server(*args, "--read-only"),
        [
            ("read_file", {"path": "/srv/project/src/app.py"}),
            ("read_file", {"path": "README.md"}),
            ("read_file", {"path": "/workspace/README.md"}),
            ("write_file", {"path": "new.txt", "content": "x\n"}),
            ("edit_file", {"path": "README.md", "old_string": "second", "new_string": "2"}),
            ("read_file", {"path": "README.md"}),
        ],
    )
    # A read-only workspace is a frozen state: no snapshot tools, which would restore it.
    assert names == [tool.name for tool in FILE_TOOLS]
    assert results[:2] == [(False, "     1\tprint('app')"), (False, "     1\t# second")]
    assert results[2:] == [
        (
            True,
            "Cannot read `/workspace/README.md`: it is outside the workspace (absolute path "
            "outside the mount point /srv/project).",
        ),
        (True, "Cannot write `new.txt`: the workspace is read-only."),
        (True, "Cannot edit `README.md`: the workspace is read-only."),
        (False, "     1\t# second"),
    ]
    # Without --read-only the same workspace takes writes, at the path it is given.
    _, results = anyio.run(
        _calls,
        _server(*args),
        [
            ("write_file", {"path": "/srv/project/new.txt", "content": "x\n"}),
            ("read_file", {"path": "new.txt"}),
        ],
    )
    assert results == [(False, "Wrote `new.txt` (1 line, 2 bytes)."), (False, "     1\tx")]


def test_mcp_server_over_stdio(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("print('hi')\n")
    (project / "logo.png").write_bytes(png(2, 2))
    seen = anyio.run(_scenario, project)

    assert seen["names"] == filesystem_tools(rewind=True).names
    exported = {entry["name"]: entry for entry in filesystem_tools(rewind=True).anthropic_schemas()}
    for name, tool in seen["tools"].items():
        assert tool.input_schema == exported[name]["input_schema"]
        assert tool.description == exported[name]["description"]
    hints = {
        name: (
            t.annotations.read_only_hint,
            t.annotations.destructive_hint,
            t.annotations.idempotent_hint,
        )
        for name, t in seen["tools"].items()
    }
    assert hints["read_file"] == (True, False, True)
    assert hints["rm"] == (False, True, True)
    assert hints["write_file"] == (False, True, False)
    assert hints["snapshot"] == (False, False, False)

    errors = [is_error for is_error, _ in seen["steps"]]
    assert errors == [False] * len(errors), seen["steps"]
    texts = [text for _, text in seen["steps"]]
    assert "file            12  main.py" in texts[0]
    assert texts[1] == "     1\tprint('hi')"
    assert texts[2] == "Wrote `notes/todo.md` (1 line, 7 bytes)."
    assert "(tag `before-edit`)" in texts[3]
    assert "     1\tprint('hello')" in texts[4]
    assert texts[5].endswith("notes/todo.md")
    assert texts[6].splitlines()[1] == "main.py:1: print('hello')"
    assert "+print('hello')" in texts[7]
    assert texts[8].startswith("Removed directory `notes`")
    assert "Undid the changes since it (2 files: 1 modified, 1 deleted)" in texts[9]
    assert texts[10] == "     1\t- ship"

    assert seen["missing"] == (True, "Cannot read `missing.txt`: no such file or directory.")
    is_error, text = seen["invalid"]
    assert is_error
    assert "`path`: Field required" in text
    assert "`limit`" in text
    is_error, text = seen["unknown"]
    assert is_error
    assert text.startswith("There is no tool named 'cat'")
    assert seen["still_serving"] == (False, "     1\tprint('hi')")
    text, image = seen["image"]
    assert isinstance(text, types.TextContent)
    assert text.text == f"`logo.png`: image/png, {len(png(2, 2))} bytes, attached as image content."
    assert isinstance(image, types.ImageContent)
    assert (image.mime_type, base64.b64decode(image.data)) == ("image/png", png(2, 2))


class _BoomParams(ToolParams):
    pass


def _boom(params: _BoomParams, *, context: ToolContext) -> ToolResult[None]:
    raise RuntimeError("handler bug")


async def _in_process(server: Any) -> list[tuple[bool, str]]:
    async with Client(server) as client:
        out = []
        for name, arguments in [
            ("boom", {}),
            ("write_file", {"path": "a", "content": "x"}),
            ("ls", {}),
        ]:
            result = await client.call_tool(name, arguments)
            out.append((result.is_error, _text(result)))
        return out


@pytest.mark.logs_errors("tool boom failed")
def test_a_handler_bug_is_an_error_result_not_a_dead_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fs = InMemoryFilesystem()
    registry = filesystem_tools(fs)
    registry.add(Tool("boom", "Fails.", _BoomParams, _boom))
    toolset = UndoableToolset(registry, fs)
    with caplog.at_level(logging.ERROR):
        out = anyio.run(_in_process, create_server(fs, tools=toolset))
    assert out[0] == (True, "boom failed with an internal error: RuntimeError('handler bug')")
    assert out[1][0] is False
    assert "file             1  a" in out[2][1]
    assert "tool boom failed" in caplog.text
    assert [call.tool for call in toolset.history] == ["boom", "write_file", "ls"]
    assert toolset.history[1].before is not None


def test_mcp_host_works_on_the_directory_in_place(tmp_path: Path) -> None:
    """``--host DIR``: every change lands in DIR at once; snapshots (git commits kept
    outside DIR) restore it."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    names, results = anyio.run(
        _calls,
        _server("--host", str(root)),
        [
            ("snapshot", {"tag": "start"}),
            ("edit_file", {"path": "main.py", "old_string": "hi", "new_string": "hello"}),
            ("mv", {"source": "main.py", "destination": "app/main.py"}),
            ("read_file", {"path": "/workspace/app/main.py"}),
            ("restore", {"id_or_tag": "start"}),
            ("write_file", {"path": "../outside.txt", "content": "x"}),
        ],
    )
    assert "snapshot" in names
    assert [error for error, _ in results] == [False, False, False, False, False, True]
    assert results[3][1] == "     1\tprint('hello')"
    assert "outside the workspace" in results[5][1]
    assert (root / "main.py").read_text() == "print('hi')\n"  # restored, in place
    assert not (root / "app/main.py").exists()
    assert not (tmp_path / "outside.txt").exists()
