"""The part of MCP a tool server speaks, answered as the official SDK's server answers it.

A client opens in one of two eras, decided by its first request, as the SDK's
server decides it:

* the handshake (protocol 2024-11-05 to 2025-11-25): ``initialize`` (the version
  the client asks for if it is one of those, else the newest of them), then
  ``tools/list``, ``tools/call`` and ``ping``; before ``initialize`` only
  ``ping`` is served;
* per-request envelopes (2026-07-28, the SDK's own client): every request
  carries its protocol version and client capabilities in ``_meta``;
  ``server/discover``, ``tools/list`` and ``tools/call`` are served, and each
  result says it is complete and which server answered.

Notifications need no answer and get none; any other method is "Method not
found" (-32601); malformed parameters are -32602, in the SDK's words.
tests/tools/test_mcp_protocol.py holds this server to the SDK's answers, line by
line, and the SDK's client drives it in the other MCP tests.

Hand-written rather than the SDK's ``Server`` because it was measured to beat
it: ``import mcp`` alone (its models of every protocol version) took about 350 ms
of a server's start, and the SDK's handling of a request about 0.45 ms of every
call. This server alone answers a ``stat`` in 0.1-0.2 ms (driven with raw JSON
lines); at the SDK's client a ``stat`` went 0.80 -> 0.44 ms and ``mcp --from``'s
start 2,503 -> 388 ms (bench_mcp, medians of three runs, a 2-core machine at load
average 5-8; the start also gained ``DeferredTools``). The SDK stays the
reference: its client in the tests, and ``create_server`` for an in-process
SDK session.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from ._stdio import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Json,
    Message,
    claimed_stdio,
    error,
    serve_lines,
)

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Protocol versions served through ``initialize``, oldest first."""
MODERN_VERSIONS = ("2026-07-28",)
"""Protocol versions served through per-request envelopes."""

UNSUPPORTED_PROTOCOL_VERSION = -32022
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

CAPABILITIES: Json = {"tools": {"listChanged": False}}
"""What the server offers: tools, a list that never changes while it serves."""

INSTRUCTIONS = (
    "Tools over one workspace filesystem. Paths are relative to the workspace root. "
    "read_file numbers lines like `cat -n` (any size, any text encoding); edit_file and "
    "multi_edit need the exact text without those numbers. read_bytes shows images and "
    "other binary files; stat says which read tool a file needs. snapshot/restore/diff "
    "save, return to and compare states of the whole workspace. Where offered, history "
    "lists the calls that may have changed it and rewind returns it to just before one."
)
"""What the server tells the client's model about the tools."""


def server_version() -> str:
    """This package's version, as servers name it ("" when run from a source tree)."""
    try:
        from .._version import __version__
    except ImportError:  # PackageNotFoundError: not installed
        return ""
    return __version__


class ToolService(Protocol):
    """What an MCP session serves: a server's name, and its tools as MCP JSON."""

    @property
    def name(self) -> str:
        """The server name clients see."""
        ...

    @property
    def version(self) -> str:
        """The server's version."""
        ...

    @property
    def instructions(self) -> str:
        """What the client's model is told about the tools."""
        ...

    def listing(self) -> list[Json]:
        """The tools, as ``tools/list`` lists them."""
        ...

    def call(
        self, name: str, arguments: Json | None, meta: Json | None, request_id: int | str
    ) -> Json:
        """Run a tool; its ``tools/call`` result (``content``, ``isError``, ...)."""
        ...


class _RefusedError(Exception):
    """A request answered with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _invalid_params() -> _RefusedError:
    return _RefusedError(INVALID_PARAMS, "Invalid request parameters", "")


def _method_not_found(method: str) -> _RefusedError:
    return _RefusedError(METHOD_NOT_FOUND, "Method not found", method)


def _implementation(value: object) -> bool:
    """A client's ``Implementation``: an object with a string name and version."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("version"), str)
    )


def _check(method: str, params: Json) -> None:
    """Refuse parameters of the wrong shape for a served method (-32602)."""
    meta = params.get("_meta")
    if meta is not None and not isinstance(meta, dict):
        raise _invalid_params()
    if meta:
        if CLIENT_CAPABILITIES_KEY in meta and not isinstance(meta[CLIENT_CAPABILITIES_KEY], dict):
            raise _invalid_params()
        if CLIENT_INFO_KEY in meta and not _implementation(meta[CLIENT_INFO_KEY]):
            raise _invalid_params()
    if method == "tools/call":
        arguments = params.get("arguments")
        if not isinstance(params.get("name"), str):
            raise _invalid_params()
        if arguments is not None and not isinstance(arguments, dict):
            raise _invalid_params()
    elif method == "tools/list":
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise _invalid_params()
    elif method == "initialize" and not (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and _implementation(params.get("clientInfo"))
    ):
        raise _invalid_params()


