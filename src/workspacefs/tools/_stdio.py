"""JSON-RPC over a byte stream, one message a line: every line answered, every line bounded.

The MCP server (``_mcp_session``) reads and writes its messages here, on
stdin/stdout or, in a workspace daemon, on the descriptors a ``workspacefs mcp
MOUNTPOINT`` process handed it. Standard library only: what a server loads
before it answers (the MCP SDK's stdio server and its message models took
most of a server's start; ``_mcp_session`` says what was measured); answers
are written with ``pydantic_core`` once the tools have loaded it (``encoded``).

* a stream is read in blocks of ``READ_BLOCK`` bytes and split into lines of at
  most ``max_request_bytes``; a longer line is answered (-32600, id null) as
  soon as it passes the limit, and its remaining bytes are skipped as they come
  (the SDK's reader held a line whole: a 200 MiB one took 824 MiB);
* a line that is not JSON (or not UTF-8, or nested too deeply to read) gets a
  parse error (-32700, id null);
  JSON that is no JSON-RPC message, or holds a lone surrogate (``"\\ud800"``,
  which is no Unicode text), gets an invalid-request error (-32600) with the
  message's id when it has a usable one, else null;
* blank lines are skipped;
* an answer holding a lone surrogate (a file name that is not UTF-8, from a
  host directory) is sent with it written out as ``\\udcff`` text, rather than
  failing the whole server.

On stdio (``claimed_stdio``) descriptors 0 and 1 point at ``/dev/null`` and
stderr while serving, as the SDK did, so a handler or child process that
reads stdin or prints cannot take or tear the protocol's bytes; the wire is
served from private copies.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..posix import write_all

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 4 << 20
"""Longest request line served (without its line end), in bytes: far above what a
tool call carries (``write_file`` takes 48,000 characters)."""

READ_BLOCK = 1 << 16
"""Bytes read at a time."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = int | str
Json = dict[str, Any]

_TOO_LONG = None
"""What ``Lines.feed`` gives for a line over the limit."""


class Lines:
    """Splits a byte stream into lines of at most ``limit`` bytes (line ends dropped).

    A longer line is reported once (as ``None``) when it passes the limit, and
    the rest of it is dropped as it arrives: memory stays within ``limit`` plus
    one block, however long the line.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._pending = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes | None]:
        """The lines ``data`` completes, in order (``None`` for one over the limit)."""
        found: list[bytes | None] = []
        start = 0
        while start <= len(data):
            end = data.find(b"\n", start)
            piece = memoryview(data)[start : len(data) if end < 0 else end]
            if not self._skipping:
                if len(self._pending) + len(piece) > self._limit:
                    self._pending.clear()
                    self._skipping = True
                    found.append(_TOO_LONG)
                else:
                    self._pending += piece
            if end < 0:
                break
            if not self._skipping:
                found.append(bytes(self._pending))
            self._pending.clear()
            self._skipping = False
            start = end + 1
        return found

    def finish(self) -> bytes | None:
        """The last line, if the stream ended without a line end."""
        if self._skipping or not self._pending:
            return None
        line = bytes(self._pending)
        self._pending.clear()
        return line


@dataclass(frozen=True, slots=True)
class Message:
    """A JSON-RPC request (``id`` set) or notification (``id`` None) read from a line."""

    method: str
    params: Json | None
    id: RequestId | None = None


def error(request_id: RequestId | None, code: int, message: str, data: Any = None) -> Json:
    """A JSON-RPC error answer (``data`` left out when None)."""
    body: Json = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def _has_surrogate(value: object) -> bool:
    """Whether a string anywhere in the JSON value ``value`` holds a lone surrogate.

    Walked with a stack rather than recursion: a line may nest as deep as the
    JSON parser allows, which is deeper than Python's recursion limit.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not item.isascii() and any("\ud800" <= c <= "\udfff" for c in item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _usable_id(value: object) -> RequestId | None:
    """The id an error answer can name: an int or a UTF-8 string, as JSON-RPC allows."""
    if not isinstance(value, dict):
        return None
    request_id = value.get("id")
    if type(request_id) is int:
        return request_id
    if isinstance(request_id, str) and not _has_surrogate(request_id):
        return request_id
    return None


def _invalid(value: object, why: str) -> Json:
    return error(_usable_id(value), INVALID_REQUEST, f"Invalid request: {why}")


def _problem(value: Any) -> str | None:
    """Why ``value`` is no JSON-RPC 2.0 message (None: it is one)."""
    if not isinstance(value, dict):
        return "a message must be a JSON object"
    if value.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "method" not in value:
        if "id" not in value or not ("result" in value or "error" in value):
            return "a message needs a method (a request), or an id and a result or error"
        return None
    if not isinstance(value["method"], str):
        return "method must be a string"
    params = value.get("params")
    if params is not None and not isinstance(params, dict):
        return "params must be an object"
    if "id" in value and not (type(value["id"]) is int or isinstance(value["id"], str)):
        # A null, boolean or fractional id cannot be answered: refused rather than
        # taken for a notification, which the sender would wait for in vain.
        return "id must be a string or an integer"
    return None


