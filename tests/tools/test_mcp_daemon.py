"""``workspacefs mcp MOUNTPOINT``: the daemon serves the session itself, on the
descriptors the command hands it; the command only waits.

So a call reaches the tools with no request of the control socket: the
command holds no end of the wire to relay it (its descriptors 0 and 1 read
``/dev/null`` and write to stderr), the daemon holds the client's pipes.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from workspacefs import InvalidArgumentError
from workspacefs.daemon import RemoteFilesystem, connect
from workspacefs.daemon._handover import HANDED

from .conftest import RemoteDaemons
from .test_mcp import SOURCE_ROOT, _server, _text

pytestmark = pytest.mark.fuse

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def _spawn(mountpoint: str) -> subprocess.Popen[bytes]:
    path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "workspacefs.cli", "mcp", mountpoint],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": path},
    )


def _ask(process: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any]:
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()
    answer: dict[str, Any] = json.loads(process.stdout.readline())
    return answer


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _links(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:  # closed meanwhile
            continue
    return found


def test_the_daemon_holds_the_wire_and_the_command_none(remote_daemons: RemoteDaemons) -> None:
    fs = remote_daemons.fresh()
    process = _spawn(fs.mountpoint)
    try:
        assert _ask(process, INITIALIZE)["result"]["serverInfo"]["name"] == "workspacefs"
        assert process.stdin is not None
        assert process.stdout is not None
        ours = {
            os.readlink(f"/proc/self/fd/{stream.fileno()}")
            for stream in (process.stdin, process.stdout)
        }
        assert ours <= _links(fs.pid)  # the daemon reads our requests, writes its answers
        command = _links(process.pid)
        assert not ours & command
        assert os.readlink(f"/proc/{process.pid}/fd/0") == os.devnull
        process.stdin.close()  # the client is done: the session ends, and the command
        assert process.wait(20) == 0
        assert process.stdout.read() == b""
        deadline = time.monotonic() + 10
        while ours & _links(fs.pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # closed just after it said the session was over
        assert not ours & _links(fs.pid)
        fs.write("after.txt", "the daemon serves on\n")
    finally:
        _end(process)
        fs.close()


def test_the_command_fails_when_the_daemon_stops(remote_daemons: RemoteDaemons) -> None:
    record = remote_daemons.start({"a.txt": "a\n"}, read_only=False)
    process = _spawn(record.mountpoint)
    try:
        assert "result" in _ask(process, INITIALIZE)
        with connect(record.socket) as fs:
            fs.unmount()
        _, err = process.communicate(timeout=30)
        assert process.returncode != 0
        assert "error: the daemon stopped during the session" in err.decode()
    finally:
        _end(process)


async def _session(mountpoint: str, paths: list[str]) -> list[str]:
    ids = []
    async with Client(_server(mountpoint), read_timeout_seconds=60) as client:
        for path in paths:
            result = await client.call_tool("write_file", {"path": path, "content": "x\n"})
            assert not result.is_error, _text(result)
            ids.append(str((result.meta or {})["workspacefs/call_id"]))
    return ids


def test_sessions_of_one_daemon_record_their_calls_under_ids_of_their_own(
    remote_daemons: RemoteDaemons,
) -> None:
    fs = remote_daemons.fresh()
    try:
        found: dict[int, list[str]] = {}

        async def both() -> None:
            async def one(n: int) -> None:
                found[n] = await _session(fs.mountpoint, [f"s{n}/{i}.txt" for i in range(5)])

            async with anyio.create_task_group() as group:
                group.start_soon(one, 0)
                group.start_soon(one, 1)

        anyio.run(both)
        ids = found[0] + found[1]
        assert len(set(ids)) == 10
        assert sorted(call.call_id for call in fs.call_history()) == sorted(ids)
    finally:
        fs.close()


def test_a_session_asked_for_wrongly_is_refused_and_the_daemon_serves_on(
    remote_daemons: RemoteDaemons, tmp_path: Path
) -> None:
    fs = remote_daemons.fresh()
    try:
        with pytest.raises(InvalidArgumentError, match="must be absolute"):
            fs.serve_mcp("relative.sock")
        fs.serve_mcp(str(tmp_path / "nobody-listens.sock"))  # the session never starts
        # One that connects but sends no descriptors, then one that sends three.
        for sent in ([], [0, 1, 2]):
            with _daemon_connected(fs, tmp_path / f"sends-{len(sent)}.sock") as connection:
                if sent:
                    socket.send_fds(connection, [b"stdio"], sent)
                else:
                    connection.sendall(b"x")
                assert connection.recv(1) == b""  # closed: no session
        fs.write("still.txt", "serving\n")
        assert fs.read("still.txt").content == "serving\n"
    finally:
        fs.close()


@contextlib.contextmanager
def _daemon_connected(fs: RemoteFilesystem, path: Path) -> Iterator[socket.socket]:
    """The connection the daemon makes, asked to serve an MCP session (``serve_mcp``)
    to a socket listening at ``path``, as ``workspacefs mcp`` asks it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        fs.serve_mcp(str(path))
        connection, _ = listener.accept()
        with connection:
            yield connection


def test_no_answer_reaches_the_client_before_the_command_let_go_of_the_wire(
    remote_daemons: RemoteDaemons, tmp_path: Path
) -> None:
    # The command says it holds no copy of its stdin and stdout any more once it has
    # handed them over; one that never says so (it stops first) gets no session: the
    # daemon closes the pipes with the client's request unanswered.
    fs = remote_daemons.fresh()
    requests, wire_in = os.pipe()
    wire_out, answers = os.pipe()
    try:
        with _daemon_connected(fs, tmp_path / "stdio.sock") as connection:
            socket.send_fds(connection, [HANDED], [requests, answers])
            os.close(answers)
            os.write(wire_in, json.dumps(INITIALIZE).encode() + b"\n")
        assert os.read(wire_out, 65536) == b""  # the daemon's copy closed, unanswered
        fs.write("still.txt", "serving\n")
    finally:
        for fd in (requests, wire_in, wire_out):
            os.close(fd)
        fs.close()
