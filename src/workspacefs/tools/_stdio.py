"""``stdio_transport``: MCP over stdin/stdout, every line answered, every line bounded.

It replaces the SDK's ``stdio_server``, which reads a line whole however long
it is (a 200 MiB line held 824 MiB before it was refused) and hands a line it
cannot parse to the session as an exception, which the session logs and
answers with nothing, so the client waits for ever. Here:

* stdin is read in blocks of ``READ_BLOCK`` bytes and split into lines of at
  most ``max_request_bytes``; a longer line is answered (-32600, id null) as
  soon as it passes the limit, and its remaining bytes are skipped as they come;
* a line that is not JSON (or not UTF-8, or nested too deeply to read) gets a
  parse error (-32700, id null);
  JSON that is no JSON-RPC message, or holds a lone surrogate (``"\\ud800"``,
  which is no Unicode text), gets an invalid-request error (-32600) with the
  message's id when it has a usable one, else null;
* blank lines are skipped;
* an answer holding a lone surrogate (a file name that is not UTF-8, from a
  host directory) is sent with it written out as ``\\udcff`` text, rather than
  failing the whole server.

As the SDK does, descriptors 0 and 1 point at ``/dev/null`` and stderr while
serving, so a handler or child process that reads stdin or prints cannot
take or tear the protocol's bytes; the wire is served from private copies.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from ..posix import write_all

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 4 << 20
"""Longest request line served (without its line end), in bytes: far above what a
tool call carries (``write_file`` takes 48,000 characters)."""

READ_BLOCK = 1 << 16
"""Bytes read from stdin at a time."""

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


def _error(request_id: types.RequestId | None, code: int, message: str) -> SessionMessage:
    error = types.ErrorData(code=code, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


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


def _usable_id(value: object) -> types.RequestId | None:
    """The id an error answer can name: an int or a UTF-8 string, as JSON-RPC allows."""
    if not isinstance(value, dict):
        return None
    request_id = value.get("id")
    if type(request_id) is int:
        return request_id
    if isinstance(request_id, str) and not _has_surrogate(request_id):
        return request_id
    return None


def _refusal(line: bytes, exc: ValidationError) -> SessionMessage:
    """The error answer to a line the SDK's message model refused."""
    try:
        value = json.loads(line.decode("utf-8"))  # strict: json.loads would pass surrogates
    except ValueError as parse:  # a UnicodeDecodeError is one too
        return _error(None, types.PARSE_ERROR, f"Parse error: {parse}")
    except RecursionError:  # valid JSON, but nested deeper than the parser recurses
        return _error(None, types.PARSE_ERROR, "Parse error: the JSON is nested too deeply")
    if _has_surrogate(value):
        why = "a string holds a lone surrogate (e.g. \\ud800), which is not Unicode text"
    else:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"]))
        why = f"{where}: {first['msg']}" if where else first["msg"]
    return _error(_usable_id(value), types.INVALID_REQUEST, f"Invalid request: {why}")


def message_of(line: bytes) -> SessionMessage | None:
    """The message a request line holds, the error answering it, or None for a blank line.

    An error answer is a ``JSONRPCError``; the caller sends it back rather than
    passing it on.
    """
    if not line.strip():
        return None
    try:
        return _message(line)
    except Exception:  # a line that trips a parser's bug costs its answer, not the server
        log.exception("reading a request line failed")
        return _error(None, types.INVALID_REQUEST, "Invalid request: the line could not be read")


def _message(line: bytes) -> SessionMessage:
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return _refusal(line, exc)
    if isinstance(message, types.JSONRPCNotification) and b'"id"' in line:
        # The model ignores an id it cannot take (null, true, 1.5) and sees a
        # notification, which is never answered: the sender waits in vain.
        value = json.loads(line)
        if isinstance(value, dict) and "id" in value:
            why = "id must be a string or an integer"
            return _error(None, types.INVALID_REQUEST, f"Invalid request: {why}")
    return SessionMessage(message)


