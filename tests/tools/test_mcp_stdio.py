"""The MCP stdio server answers every line it is sent, driven with raw bytes on stdin.

A line that is not JSON gets a parse error (-32700), one that is JSON but no
JSON-RPC message an invalid-request error (-32600), with the request's id where
it can be read, else null; a line longer than the server's bound is answered
without being held whole, and the server goes on serving. Both as ``workspacefs
mcp`` serves a fresh workspace and as a daemon serves ``workspacefs mcp
MOUNTPOINT``'s session itself (there the daemon reads the lines, and its memory is
what must stay bounded).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from workspacefs.tools import MAX_REQUEST_BYTES

from .conftest import RemoteDaemons
from .test_mcp import SOURCE_ROOT

MIB = 1 << 20
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _call(request_id: int, tool: str, **arguments: object) -> bytes:
    params = {"name": tool, "arguments": arguments}
    return _line({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


class Server:
    """A server process and the messages it writes, read as they come."""

    def __init__(self, *command: str, reader: int | None = None) -> None:
        """``reader``: the process that reads the lines, if not the one started (a daemon
        serving the session)."""
        path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
        )
        self.reader = reader or self.process.pid
        self.answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.answers.put(json.loads(line))  # every line it writes is JSON
        self.answers.put(None)

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        answer = self.answers.get(timeout=20)
        assert answer is not None, "the server closed its output"
        return answer

    def initialize(self) -> None:
        self.send(_line(INITIALIZE))
        assert self.answer()["id"] == "init"
        self.send(_line(INITIALIZED))

    def peak_rss(self) -> int:
        """The reading process's peak resident memory, in bytes (VmHWM)."""
        with open(f"/proc/{self.reader}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            assert self.process.wait(30) == 0
        finally:
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()


MCP_COMMAND = ("-m", "workspacefs.cli", "mcp")
"""``workspacefs mcp``: a fresh in-memory workspace."""


@pytest.fixture(scope="module", params=["memory", pytest.param("daemon", marks=pytest.mark.fuse)])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """One server for the module: each test leaves it serving."""
    if request.param == "memory":
        running = Server(*MCP_COMMAND)
    else:
        daemons: RemoteDaemons = request.getfixturevalue("remote_daemons")
        fs = daemons.fresh()
        running = Server(*MCP_COMMAND, fs.mountpoint, reader=fs.pid)
        fs.close()
    try:
        running.initialize()
        yield running
    finally:
        running.close()


def _error(answer: dict[str, Any], code: int, request_id: object = None) -> str:
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] == request_id
    assert answer["error"]["code"] == code, answer
    message: str = answer["error"]["message"]
    return message


def _still_serving(server: Server, request_id: int) -> None:
    server.send(_call(request_id, "write_file", path="ok.txt", content="fine\n"))
    answer = server.answer()
    assert answer["id"] == request_id
    assert answer["result"]["isError"] is False
    assert answer["result"]["content"][0]["text"] == "Wrote `ok.txt` (1 line, 5 bytes)."


NOT_JSON = {
    "words": b"not json\n",
    "brace": b"{\n",
    "cut": b'{"jsonrpc": "2.0", "id": 1, "method": \n',
    "binary": b"\xff\xfe{}\n",
    "utf8-surrogate": b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xed\xa0\x80"}\n',
}
NO_REQUEST = {
    "surrogate": (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
        '"read_file", "arguments": {"path": "\\ud800"}}}',
        7,
    ),
    "surrogate-id": ('{"jsonrpc": "2.0", "id": "\\udcff", "method": "ping"}', None),
    "method": ('{"jsonrpc": "2.0", "id": 8, "method": 5}', 8),
    "bool-id": ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None),
    "null-id": ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', None),
    "float-id": ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', None),
    "no-version": ('{"id": 9, "method": "ping"}', 9),
    "batch": ("[]", None),
    "string": ('"ping"', None),
    "empty": ("{}", None),
}
"""JSON that is no request, and the id the answer names (None where it has no usable one:
an id that is itself a lone surrogate cannot be sent back)."""


@pytest.mark.parametrize("line", NOT_JSON.values(), ids=NOT_JSON.keys())
def test_a_line_that_is_not_json_gets_a_parse_error(server: Server, line: bytes) -> None:
    server.send(line)
    assert _error(server.answer(), -32700).startswith("Parse error")
    _still_serving(server, 5)