def _enveloped(params: Json | None) -> bool:
    """Whether a request carries the 2026-07-28 envelope (its protocol version key)."""
    meta = None if params is None else params.get("_meta")
    return isinstance(meta, Mapping) and PROTOCOL_VERSION_KEY in meta


def _envelope(params: Json | None) -> None:
    """Refuse a 2026-07-28 request whose envelope is missing or names another version."""
    meta = None if params is None else params.get("_meta")
    if not isinstance(meta, Mapping):
        raise _RefusedError(
            INVALID_PARAMS,
            "params._meta must be an object carrying the required "
            f"{PROTOCOL_VERSION_KEY!r} and {CLIENT_CAPABILITIES_KEY!r} envelope keys",
        )
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise _RefusedError(
            INVALID_PARAMS,
            f"params._meta is missing the required envelope key(s): {', '.join(missing)}",
        )
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        raise _RefusedError(INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version not in MODERN_VERSIONS:
        raise _RefusedError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )


class McpSession:
    """One client's session: answers each of its messages (``serve_lines``' handler).

    Args:
        service: The tools served.
    """

    def __init__(self, service: ToolService) -> None:
        self._service = service
        self._era: Literal["handshake", "modern"] | None = None
        self._initialized = False

    def handle(self, message: Message) -> Json | None:
        """The answer to ``message`` (None for a notification)."""
        if message.id is None:
            return None  # initialized, cancelled, ...: nothing to do, nothing to say
        if self._era is None:
            modern = message.method != "initialize" and _enveloped(message.params)
            self._era = "modern" if modern else "handshake"
        try:
            if self._era == "modern":
                result = self._modern(message.method, message.params, message.id)
            else:
                result = self._handshake(message.method, message.params, message.id)
        except _RefusedError as refused:
            return error(message.id, refused.code, refused.message, refused.data)
        return {"jsonrpc": "2.0", "id": message.id, "result": result}

    def _handshake(self, method: str, params: Json | None, request_id: int | str) -> Json:
        if method != "initialize" and _enveloped(params):
            raise _RefusedError(
                INVALID_REQUEST,
                "this connection serves the handshake protocol era; requests carrying the "
                "2026-07-28 envelope are not accepted on it",
            )
        if method not in ("initialize", "ping", "tools/list", "tools/call"):
            raise _method_not_found(method)
        given = params or {}
        _check(method, given)
        if method == "initialize":
            requested = given["protocolVersion"]
            self._initialized = True
            service = self._service
            return {
                "protocolVersion": (
                    requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
                ),
                "capabilities": CAPABILITIES,
                "serverInfo": {"name": service.name, "version": service.version},
                "instructions": service.instructions,
            }
        if method == "ping":
            return {}
        if not self._initialized:
            raise _invalid_params()
        return self._serve(method, given, request_id)

    def _modern(self, method: str, params: Json | None, request_id: int | str) -> Json:
        if method == "initialize":
            requested = (params or {}).get("protocolVersion")
            data: Json = {"supported": list(MODERN_VERSIONS)}
            if isinstance(requested, str):
                data["requested"] = requested
            raise _RefusedError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "connection is serving the 2026-07-28 protocol; the initialize handshake is "
                "not accepted",
                data,
            )
        _envelope(params)
        if method not in ("server/discover", "tools/list", "tools/call"):
            raise _method_not_found(method)
        given = params or {}
        _check(method, given)
        service = self._service
        if method == "server/discover":
            result: Json = {
                "supportedVersions": list(MODERN_VERSIONS),
                "capabilities": CAPABILITIES,
                "instructions": service.instructions,
            }
        else:
            result = self._serve(method, given, request_id)
        if method != "tools/call":
            result = {"ttlMs": 0, "cacheScope": "private", **result}
        result["resultType"] = "complete"
        stamp = {"name": service.name, "version": service.version}
        result["_meta"] = {**result.get("_meta", {}), SERVER_INFO_KEY: stamp}
        return result

    def _serve(self, method: str, params: Json, request_id: int | str) -> Json:
        if method == "tools/list":
            return {"tools": self._service.listing()}
        meta = params.get("_meta")
        return self._service.call(params["name"], params.get("arguments"), meta, request_id)


def serve_mcp(fd_in: int, fd_out: int, service: ToolService) -> None:
    """Serve ``service`` over MCP on two descriptors until ``fd_in`` ends."""
    serve_lines(fd_in, fd_out, McpSession(service).handle)


def serve_mcp_stdio(service: ToolService) -> None:
    """Serve ``service`` over MCP on stdin/stdout until the client closes stdin."""
    # A client that went away mid-answer ends the session.
    with claimed_stdio() as (wire_in, wire_out), contextlib.suppress(BrokenPipeError):
        serve_mcp(wire_in, wire_out, service)
