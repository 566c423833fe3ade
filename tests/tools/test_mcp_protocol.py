"""``workspacefs mcp`` answers as the MCP SDK's own server answers, line for line.

Its server is written by hand (``tools._mcp_session``: the SDK's took most of a
server's start and of a call's time). The reference is the SDK's low-level
``Server`` over the SDK's stdio transport, serving the same tools
(``create_server``); both get the same requests of each protocol era --
handshake, the 2026-07-28 envelopes, requests out of turn, malformed and
unknown ones -- and must give the same answers (snapshot ids and times aside).
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from typing import IO, Any

import pytest

from .test_mcp import SOURCE_ROOT

ENVELOPE_VERSION = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
ENVELOPE = {
    ENVELOPE_VERSION: "2026-07-28",
    CLIENT_INFO: {"name": "raw", "version": "0"},
    CAPABILITIES: {},
}
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "r", "version": "0"},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _request(
    request_id: int, method: str, params: dict[str, Any] | None = None, *, envelope: bool = False
) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None or envelope:
        params = dict(params or {})
        if envelope:
            params["_meta"] = {**ENVELOPE, **params.get("_meta", {})}
        message["params"] = params
    return message


def _call(request_id: int, tool: Any, arguments: Any, call_id: object = None, **kw: Any) -> Any:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if call_id is not None:
        params["_meta"] = {"workspacefs/call_id": call_id}
    return _request(request_id, "tools/call", params, **kw)


SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "before-initialize": [
        _request(1, "tools/list"),
        _request(2, "ping"),
        _request(3, "resources/list"),
        _call(4, "ls", {}),
        _request(5, "initialize", {**INIT, "protocolVersion": "1999-01-01"}),
        _request(6, "tools/list"),
        INITIALIZED,
        _request(7, "tools/list", {"cursor": "abc"}),
    ],
    "handshake": [
        _request(1, "initialize", INIT),
        INITIALIZED,
        _request(2, "ping"),
        _call(3, "read_file", {"path": "missing"}),
        _call(4, "cat", {}),
        _call(5, "ls", {}, call_id=7),
        _request(6, "tools/call", {"name": "ls"}),
        _request(7, "tools/call", {}),
        _request(8, "tools/call"),
        _request(9, "resources/list"),
        _request(10, "tools/list", envelope=True),
        _request(11, "initialize", INIT),
        {"jsonrpc": "2.0", "id": 99, "result": {}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
        _call(12, "write_file", {"path": "a", "content": "x"}, call_id="t1"),
        _call(13, "write_file", {"path": "a", "content": "y"}, call_id="t1"),
        _call(14, "history", {}),
        _call(15, "ls", []),
        _call(16, 5, {}),
        _request(17, "logging/setLevel", {"level": "debug"}),
        _request(18, "tools/list", {"_meta": {"progressToken": 5}}),
        _request(19, "initialize", {"protocolVersion": 5}),
    ],
    "envelopes": [
        _request(1, "server/discover", envelope=True),
        _request(2, "tools/list", envelope=True),
        _call(3, "read_file", {"path": "missing"}, envelope=True),
        _request(4, "initialize", INIT),
        _request(5, "ping", envelope=True),
        _request(6, "tools/list"),
        _request(7, "tools/list", {"_meta": {ENVELOPE_VERSION: "x"}}),
        _request(8, "tools/list", {"_meta": {**ENVELOPE, ENVELOPE_VERSION: "2025-06-18"}}),
        _request(9, "tools/list", {"_meta": {**ENVELOPE, ENVELOPE_VERSION: 5}}),
        _request(10, "resources/list", envelope=True),
        _request(11, "tools/call", {"name": "ls"}, envelope=True),
        _request(12, "tools/call", {}, envelope=True),
        INITIALIZED,
        _call(13, "cat", {}, envelope=True),
        _call(14, "write_file", {"path": "a", "content": "x"}, call_id=7, envelope=True),
        _call(15, "write_file", {"path": "a", "content": "x"}, call_id="t1", envelope=True),
        _call(16, "history", {}, envelope=True),
        _request(17, "tools/list", {"_meta": {**ENVELOPE, CAPABILITIES: 5}}),
        _request(18, "tools/list", {"_meta": {**ENVELOPE, CLIENT_INFO: {"name": 1}}}),
        _request(19, "ping"),
    ],
}
"""Each era's requests, in order (notifications and a client's answer among them)."""

REFERENCE = """
import anyio
from mcp.server.stdio import stdio_server
from workspacefs import InMemoryFilesystem
from workspacefs.tools import create_server

server = create_server(InMemoryFilesystem())


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""
"""The SDK's server, on the SDK's stdio transport, serving the same tools."""


def _answers(command: list[str], script: list[dict[str, Any]]) -> dict[Any, Any]:
    """Each request's answer by id, the requests sent one at a time."""
    path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
    process = subprocess.Popen(
        [sys.executable, *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert process.stdin is not None
    assert process.stdout is not None
    answers: queue.Queue[dict[str, Any]] = queue.Queue()

    def read(stdout: IO[bytes]) -> None:
        for line in stdout:
            answers.put(json.loads(line))

    threading.Thread(target=read, args=(process.stdout,), daemon=True).start()
    seen: dict[Any, Any] = {}
    try:
        for message in script:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" not in message or "method" not in message:
                continue  # nothing comes back
            # The SDK answers the first request of an enveloped session only once the
            # next one comes: waited for a while, then looked for later.
            while message["id"] not in seen:
                try:
                    answer = answers.get(timeout=2)
                except queue.Empty:
                    break
                seen[answer["id"]] = answer
        while len(seen) < sum(1 for m in script if "id" in m and "method" in m):
            answer = answers.get(timeout=20)
            seen[answer["id"]] = answer
    finally:
        process.stdin.close()
        process.wait(30)
        process.stdout.close()
    return seen


def _comparable(answers: dict[Any, Any]) -> str:
    """The answers without what differs from run to run (snapshot ids, times)."""
    text = json.dumps(answers, sort_keys=True)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)
    text = re.sub(r'"(created_at)": "[^"]*"', r'"\1": "<time>"', text)
    return re.sub(r'"workspace_id": "[0-9a-f]+"', '"workspace_id": "<ws>"', text)


@pytest.mark.parametrize("era", SCRIPTS)
def test_the_server_answers_as_the_sdks_server(era: str) -> None:
    script = SCRIPTS[era]
    ours = _answers(["-m", "workspacefs.cli", "mcp"], script)
    theirs = _answers(["-c", REFERENCE], script)
    assert _comparable(ours) == _comparable(theirs)
    assert len(ours) == sum(1 for m in script if "id" in m and "method" in m)