@pytest.mark.parametrize(("message", "request_id"), NO_REQUEST.values(), ids=NO_REQUEST.keys())
def test_json_that_is_no_request_gets_an_invalid_request_error(
    server: Server, message: str, request_id: object
) -> None:
    server.send(message.encode() + b"\n")
    text = _error(server.answer(), -32600, request_id)
    assert text.startswith("Invalid request")
    if "\\ud" in message:
        assert "lone surrogate" in text
    _still_serving(server, 10)


DEEP = {
    "array-600": (b"[" * 600 + b"]" * 600, -32600, None),
    "object-600": (b'{"a":' * 600 + b"1" + b"}" * 600, -32600, None),
    "params-600": (
        b'{"jsonrpc": "2.0", "id": 16, "method": "ping", "params": '
        + b"[" * 600
        + b"]" * 600
        + b"}",
        -32600,
        16,
    ),
    "array-100000": (b"[" * 100_000 + b"]" * 100_000, -32700, None),
}
"""Lines nested deeper than a parser recurses, the error code and id of their answer: JSON the
server can still read is refused as no request (naming the id it finds); JSON nested deeper than
it can read at all is a parse error."""


@pytest.mark.parametrize(("line", "code", "request_id"), DEEP.values(), ids=DEEP.keys())
def test_deeply_nested_json_is_answered(
    server: Server, line: bytes, code: int, request_id: object
) -> None:
    server.send(line + b"\n")
    assert _error(server.answer(), code, request_id).startswith(
        "Parse error" if code == -32700 else "Invalid request"
    )
    _still_serving(server, 17)


def test_blank_lines_are_skipped(server: Server) -> None:
    server.send(b"\n  \r\n\t\n")
    _still_serving(server, 11)


def test_a_200_mib_line_is_refused_without_being_held(server: Server) -> None:
    before = server.peak_rss()
    head = b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": '
    head += b'"write_file", "arguments": {"path": "big.txt", "content": "'
    server.send(head)
    block = b"x" * MIB
    for _ in range(200):
        server.send(block)
    server.send(b'"}}}\n')
    text = _error(server.answer(), -32600)
    assert text == (
        f"Invalid request: the line is over the limit of {MAX_REQUEST_BYTES:,} bytes; "
        "it was skipped."
    )
    _still_serving(server, 13)
    # The line went through in bounded pieces: the peak grew by far less than it.
    assert server.peak_rss() - before < 3 * MAX_REQUEST_BYTES + 16 * MIB


def test_a_line_at_the_limit_is_served_and_one_byte_more_refused(server: Server) -> None:
    body = _call(14, "write_file", path="long.txt", content="y" * 40_000).rstrip(b"\n")
    at_limit = body + b" " * (MAX_REQUEST_BYTES - len(body))  # JSON allows the spaces
    server.send(at_limit + b"\n")
    answer = server.answer()
    assert answer["id"] == 14
    assert answer["result"]["isError"] is False
    server.send(at_limit + b" \n")
    assert "over the limit" in _error(server.answer(), -32600)
    _still_serving(server, 15)


def test_an_answer_naming_a_file_that_is_not_utf8_is_sent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    running = Server(*MCP_COMMAND, "--from", str(project))
    try:
        running.initialize()
        running.send(_call(20, "ls", path="."))
        answer = running.answer()
        assert answer["id"] == 20
        assert answer["result"]["isError"] is False
        # The name's undecodable byte is shown as the escape that stands for it.
        assert "file            13  caf\\udce9.txt" in answer["result"]["content"][0]["text"]
        _still_serving(running, 21)
    finally:
        running.close()


def test_a_non_blocking_stdin_is_served() -> None:
    """A client may hand over a pipe set non-blocking: the server waits for its lines
    rather than failing its first read (and leaves the pipe as it found it)."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
    process = subprocess.Popen(
        [sys.executable, *MCP_COMMAND],
        stdin=read_end,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": path},
    )
    os.close(read_end)
    try:
        assert process.stdout is not None
        os.write(write_end, _line(INITIALIZE))
        assert json.loads(process.stdout.readline())["id"] == "init"
        time.sleep(0.5)  # the server reads on while nothing comes
        os.write(write_end, _line({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        assert json.loads(process.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    finally:
        os.close(write_end)
        process.wait(30)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert process.returncode == 0
