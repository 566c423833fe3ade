"""``RemoteChangeStream``: a daemon's change feed, read as it comes (``GET /v3/events``).

Each stream has a connection of its own (the pool's are for one request at
a time). It asks the daemon for a comment line every ``KEEPALIVE`` seconds
when idle, so a reader waiting with a timeout wakes up in time to give up,
and a daemon that stopped answering is told from a quiet one
(``READ_TIMEOUT``). The daemon's first frame is the position the stream
starts at, read before the stream is returned, so ``last_id`` is a place to
resume from even before the first event.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import time
from urllib.parse import urlencode

from .._errors import BackendUnavailableError
from ..fs import ChangeEvent, ChangeStream
from ._runtime import DaemonUnreachableError
from ._sse import SSE_MAX_LINE, EventParser
from ._transport import open_stream
from ._wire import PREFIX, decode_error, loads

KEEPALIVE = 0.25
"""Seconds between the daemon's comment lines while the stream is idle."""
READ_TIMEOUT = 60.0
"""Seconds without a byte from the daemon after which it counts as hung."""
_ERROR_BODY = 1 << 20


class RemoteChangeStream(ChangeStream):
    """The change feed of the daemon at ``socket_path``; see ``RemoteFilesystem.events``.

    Raises:
        InvalidArgumentError: A malformed or future id, or a malformed glob.
        DaemonUnreachableError: The daemon does not answer.
    """

    def __init__(
        self,
        socket_path: str,
        after: str | None,
        *,
        glob: str | None,
        timeout: float | None,
        connect_timeout: float,
    ) -> None:
        query = {"keepalive": str(KEEPALIVE)}
        if glob is not None:
            query["glob"] = glob
        headers = {"accept": "text/event-stream"}
        if after is not None:
            headers["last-event-id"] = after
        self._socket = socket_path
        try:
            self._connection, self._response = open_stream(
                socket_path,
                f"{PREFIX}/events?{urlencode(query)}",
                headers,
                timeout=READ_TIMEOUT,
                connect_timeout=connect_timeout,
            )
        except (OSError, http.client.HTTPException) as exc:
            unreachable = f"workspace daemon unreachable: {exc}"
            raise DaemonUnreachableError(unreachable, socket_path) from exc
        self._parser = EventParser()
        super().__init__(after or "", timeout)
        try:
            if self._response.status != 200:
                raise decode_error(loads(self._response.read(_ERROR_BODY)))
            while self._parser.last_id is None:  # the starting position: the first frame
                self._parser.line(self._line())
        except BaseException:
            self._connection.close()
            raise
        self.last_id = self._parser.last_id

    def _line(self) -> bytes:
        try:
            line = self._response.readline(SSE_MAX_LINE + 1)
        except Exception as exc:
            if self.closed:
                return b""
            self.close()
            raise DaemonUnreachableError(
                f"the change feed broke off: {exc or type(exc).__name__}", self._socket
            ) from exc
        if not line and not self.closed:
            self.close()  # the daemon waits for the connection to go before it stops
            ended = "the daemon ended the change feed (it stopped)"
            raise DaemonUnreachableError(ended, self._socket)
        if len(line) > SSE_MAX_LINE:
            raise BackendUnavailableError("the daemon sent a line past the limit", self._socket)
        return line

    def _take(self, deadline: float | None) -> ChangeEvent | None:
        while deadline is None or time.monotonic() < deadline:
            line = self._line()
            if self.closed:
                return None
            event = self._parser.line(line)
            if event is not None:
                return event
            if self._parser.last_id is not None:
                self.last_id = self._parser.last_id  # past events this reader does not want
        return None

    def close(self) -> None:
        """Stop reading and close the connection (a read blocked in another thread
        ends, and the stream with it)."""
        super().close()
        sock = self._connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._connection.close()