def message_of(line: bytes) -> Message | Json | None:
    """The message a request line holds, the error answering it (a dict), or None for a
    line to skip (blank, or a client's answer: this server sends no requests)."""
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")  # strict: json.loads would pass encoded surrogates
        value = json.loads(text)
    except ValueError as parse:  # a UnicodeDecodeError is one too
        return error(None, PARSE_ERROR, f"Parse error: {parse}")
    except RecursionError:  # valid JSON, but nested deeper than the parser recurses
        return error(None, PARSE_ERROR, "Parse error: the JSON is nested too deeply")
    try:
        why = _problem(value)
        # Strict UTF-8 holds no surrogate: only a \u escape makes one, so a line
        # without one is not walked (every call's arguments were, 3-4 us each).
        if why is None and b"\\u" in line and _has_surrogate(value):
            why = "a string holds a lone surrogate (e.g. \\ud800), which is not Unicode text"
    except RecursionError:
        why = "the message is nested too deeply"
    if why is not None:
        return _invalid(value, why)
    if "method" not in value:
        return None
    return Message(value["method"], value.get("params"), value.get("id"))


def _visible(value: Any) -> Any:
    """``value`` with every lone surrogate written out as text (``\\udcff``)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_visible(k): _visible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible(item) for item in value]
    return value


def encoded(message: Json) -> bytes:
    """One line of the wire for ``message``.

    Written by ``pydantic_core.to_json`` (Rust) once it is loaded: the same bytes as
    the standard library's encoder gives here, six times faster (a 45 KB page of
    ``read_file``: 33 us against 219 us, most of what serving it costs). It is
    loaded with the tools' models, not for the answers before them
    (``initialize``): a server's start does not wait for it.
    """
    # Being imported by another thread (``DeferredTools`` makes the tools while the
    # session starts), the module may not hold it yet.
    to_json = getattr(sys.modules.get("pydantic_core"), "to_json", None)
    if to_json is not None:
        try:
            data: bytes = to_json(message)
        except ValueError:  # a lone surrogate, or a value JSON has no form for
            pass  # PydanticSerializationError is one: said below as JSON says it
        else:
            return data + b"\n"
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: UTF-8 cannot carry it
        data = json.dumps(_visible(message), ensure_ascii=False, separators=(",", ":")).encode()
    return data + b"\n"


Handler = Callable[[Message], "Json | None"]
"""Answers one message (None: no answer, as for a notification)."""


def serve_lines(
    fd_in: int, fd_out: int, handle: Handler, *, max_request_bytes: int = MAX_REQUEST_BYTES
) -> None:
    """Read messages from ``fd_in`` until it ends, answering each on ``fd_out`` in order.

    One message at a time, in this thread: a tool's handler is synchronous. A
    handler that raises costs its message an internal error, not the session.
    Raises ``OSError`` if a descriptor fails (the peer closed its end).
    """
    lines = Lines(max_request_bytes)
    too_long = (
        f"Invalid request: the line is over the limit of {max_request_bytes:,} bytes; "
        "it was skipped."
    )
    while True:
        data = os.read(fd_in, READ_BLOCK)
        if data:
            found = lines.feed(data)
        else:  # end of input: a last line without its line end still counts
            last = lines.finish()
            found = [] if last is None else [last]
        for line in found:
            if line is _TOO_LONG:
                answer: Json | None = error(None, INVALID_REQUEST, too_long)
            else:
                answer = _answer(line, handle)
            if answer is not None:
                write_all(fd_out, encoded(answer))
        if not data:
            return


def _answer(line: bytes, handle: Handler) -> Json | None:
    try:
        message = message_of(line)
    except Exception:  # a line that trips a parser's bug costs its answer, not the server
        log.exception("reading a request line failed")
        return error(None, INVALID_REQUEST, "Invalid request: the line could not be read")
    if not isinstance(message, Message):
        return message
    try:
        return handle(message)
    except Exception:  # a bug must not end the session
        log.exception("answering %s failed", message.method)
        if message.id is None:
            return None
        return error(message.id, INTERNAL_ERROR, "Internal server error")


@contextlib.contextmanager
def _claimed(fd: int, diversion: Callable[[], int], *, keep: bool) -> Iterator[int]:
    """A private copy of ``fd`` while ``fd`` itself points at ``diversion()``.

    ``keep``: leave the copy open afterwards (for a descriptor the caller hands on).
    """
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    replacement = diversion()
    os.dup2(replacement, fd)
    os.close(replacement)
    try:
        yield private
    finally:
        os.dup2(private, fd)
        if not keep:
            os.close(private)


@contextlib.contextmanager
def _blocking(fd: int) -> Iterator[None]:
    """``fd`` in blocking mode while the session reads and writes it (a pipe handed over
    non-blocking would fail a read with EAGAIN); put back afterwards, as the flag
    belongs to the open pipe, which others may share."""
    was_blocking = os.get_blocking(fd)
    if not was_blocking:
        os.set_blocking(fd, True)
    try:
        yield
    finally:
        if not was_blocking:
            os.set_blocking(fd, False)


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """Private copies of stdin and stdout for the wire, in blocking mode, while
    descriptors 0 and 1 read ``/dev/null`` and write to stderr (see the module
    docstring)."""
    with (
        _claimed(0, lambda: os.open(os.devnull, os.O_RDONLY), keep=False) as wire_in,
        _claimed(1, lambda: os.dup(2), keep=False) as wire_out,
        _blocking(wire_in),
        _blocking(wire_out),
    ):
        yield wire_in, wire_out
