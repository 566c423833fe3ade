"""MCP clients and a Podman container editing the same files of one daemon's workspace
at once: every edit lands or fails visibly, and none is lost.

Each client runs ``workspacefs mcp MOUNTPOINT`` and is driven by the MCP SDK's own
client over stdio. Client ``i`` inserts a line ``c<i>: a<n>`` (a token unique to
attempt ``n``) before its marker line ``c<i>: end`` with ``edit_file``; meanwhile a
container on the mount appends ``p: <n>`` lines to the same files, each with one
``O_APPEND`` write. At the end, each file holds exactly the tokens of the edits that
were reported done, in the order they were made, and every line the container wrote.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from workspacefs.daemon import RemoteFilesystem
from workspacefs.sandbox import containers_conf, preflight

from .conftest import RemoteDaemons
from .test_mcp import SOURCE_ROOT

pytestmark = [pytest.mark.fuse, pytest.mark.container]

CLIENTS = 3
FILES = ("a.txt", "b.txt")
CHANGED = "it changed after edit_file read it (another writer changed it meanwhile)"
APPENDER = """
i=0
: > /workspace/started
while [ ! -e /workspace/stop ]; do
    for f in {files}; do echo "p: $i" >> "/workspace/$f"; done
    i=$((i + 1))
    sleep 0.005
done
echo "$i"
"""


@functools.cache
def _unavailable() -> str | None:
    problems = preflight()
    return "Podman sandbox unavailable: " + "; ".join(problems) if problems else None


def _server(mountpoint: str) -> StdioServerParameters:
    path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "workspacefs.cli", "mcp", mountpoint],
        env={"PYTHONPATH": path, "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]},
    )


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


Outcomes = dict[str, list[tuple[str, bool, str]]]
"""Per file, each attempt's (token, done, message)."""


async def _editor(index: int, attempts: int, mountpoint: str, outcomes: Outcomes) -> None:
    """Client ``index``'s attempts."""
    async with Client(_server(mountpoint), read_timeout_seconds=60) as client:
        for attempt in range(attempts):
            path = FILES[attempt % len(FILES)]
            token = f"c{index}: a{attempt}"
            result = await client.call_tool(
                "edit_file",
                {
                    "path": path,
                    "old_string": f"c{index}: end",
                    "new_string": f"{token}\nc{index}: end",
                },
            )
            outcomes[path].append((token, not result.is_error, _text(result)))


async def _edit_together(fs: RemoteFilesystem, attempts: int) -> Outcomes:
    outcomes: Outcomes = {path: [] for path in FILES}
    while not fs.exists("started"):  # the container appends before any client edits
        await anyio.sleep(0.02)
    async with anyio.create_task_group() as group:
        for index in range(CLIENTS):
            group.start_soon(_editor, index, attempts, fs.mountpoint, outcomes)
    return outcomes


@pytest.mark.parametrize("attempts", [15, pytest.param(200, marks=pytest.mark.slow)])
def test_mcp_clients_and_a_container_lose_no_edit(
    remote_daemons: RemoteDaemons, attempts: int
) -> None:
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    fs = remote_daemons.fresh()
    try:
        _lose_no_edit(fs, attempts)
    finally:
        fs.close()


def _lose_no_edit(fs: RemoteFilesystem, attempts: int) -> None:
    markers = "".join(f"c{index}: end\n" for index in range(CLIENTS))
    for path in FILES:
        fs.write(path, markers)
    container = subprocess.Popen(
        [
            "podman",
            "run",
            "--rm",
            "--network=none",
            "-v",
            f"{fs.mountpoint}:/workspace:rw",
            "--rootfs",
            "/:O",
            "/bin/sh",
            "-c",
            APPENDER.format(files=" ".join(FILES)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CONTAINERS_CONF": containers_conf()},
    )
    try:
        outcomes = anyio.run(_edit_together, fs, attempts)
    finally:
        Path(fs.mountpoint, "stop").touch()
        out, err = container.communicate(timeout=60)
    assert container.returncode == 0, err
    appended = int(out)
    assert appended > 0

    done = 0
    for path in FILES:
        lines = fs.read_bytes(path).content.decode().splitlines()
        # The container's lines, every one, in its order.
        assert [line for line in lines if line.startswith("p: ")] == [
            f"p: {n}" for n in range(appended)
        ]
        for index in range(CLIENTS):
            mine = [
                (token, message)
                for token, ok, message in outcomes[path]
                if ok and token.startswith(f"c{index}: ")
            ]
            # Exactly the edits reported done, in order, then the marker.
            assert [line for line in lines if line.startswith(f"c{index}: ")] == [
                token for token, _ in mine
            ] + [f"c{index}: end"]
            done += len(mine)
        for _, ok, message in outcomes[path]:
            if not ok:  # refused visibly, for the one reason a race gives
                assert message.startswith(f"Cannot edit `{path}`: {CHANGED}"), message
    assert sum(map(len, outcomes.values())) == CLIENTS * attempts
    assert done > 0
