"""Streamed answers of the servers (Starlette): closed however they end.

``ClosingStreamingResponse`` is every streamed answer's base (the debug UI's
downloads and its tree too); ``EventStreamResponse`` streams the change feed's
frames (``_sse``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator

from starlette.responses import StreamingResponse
from starlette.types import Send

from ._sse import SSE_MEDIA_TYPE


class ClosingStreamingResponse(StreamingResponse):
    """A ``StreamingResponse`` that closes its body however the answer ends: Starlette
    leaves a body cut short by a disconnect to the garbage collector, and with it the
    ``finally`` of the generator (what it holds: a stream of the feed, a reader of a
    frozen tree, a worker thread's iterator), with a ResourceWarning under trio."""

    async def stream_response(self, send: Send) -> None:
        body = self.body_iterator
        if not isinstance(body, AsyncGenerator):
            await super().stream_response(send)
            return
        async with contextlib.aclosing(body):
            await super().stream_response(send)


class EventStreamResponse(ClosingStreamingResponse):
    """A stream of frames: never cached, and its connection closed when it ends (a
    kept-alive one would hold a server's shutdown until its timeout)."""

    media_type = SSE_MEDIA_TYPE

    def __init__(self, frames: AsyncGenerator[bytes, None]) -> None:
        super().__init__(frames, headers={"cache-control": "no-store", "connection": "close"})
