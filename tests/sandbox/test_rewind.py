"""Rewind, end to end: an agent session of 33 calls driven by the MCP SDK's own client,
file tools and ``shell`` commands (one real container) interleaved; then five rewinds,
more calls between them, each giving back the workspace byte for byte as it was before
the call and the calls undone, oldest first.

Twice: on an in-memory workspace the sandbox mounts itself (rewinds through the MCP
``rewind`` tool and headless), and on a running workspace reached with ``connect()``,
its daemon's mount bound into the container (rewinds through MCP, another ``connect()``
client and ``workspacefs rewind``).
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client, types

from support.daemon import Daemons, cli_json, private_runtime
from workspacefs import InMemoryFilesystem, SnapshotableFilesystem
from workspacefs.daemon import RemoteFilesystem, connect
from workspacefs.fs import Filesystem, call_history, rewind
from workspacefs.sandbox import PodmanSandbox, shell_tool
from workspacefs.tools import CALL_ID_META, ToolRegistry, UndoableToolset, create_server
from workspacefs.tools import filesystem_tools as tools_of

from .conftest import closed_cleanly, container_names

pytestmark = pytest.mark.container

Call = tuple[str, dict[str, Any]]

SESSION: list[Call] = [
    ("write_file", {"path": "notes.md", "content": "# notes\n- one\n"}),
    ("shell", {"command": "mkdir -p src && printf 'print(1)\\n' > src/app.py"}),
    ("read_file", {"path": "src/app.py"}),  # read-only: never recorded
    ("edit_file", {"path": "notes.md", "old_string": "- one", "new_string": "- one\n- two"}),
    ("shell", {"command": "chmod 755 src/app.py && ln -s src/app.py run"}),
    ("write_file", {"path": "data.bin", "content": "placeholder"}),
    ("shell", {"command": "printf '\\000\\001\\377binary' > data.bin"}),
    ("mkdir", {"path": "empty/dir"}),  # a directory alone: no file changes
    ("edit_file", {"path": "notes.md", "old_string": "absent", "new_string": "x"}),  # fails
    ("shell", {"command": "echo log >> build.log; exit 3"}),  # fails, having written
    ("mv", {"source": "src/app.py", "destination": "src/main.py"}),
    ("ls", {"path": "src"}),
    ("shell", {"command": "sed -i 's/1/2/' src/main.py && cp notes.md notes.bak"}),
    ("snapshot", {"tag": "middle"}),
    ("multi_edit", {"path": "notes.md", "edits": [{"old_string": "# notes", "new_string": "# N"}]}),
    ("shell", {"command": "rm -f notes.bak && mkdir -p out && echo built > out/a.txt"}),
    ("grep", {"pattern": "built"}),
    ("write_file", {"path": "out/b.txt", "content": "b\n"}),
    ("shell", {"command": "true"}),  # changes nothing
    ("rm", {"path": "empty", "recursive": True}),
    ("shell", {"command": "cat out/*.txt > out/all.txt"}),
    ("write_file", {"path": "notes.md", "content": "rewritten\n", "mode": "append"}),
    ("restore", {"id_or_tag": "middle"}),
    ("shell", {"command": "touch -d @0 notes.md && echo after-restore > r.txt"}),
    ("edit_file", {"path": "r.txt", "old_string": "after", "new_string": "past"}),
    ("shell", {"command": "mkdir -p deep/a/b && echo d > deep/a/b/c.txt"}),
    ("glob", {"pattern": "**/*.txt"}),
    ("write_file", {"path": "deep/a/e.txt", "content": "e\n"}),
    ("shell", {"command": "rm -rf deep/a/b && chmod 600 notes.md"}),
    ("rm", {"path": "r.txt"}),
    ("shell", {"command": "printf 'tail\\n' >> notes.md"}),
    ("write_file", {"path": "final.txt", "content": "final\n"}),
    ("shell", {"command": "ls -la > listing.txt"}),
]
"""33 calls: 13 shell commands and 20 tool calls (4 read-only), 2 failing, in a realistic mix."""

MORE: list[Call] = [
    ("write_file", {"path": "later.txt", "content": "later\n"}),
    ("shell", {"command": "echo again >> later.txt && mkdir -p later"}),
    ("edit_file", {"path": "later.txt", "old_string": "later", "new_string": "LATER"}),
]
"""Calls made after a rewind, before the next one."""

REWINDS = ["t32", "t27", "t22", "t12", "t03"]
"""Five calls to rewind to in turn (tool calls and shell commands), newest first; MORE is
called after each of the first three, so their cut points hold calls made after a rewind."""

State = dict[str, tuple[object, ...]]


def state(fs: Filesystem) -> State:
    """Every entry below the root: kind and mode, a file's bytes, a link's target."""
    found: State = {}
    pending = ["."]
    while pending:
        for entry in fs.list(pending.pop()):
            if entry.is_symlink:
                found[entry.path] = ("link", fs.readlink(entry.path))
                continue
            mode = fs.stat(entry.path).mode
            if entry.is_directory:
                found[entry.path] = ("dir", mode)
                pending.append(entry.path)
            else:
                found[entry.path] = ("file", mode, fs.read_bytes(entry.path).content)
    return found


def registry(fs: SnapshotableFilesystem, sandbox: PodmanSandbox[Any]) -> ToolRegistry:
    tools = tools_of(fs, rewind=True)
    tools.add(shell_tool(sandbox))
    return tools


@dataclass
class Session:
    """Drives the calls through an MCP client and keeps what the test expects: the
    state before each call, and the recorded calls (the workspace's history)."""

    client: Client
    fs: SnapshotableFilesystem
    tools: ToolRegistry
    before: dict[str, State] = field(default_factory=dict)
    recorded: list[str] = field(default_factory=list)
    numbers: int = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        call_id = f"t{self.numbers:02d}"
        self.numbers += 1
        self.before[call_id] = state(self.fs)
        meta = cast("types.RequestParamsMeta", {CALL_ID_META: call_id})
        result = await self.client.call_tool(name, arguments, meta=meta)
        assert (result.meta or {})[CALL_ID_META] == call_id
        if self.tools[name].mutating:
            self.recorded.append(call_id)
        return result

    async def run(self, calls: list[Call]) -> list[str]:
        """Make the calls; the ids of those that failed, each with its message."""
        failed = []
        for name, arguments in calls:
            result = await self.call(name, arguments)
            if result.is_error:
                text = result.content[0]
                failed.append(f"t{self.numbers - 1:02d} {getattr(text, 'text', text)}")
        return failed

    def check(self, call_id: str, undone: tuple[str, ...] | list[str]) -> None:
        """The workspace is as it was before ``call_id``; the cut point is every call
        recorded from it on, and the history holds the rest."""
        index = self.recorded.index(call_id)
        assert tuple(undone) == tuple(self.recorded[index:])
        del self.recorded[index:]
        assert state(self.fs) == self.before[call_id], f"not as before {call_id}"
        assert [call.call_id for call in call_history(self.fs)] == self.recorded

    async def rewind_by_tool(self, call_id: str) -> None:
        result = await self.client.call_tool("rewind", {"call_id": call_id})
        assert not result.is_error, result.content
        assert result.structured_content is not None
        self.check(call_id, result.structured_content["undone"])


async def _history_by_tool(session: Session) -> list[str]:
    result = await session.client.call_tool("history", {})
    assert result.structured_content is not None
    return [call["call_id"] for call in result.structured_content["result"]]


async def scripted(
    session: Session, rewinders: list[Callable[[Session, str], Awaitable[None]]]
) -> None:
    """The session, then the five rewinds (``rewinders[k]`` does the k-th)."""
    failed = await session.run(SESSION)
    assert [line[:3] for line in failed] == ["t08", "t09"], failed  # edit, ``exit 3``
    assert len(session.recorded) == 29  # every call but the four read-only ones
    assert await _history_by_tool(session) == session.recorded
    assert state(session.fs)["run"] == ("link", "src/app.py")
    for number, (target, rewinder) in enumerate(zip(REWINDS, rewinders, strict=True)):
        await rewinder(session, target)
        if number < 3:
            assert await session.run(MORE) == []
    assert session.recorded == ["t00", "t01"]
    assert state(session.fs) == session.before["t03"]


def test_rewind_an_mcp_session_with_shell_commands_in_memory() -> None:
    fs = InMemoryFilesystem(mount_point="/workspace")
    with closed_cleanly(PodmanSandbox(fs)) as box:
        tools = registry(fs, box)
        server = create_server(fs, tools=UndoableToolset(tools, fs))

        async def headless(session: Session, call_id: str) -> None:
            session.check(call_id, rewind(fs, call_id).undone)

        async def main() -> None:
            async with Client(server) as client:
                session = Session(client, fs, tools)
                by_tool = Session.rewind_by_tool
                await scripted(session, [by_tool, headless, by_tool, headless, by_tool])

        anyio.run(main)
        # The container sees the workspace as the API does.
        assert box.exec("cat notes.md").stdout == fs.read("notes.md").content


def _random_session(seed: int, count: int) -> list[Call]:
    """``count`` calls on a few paths, tools and shell commands mixed at random."""
    chooser = random.Random(seed)
    paths = ["a.txt", "b/c.txt", "b/d/e.txt", "f.txt"]
    calls: list[Call] = []
    for number in range(count):
        path = chooser.choice(paths)
        calls.append(
            chooser.choice(
                [
                    ("write_file", {"path": path, "content": f"{number}\n"}),
                    ("write_file", {"path": path, "content": f"+{number}\n", "mode": "append"}),
                    ("rm", {"path": path}),
                    ("read_file", {"path": path}),
                    (
                        "shell",
                        {"command": f"mkdir -p $(dirname {path}) && echo {number} >> {path}"},
                    ),
                    ("shell", {"command": f"rm -rf {path.split('/')[0]}"}),
                    ("shell", {"command": f"chmod {chooser.choice(['600', '755'])} {path}"}),
                ]
            )
        )
    return calls


@pytest.mark.slow
def test_rewind_a_long_random_session_to_twenty_calls() -> None:
    fs = InMemoryFilesystem(mount_point="/workspace")
    with closed_cleanly(PodmanSandbox(fs)) as box:
        tools = registry(fs, box)
        server = create_server(fs, tools=UndoableToolset(tools, fs))

        async def main() -> None:
            async with Client(server) as client:
                session = Session(client, fs, tools)
                await session.run(_random_session(11, 200))
                chooser = random.Random(5)
                for number in range(20):
                    target = chooser.choice(session.recorded[len(session.recorded) // 3 :])
                    await session.rewind_by_tool(target)
                    await session.run(_random_session(number, 5))

        anyio.run(main)


def test_rewind_an_mcp_session_with_shell_commands_through_connect(tmp_path: Path) -> None:
    with private_runtime():
        daemons = Daemons(tmp_path)
        try:
            record = daemons.start()
            fs = connect(record.socket)
            other = connect(record.mountpoint)  # another client: another door
            with fs, other, PodmanSandbox(fs) as box:
                assert box.mountpoint == record.mountpoint  # the daemon's mount, bound
                tools = registry(fs, box)
                server = create_server(fs, tools=UndoableToolset(tools, fs))
                _through_doors(server, tools, fs, other, record.mountpoint)
                listing = box.exec("ls -A").stdout.split()
                assert sorted(listing) == sorted(entry.name for entry in fs.list("."))
                box.close()
                # The sandbox leaves its container and directory behind, not the mount.
                assert box.name not in container_names()
                assert not os.path.exists(os.path.join(tempfile.gettempdir(), box.name))
                assert os.path.ismount(record.mountpoint)
                assert fs.read("notes.md").content == other.read("notes.md").content
        finally:
            daemons.close()


def _through_doors(
    server: Any, tools: ToolRegistry, fs: RemoteFilesystem, other: RemoteFilesystem, at: str
) -> None:
    """The session through MCP on ``fs``; rewinds through the MCP tool, the ``other``
    client and the command line, in turn."""

    async def by_client(session: Session, call_id: str) -> None:
        session.check(call_id, other.rewind(call_id).undone)

    async def by_command(session: Session, call_id: str) -> None:
        listed = cast("list[dict[str, Any]]", cli_json("history", at))
        assert [call["call_id"] for call in listed] == session.recorded
        done = cast("dict[str, Any]", cli_json("rewind", at, call_id))
        session.check(call_id, done["undone"])

    async def main() -> None:
        async with Client(server) as client:
            session = Session(client, fs, tools)
            by_tool = Session.rewind_by_tool
            await scripted(session, [by_tool, by_client, by_command, by_tool, by_client])

    anyio.run(main)