def _visible(value: Any) -> Any:
    """``value`` with every lone surrogate written out as text (``\\udcff``)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_visible(k): _visible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible(item) for item in value]
    return value


def encoded(message: SessionMessage) -> bytes:
    """One line of the wire for ``message``."""
    try:
        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
    except PydanticSerializationError:  # a lone surrogate: UTF-8 cannot carry it
        data = message.message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        text = json.dumps(_visible(data), ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


@contextlib.contextmanager
def _claimed(fd: int, diversion: Callable[[], int], *, keep: bool) -> Iterator[int]:
    """A private copy of ``fd`` while ``fd`` itself points at ``diversion()``.

    ``keep``: leave the copy open afterwards, for a reading thread that may
    still be blocked on it (closing it would let the number be reused under it).
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


def _pollable(fd: int) -> bool:
    """True for a pipe or socket: the event loop can wait on it, so no thread needs to
    block in ``read``/``write`` (one hop to a worker thread and back each way is about
    a tenth of a small call's time). A file or terminal is read in a thread."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def _nonblocking(fd: int, pollable: bool) -> Iterator[None]:
    """``fd`` without blocking while the transport serves, if it is ``pollable`` (the
    flag belongs to the open pipe, which the caller's descriptor shares: put back)."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    if pollable and not flags & os.O_NONBLOCK:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        yield
    finally:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags)


async def _read_block(fd: int, pollable: bool) -> bytes:
    if not pollable:
        return await anyio.to_thread.run_sync(os.read, fd, READ_BLOCK, abandon_on_cancel=True)
    while True:
        try:
            return os.read(fd, READ_BLOCK)
        except BlockingIOError:
            await anyio.wait_readable(fd)


async def _send(fd: int, data: bytes, pollable: bool) -> None:
    if not pollable:
        await anyio.to_thread.run_sync(write_all, fd, data)
        return
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await anyio.wait_writable(fd)


async def _read(
    fd: int,
    limit: int,
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
    answers: MemoryObjectSendStream[SessionMessage],
) -> None:
    lines = Lines(limit)
    too_long = f"Invalid request: the line is over the limit of {limit:,} bytes; it was skipped."
    pollable = _pollable(fd)
    async with incoming, answers:
        while True:
            data = await _read_block(fd, pollable)
            if data:
                found = lines.feed(data)
            else:  # end of input: a last line without its line end still counts
                last = lines.finish()
                found = [] if last is None else [last]
            for line in found:
                if line is _TOO_LONG:
                    message: SessionMessage | None = _error(None, types.INVALID_REQUEST, too_long)
                else:
                    message = message_of(line)
                if message is None:
                    continue
                if isinstance(message.message, types.JSONRPCError):
                    await answers.send(message)
                else:
                    await incoming.send(message)
            if not data:
                return


async def _write(fd: int, outgoing: MemoryObjectReceiveStream[SessionMessage]) -> None:
    pollable = _pollable(fd)
    async with outgoing:
        async for message in outgoing:
            await _send(fd, encoded(message), pollable)


Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]
"""What ``stdio_transport`` yields: the (read, write) streams ``Server.run`` takes."""


@contextlib.asynccontextmanager
async def stdio_transport(max_request_bytes: int = MAX_REQUEST_BYTES) -> AsyncIterator[Streams]:
    """Serve MCP over this process's stdin and stdout (see the module docstring)."""
    with (
        _claimed(0, lambda: os.open(os.devnull, os.O_RDONLY), keep=True) as wire_in,
        _claimed(1, lambda: os.dup(2), keep=False) as wire_out,
        _nonblocking(wire_in, _pollable(wire_in)),
        _nonblocking(wire_out, _pollable(wire_out)),
    ):
        incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as group:
            group.start_soon(_write, wire_out, outgoing)
            reading = anyio.CancelScope()

            async def read() -> None:
                with reading:
                    await _read(wire_in, max_request_bytes, incoming, write_stream.clone())

            group.start_soon(read)
            try:
                yield read_stream, write_stream
            finally:
                # The session is over: stop reading, send what is queued, and end.
                reading.cancel()
                await write_stream.aclose()
