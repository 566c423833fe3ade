"""The change feed as server-sent events (the ``text/event-stream`` format of HTML).

Both servers that stream the feed (the daemon's ``/v3/events`` and the debug
UI's ``/api/events``) write their frames here (and answer with
``_responses.EventStreamResponse``), and the daemon's client reads them here,
so both ends agree; the standard library only, as a client loads it. A frame is
one event, ``id: <id>`` and ``data: <the event's JSON>``; ``id`` alone moves a
reader's position past events it filtered out (a browser's ``EventSource``
keeps the id and dispatches nothing); a comment line keeps an idle connection
alive.
"""

from __future__ import annotations

import json

from .._errors import InvalidArgumentError
from ..fs import ChangeEvent

SSE_MEDIA_TYPE = "text/event-stream"
SSE_KEEPALIVE = b": keepalive\n\n"
SSE_MAX_LINE = 64 << 20
"""The longest line a reader takes (an event of ``EVENT_PATHS`` paths of ``PATH_MAX``
characters, escaped, is below it)."""


def sse_frame(event_id: str, data: bytes) -> bytes:
    """One event's frame (``data`` is JSON: one line)."""
    return b"id: " + event_id.encode("ascii") + b"\ndata: " + data + b"\n\n"


def sse_position(event_id: str, *, retry_ms: int | None = None) -> bytes:
    """A frame that only moves the reader to ``event_id`` (and, with ``retry_ms``, says
    how soon a browser reconnects)."""
    retry = b"" if retry_ms is None else b"retry: %d\n" % retry_ms
    return retry + b"id: " + event_id.encode("ascii") + b"\n\n"


class EventParser:
    """Reads a stream line by line: ``line`` returns the event a blank line completes,
    if any; ``last_id`` is the id the stream last gave (an event's, or a position)."""

    def __init__(self) -> None:
        self.last_id: str | None = None
        self._id: str | None = None
        self._data: list[bytes] = []

    def line(self, raw: bytes) -> ChangeEvent | None:
        """Take one line (its end of line included or not).

        Raises:
            InvalidArgumentError: An event's data is no change event.
        """
        line = raw.rstrip(b"\r\n")
        if not line:  # the end of a frame
            data, self._data = self._data, []
            if self._id is not None:
                self.last_id = self._id
            if not data:
                return None
            try:
                loaded = json.loads(b"\n".join(data))
            except (ValueError, RecursionError) as exc:
                raise InvalidArgumentError(f"malformed change event: {exc}", None) from None
            return ChangeEvent.from_dict(loaded)
        if line.startswith(b":"):
            return None
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"id":
            self._id = value.decode("ascii", "replace")
        elif name == b"data":
            self._data.append(value)
        return None
