"""``GET /v3/events``: the workspace's change feed as server-sent events.

The stream starts after the event ``Last-Event-ID`` names (what a browser's
``EventSource`` sends when it reconnects), else after ``?after=``, else at
the latest event (from now on). ``?glob=`` keeps the events naming paths it
matches (cut to those paths), as grep's file filter takes a glob;
``?keepalive=`` is how many seconds an idle stream waits before a comment
line (default 15). A bad id or glob is refused before the stream starts, as
any verb's argument is (400, the error as JSON).

The feed (``fs.ChangeFeed``) is started by the first reader and runs until
the daemon stops. Each connected reader waits in the event loop, no thread
held per reader, until the feed has kept events (``ChangeFeed.on_kept``,
which wakes it through trio's ``run_sync_soon``), then reads its ring (a
slice under a lock the feed holds for an append). It also wakes every
``STOP_CHECK`` seconds, so that when the daemon stops every stream ends
soon and an unmount never waits for its watchers. (Readers polled the ring
every 50 ms before: each look woke the daemon's loop, which then wanted the
interpreter the mount's thread was busy with.)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncGenerator, Callable

import anyio
import anyio.to_thread
import trio
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

STOP_CHECK = 0.25
"""Seconds between a waiting stream's looks at whether the daemon stops."""
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


class _Wakeup:
    """What the feed calls when it has kept events: sets, in the event loop, the
    event the stream waits on (armed anew before each read of the ring, so a batch
    kept after the read still wakes it)."""

    def __init__(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self.kept = trio.Event()

    def arm(self) -> None:
        if self.kept.is_set():
            self.kept = trio.Event()

    def __call__(self) -> None:  # in the feed's thread
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._set)

    def _set(self) -> None:
        self.kept.set()


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
    wakeup = _Wakeup()
    stop_listening = feed.on_kept(wakeup)
    try:
        quiet_since = trio.current_time()
        while not (stopping() or feed.closed):
            wakeup.arm()
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
            now = trio.current_time()
            if frames:
                yield b"".join(frames)
                quiet_since = now
                if len(found.events) == FEED_READ_EVENTS:
                    continue  # there may be more: read on at once
            elif now - quiet_since >= keepalive:
                yield SSE_KEEPALIVE
                quiet_since = now
            idle_left = quiet_since + keepalive - trio.current_time()
            with trio.move_on_after(max(0.0, min(STOP_CHECK, idle_left))):
                await wakeup.kept.wait()
    finally:
        stop_listening()
