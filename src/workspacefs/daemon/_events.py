"""``GET /v3/events``: the workspace's change feed as server-sent events.

The stream starts after the event ``Last-Event-ID`` names (what a browser's
``EventSource`` sends when it reconnects), else after ``?after=``, else at
the latest event (from now on). ``?glob=`` keeps the events naming paths it
matches (cut to those paths), as grep's file filter takes a glob;
``?keepalive=`` is how many seconds an idle stream waits before a comment
line (default 15). A bad id or glob is refused before the stream starts, as
any verb's argument is (400, the error as JSON).

The feed (``fs.ChangeFeed``) is started by the first reader and runs until
the daemon stops. Each connected reader polls its ring every ``POLL``
seconds from the event loop (a read is a slice of the ring under a lock the
feed holds for an append): no thread is held per reader. When the daemon
stops, every stream ends at its next poll, so an unmount never waits for
its watchers.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Callable

import anyio
import anyio.to_thread
from starlette.requests import Request

from .._errors import InvalidArgumentError
from ..fs import (
    FEED_READ_EVENTS,
    ChangeFeed,
    Matcher,
    encode_event,
    event_filter,
    event_matching,
)
from ._responses import EventStreamResponse
from ._sse import SSE_KEEPALIVE, sse_frame, sse_position
from ._workspace import Workspace

POLL = 0.05
"""Seconds between a stream's looks at the ring while it has nothing to send."""
KEEPALIVE = 15.0
"""Seconds an idle stream waits before a comment line, unless the reader says."""
RETRY_MS = 1000
"""How soon a browser reconnects after the stream broke."""


def _keepalive(raw: str | None) -> float:
    if raw is None:
        return KEEPALIVE
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0.1 <= seconds <= 3600:  # NaN fails too
        raise InvalidArgumentError("keepalive must be 0.1 to 3600 seconds", None)
    return seconds


async def events_response(
    request: Request, workspace: Workspace, stopping: Callable[[], bool]
) -> EventStreamResponse:
    """The stream ``request`` asks for (see the module docstring).

    Raises:
        InvalidArgumentError: A malformed or future event id, glob or keepalive.
    """
    query = request.query_params
    after = request.headers.get("last-event-id") or query.get("after")
    matches = event_filter(query.get("glob"))
    keepalive = _keepalive(query.get("keepalive"))
    # The first reader starts the feed, which takes the tree lock: not on the loop.
    feed = await anyio.to_thread.run_sync(workspace.fs.change_feed)
    if after is not None:
        feed.read(after, 0)  # refused now if it is no id of this feed's (a stale one: a gap)
    return EventStreamResponse(_stream(feed, after or feed.latest, matches, keepalive, stopping))


async def _stream(
    feed: ChangeFeed,
    start: str,
    matches: Matcher | None,
    keepalive: float,
    stopping: Callable[[], bool],
) -> AsyncGenerator[bytes, None]:
    """The frames: the start position, then every event after it as it comes."""
    where = start
    yield sse_position(where, retry_ms=RETRY_MS)
    quiet_since = anyio.current_time()
    while not (stopping() or feed.closed):
        found = feed.read(where)
        frames = []
        for kept in found.events:
            event = event_matching(kept.event, matches)
            if event is not None:
                data = kept.data if event is kept.event else encode_event(event)
                frames.append(sse_frame(event.id, data))
        if found.position != where:
            where = found.position
            if not frames:
                frames.append(sse_position(where))  # past events this reader does not want
        now = anyio.current_time()
        if frames:
            yield b"".join(frames)
            quiet_since = now
            if len(found.events) == FEED_READ_EVENTS:
                continue  # there may be more: read on at once
        elif now - quiet_since >= keepalive:
            yield SSE_KEEPALIVE
            quiet_since = now
        await anyio.sleep(POLL)
