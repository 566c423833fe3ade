"""``ChangeFeed``: what changed in a live tree, with its causes, as numbered events.

The tree lock tells its observers of every change the moment it is made, in
the changing thread (the FUSE thread for the mount's writes, a caller's for
the API), still holding the lock (``TreeLock.observe``). There the feed does
the least it can: it appends the inodes touched and the cause in effect to a
list. Everything else happens in the feed's own thread, a batch at a time:
it waits ``WINDOW`` after the first change of a batch, takes the list and
freezes the tree (O(1), ``Tree.freeze``) under the lock, and then, without
it, diffs the state before the batch with the state after it -- the diff
blame uses (``attributed_changes``), so the paths and kinds are exactly those
that differ, and each path's causes those of its inode (or of the nearest
directory on its way that changed). The paths are grouped by kind and
causes into events of at most ``EVENT_PATHS`` paths, serialised once, and
kept in a ring for readers.

So the feed coalesces: a path written a thousand times in one batch is one
event, and under load batches grow instead of the changing threads slowing
down: while a mount of this process is busy the feed waits for it to be
quiet for ``QUIET`` seconds, up to ``MAX_DELAY`` after the batch's first
change (the diff competes with the mount's thread for the interpreter, and
a burst of writes goes first), and a diff makes way for the mount as it
goes (every 32 paths, about 50 us of work). No path is lost, as the diff
sees every inode any change touched. A file made and removed within one
batch differs in no state the feed compares, and shows in no event.

Readers in an event loop (the daemon's streams) are woken by ``on_kept``
rather than looking at the ring now and then: every look would wake a
thread that wants the interpreter while the mount's thread is busy with it.

The ring keeps the last ``RING_EVENTS`` events, and at most ``RING_BYTES``
of their JSON. A reader that resumes from an id the ring no longer holds
(it fell that far behind, or the id is from an earlier run of the feed)
gets a ``gap`` event first: it must rescan the workspace, as events it
never saw are gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import json
import logging
import secrets
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .._errors import InvalidArgumentError
from ..tree import (
    Cause,
    ChangeKind,
    Journal,
    Tree,
    attributed_changes,
    current_cause,
    mount_busy,
)
from ._access import MAX_DENIALS
from ._events import ChangeEvent, ChangeStream, EventKind, event_id, parse_event_id
from ._patterns import Matcher, path_matcher
from ._rules import Denial

if TYPE_CHECKING:
    from ._access import AccessRules

log = logging.getLogger(__name__)

WINDOW = 0.05
"""Seconds the feed waits after a batch's first change before taking the batch."""
QUIET = 0.01
"""Seconds a busy mount must have been quiet before the feed takes a batch..."""
MAX_DELAY = 1.0
"""...unless the batch's first change is this many seconds old."""
_QUIET_NS = int(QUIET * 1e9)
_LONGEST_LOOK = 0.2
"""The longest a batch waits for a busy mount before it looks again."""
EVENT_PATHS = 1000
"""The most paths one event names (a larger group is split)."""
RING_EVENTS = 10_000
"""The most events the ring keeps for readers that resume."""
RING_BYTES = 32 << 20
"""The most bytes the ring holds, its events' JSON and their paths as objects (the
oldest events go first)."""
READ_EVENTS = 256
"""Events one ``read`` returns at most."""
MAX_CAUSES = 8
"""The most causes an event names per path (the latest ones)."""
MAX_GLOB = 4096
"""The longest path glob a reader may filter with."""
THREAD_NAME = "workspacefs-feed"
"""The feed's thread's name (the kernel's holds its first 15 characters)."""
_IDLE_CHECK = 1.0
"""Seconds the feed's thread sleeps before it looks whether its feed is still used."""


@dataclass(frozen=True, slots=True)
class Kept:
    """An event in the ring, with its JSON (what a daemon sends)."""

    number: int
    event: ChangeEvent
    data: bytes

    @property
    def size(self) -> int:
        """About the bytes it holds: its JSON, and each path a ``str`` in a tuple."""
        return len(self.data) + sum(len(path) + 64 for path in self.event.paths) + 256


@dataclass(frozen=True, slots=True)
class FeedRead:
    """What ``ChangeFeed.read`` found: events after the reader's id, and the id of the
    last one (the reader's new position; its own if there were none)."""

    events: tuple[Kept, ...]
    position: str


def encode_event(event: ChangeEvent) -> bytes:
    """An event as JSON (ASCII: names that are not UTF-8 travel as ``\\udcxx``)."""
    return json.dumps(event.to_dict(), separators=(",", ":")).encode("ascii")


def event_filter(glob: str | None) -> Matcher | None:
    """The paths a reader wants, as ``grep``'s file filter takes them: a glob without
    ``/`` matches the file's name (``*.py``), one with ``/`` its path (``src/**``).

    Raises:
        InvalidArgumentError: The glob is empty, too long or malformed.
    """
    if glob is None:
        return None
    if not glob.strip("/") or len(glob) > MAX_GLOB or "\0" in glob:
        raise InvalidArgumentError(
            f"a path glob must be 1 to {MAX_GLOB} characters, no NUL", glob[:80]
        )
    return path_matcher(glob)


def matching(event: ChangeEvent, matches: Matcher | None) -> ChangeEvent | None:
    """``event`` cut to the paths ``matches`` takes (None: none); a gap always passes."""
    if matches is None or event.kind == "gap":
        return event
    paths = tuple(path for path in event.paths if matches(path))
    if not paths:
        return None
    return event if len(paths) == len(event.paths) else dataclasses.replace(event, paths=paths)


class ChangeFeed:
    """The change feed of one live tree; see the module docstring.

    It starts observing at once, from the state the tree is in, and runs until
    ``close`` (or until nothing refers to it any more).

    Args:
        tree: The live tree.
        rules: Its access rules: the paths they hide from everyone are left out of
            the events, and each change they refuse is a ``denied`` event.
        window: ``WINDOW``.
        ring_events: ``RING_EVENTS``.
        ring_bytes: ``RING_BYTES``.
    """

    def __init__(
        self,
        tree: Tree,
        *,
        rules: AccessRules | None = None,
        window: float = WINDOW,
        ring_events: int = RING_EVENTS,
        ring_bytes: int = RING_BYTES,
    ) -> None:
        self.stream = secrets.token_hex(4)
        """This run's name, in every event id."""
        self._tree = tree
        self._window = window
        self._ring_events = ring_events
        self._ring_bytes = ring_bytes
        # What changed since the last batch was taken, by cause (its id: the value holds
        # it, so no other object can take the id meanwhile): the inodes each touched.
        # Written under the tree lock only, by the observer and by the thread taking it;
        # bounded by the causes at work times the inodes they touch.
        self._pending: dict[int, tuple[Cause | None, set[int]]] = {}
        # Denials since the last batch (the rules keep no more than these).
        self._rules = rules
        self._denied: deque[Denial] = deque(maxlen=MAX_DENIALS)
        self._wake = threading.Event()
        self._closing = threading.Event()  # cuts the feed's thread's wait short
        # The ring: a list whose events before ``_ring_start`` are dropped (cut off
        # now and then), so a reader's place in it is one index; the last event's
        # number; readers wait on the condition.
        self._ring: list[Kept] = []
        self._ring_start = 0
        self._ring_size = 0
        self._last = 0
        self._changed = threading.Condition()
        self._listeners: list[Callable[[], None]] = []  # under ``_changed``
        self.closed = False
        with tree.lock.unpublished:  # the first state and the first record, together
            self._state = tree.freeze()
            self._unobserve = tree.lock.observe(self._observe)
            self._unobserve_denials = (
                rules.on_denial(self._observe_denial) if rules is not None else _nothing
            )
        self._thread = threading.Thread(
            target=_run, args=(weakref.ref(self),), name=THREAD_NAME, daemon=True
        )
        self._thread.start()

    # -- the changing threads (under the tree lock) ---------------------------------------

    def _observe(self, journal: Journal) -> None:
        # Keyed by the cause's identity: one object per tool call, and per process on
        # the mount, so a lookup hashes an int, not the cause's fields.
        cause = current_cause() if self._tree.attributing else None
        known = self._pending.get(id(cause))
        if known is not None:
            known[1].update(journal.inodes)
            return
        if not self._pending:
            self._wake.set()  # once per batch
        self._pending[id(cause)] = (cause, set(journal.inodes))

    def _observe_denial(self, denial: Denial) -> None:
        self._denied.append(denial)
        self._wake.set()

    # -- the feed's thread ----------------------------------------------------------------

    def _step(self) -> None:
        """Take the batch, turn it into events, keep them."""
        tree = self._tree
        with tree.lock.unpublished:  # a freeze changes nothing anyone must hear of
            self._wake.clear()
            records, self._pending = self._pending, {}
            denied = list(self._denied)
            self._denied.clear()
            after = tree.freeze()
            full = tree.blame_full_commands
        before, self._state = self._state, after
        when = datetime.now(UTC)
        changed, causes = _united(records.values(), full)
        # The diff makes way for a busy mount as it goes (it competes with the mount's
        # thread for the interpreter): under load a batch waits, and the next grows.
        found = attributed_changes(before, after, changed, causes)
        # What the rules hide from everyone is in no event (the feed names no reader: a
        # rule for one tool's calls leaves its paths in, for the harness that set it).
        hidden = None if self._rules is None else self._rules.hidden_filter()
        if hidden is not None:
            found = (change for change in found if not hidden(change[1]))
        refusals: Iterator[tuple[EventKind, tuple[str, ...], tuple[Cause, ...], Denial | None]]
        refusals = (("denied", (d.path,), () if d.cause is None else (d.cause,), d) for d in denied)
        changes = ((kind, paths, who, None) for kind, paths, who in _grouped(found))
        self._keep(
            ChangeEvent(event_id(self.stream, self._last + n), kind, paths, who, when, denial)
            for n, (kind, paths, who, denial) in enumerate(itertools.chain(refusals, changes), 1)
        )

    def _keep(self, events: Iterable[ChangeEvent]) -> None:
        """Serialise ``events`` (numbered on from the last one) and keep them."""
        kept = [Kept(self._last + n, e, encode_event(e)) for n, e in enumerate(events, 1)]
        if not kept:
            return
        with self._changed:
            ring = self._ring
            ring.extend(kept)
            self._ring_size += sum(k.size for k in kept)
            self._last = kept[-1].number
            start = self._ring_start
            while len(ring) - start > self._ring_events or self._ring_size > self._ring_bytes:
                self._ring_size -= ring[start].size
                start += 1
            if start > len(ring) // 2:
                del ring[:start]  # O(events kept), once they have been replaced: amortised O(1)
                start = 0
            self._ring_start = start
            self._changed.notify_all()
            listeners = tuple(self._listeners)
        _tell(listeners)

    def _lost(self) -> None:
        """After a failed batch: start again from the state now, and tell every reader
        (a gap in the ring) that what the batch held is lost."""
        tree = self._tree
        with tree.lock.unpublished:
            self._wake.clear()
            self._pending = {}
            self._state = tree.freeze()
        gap = ChangeEvent(event_id(self.stream, self._last + 1), "gap", (), (), _now())
        self._keep([gap])

    # -- readers --------------------------------------------------------------------------

    @property
    def latest(self) -> str:
        """The id of the last event (``<stream>-0`` before the first)."""
        with self._changed:
            return event_id(self.stream, self._last)

    def read(self, after: str | None, limit: int = READ_EVENTS) -> FeedRead:
        """At most ``limit`` events after the one ``after`` names (None: none, the
        position is the latest event); a ``gap`` event alone if the ring no longer
        holds every event after it.

        Raises:
            InvalidArgumentError: ``after`` is no event id, or one of this feed not
                yet given.
        """
        stream, number = (None, 0) if after is None else parse_event_id(after)
        with self._changed:
            last = self._last
            if after is None:
                return FeedRead((), event_id(self.stream, last))
            held = len(self._ring) - self._ring_start
            first = self._ring[self._ring_start].number if held else last + 1
            if stream != self.stream or number < first - 1:
                gap = ChangeEvent(event_id(self.stream, last), "gap", (), (), _now())
                return FeedRead((Kept(last, gap, encode_event(gap)),), gap.id)
            if number > last:
                raise InvalidArgumentError(
                    f"event {after} is ahead of this feed (its latest is "
                    f"{event_id(self.stream, last)})",
                    None,
                )
            at = self._ring_start + number - first + 1
            found = tuple(self._ring[at : at + limit])
        return FeedRead(found, found[-1].event.id if found else after)

    def wait(self, after: str, deadline: float | None) -> bool:
        """Wait until an event after ``after`` (this feed's) is kept, or the monotonic
        ``deadline`` passes (None: no deadline); whether one is."""
        _, number = parse_event_id(after)
        with self._changed:
            while self._last <= number and not self.closed:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return self._last > number

    def events(
        self, after: str | None = None, *, glob: str | None = None, timeout: float | None = None
    ) -> ChangeStream:
        """A stream of this feed's events after ``after`` (None: from now on), those
        naming paths ``glob`` matches (``event_filter``); see ``ChangeStream``.

        Raises:
            InvalidArgumentError: A malformed or future id, or a malformed glob.
        """
        return _FeedStream(self, after, event_filter(glob), timeout)

    def close(self) -> None:
        """Stop observing the tree; readers' streams end."""
        with self._tree.lock.unpublished:
            if self.closed:
                return
            self.closed = True
            self._unobserve()
            self._unobserve_denials()
            self._pending = {}
        self._closing.set()
        self._wake.set()
        with self._changed:
            self._changed.notify_all()
            listeners = tuple(self._listeners)
        _tell(listeners)

    def on_kept(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` each time events are kept, and when the feed closes (for
        readers that wait in an event loop, not a thread); returns the function that
        stops it. It is called in the feed's thread, holding no lock, so it must only
        signal (trio's ``run_sync_soon``, say): the next batch waits for it."""
        with self._changed:
            self._listeners.append(listener)

        def stop() -> None:
            with self._changed, contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return stop


class _FeedStream(ChangeStream):
    """A ``ChangeStream`` of a feed in this process."""

    def __init__(
        self, feed: ChangeFeed, after: str | None, matches: Matcher | None, timeout: float | None
    ) -> None:
        if after is not None:
            feed.read(after, 0)  # refused now if it is no id of this feed's
        super().__init__(feed.latest if after is None else after, timeout)
        self._feed = feed
        self._matches = matches
        self._position = self.last_id
        self._queue: deque[ChangeEvent] = deque()

    def _take(self, deadline: float | None) -> ChangeEvent | None:
        while not self._queue:
            found = self._feed.read(self._position)
            self._position = found.position
            for kept in found.events:
                event = matching(kept.event, self._matches)
                if event is not None:
                    self._queue.append(event)
            if self._queue:
                break
            self.last_id = found.position  # passed events this reader does not want
            if not found.events and not self._feed.wait(self._position, deadline):
                return None
        return self._queue.popleft()


def _nothing() -> None:
    pass


def _tell(listeners: Iterable[Callable[[], None]]) -> None:
    for listener in listeners:
        try:
            listener()
        except Exception:
            log.exception("a change feed listener failed")


def _run(ref: weakref.ref[ChangeFeed]) -> None:
    """The feed's thread: a batch each time changes come, until the feed is closed or
    gone (it holds the feed only while it works, so a feed nobody uses goes)."""
    # Named for the kernel too (``top -H``, ``/proc``: what its CPU time is read by).
    with contextlib.suppress(OSError), open("/proc/thread-self/comm", "w") as comm:
        comm.write(THREAD_NAME[:15])
    while True:
        feed = ref()
        if feed is None or feed.closed:
            return
        if feed._wake.wait(_IDLE_CHECK) and _batch_grown(feed):
            try:
                with _collector_held():
                    feed._step()
            except Exception:
                log.exception("the change feed failed to read a batch; readers get a gap")
                feed._lost()
        del feed


@contextlib.contextmanager
def _collector_held() -> Iterator[None]:
    """The cyclic garbage collector paused while a batch is diffed: the diff holds
    a few objects per changed path until it ends, and the collector would promote
    them to its oldest generation, whose runs walk every object alive (the whole
    tree's): with it running, a 150,000-file burst cost the mount 0.8 s more of
    full collections. Freed by reference counting, they never reach it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _batch_grown(feed: ChangeFeed) -> bool:
    """Wait while the batch grows: ``WINDOW``, then while a mount is busy, up to
    ``MAX_DELAY`` in all; False if the feed is closed meanwhile."""
    until = time.monotonic() + MAX_DELAY
    if feed._closing.wait(feed._window):
        return False
    # Each look at the mount wakes this thread, which then wants the interpreter the
    # mount's thread is busy with: the looks grow sparser while it stays busy.
    pause = QUIET
    while mount_busy(_QUIET_NS):
        left = until - time.monotonic()
        if left <= 0:
            break
        if feed._closing.wait(min(pause, left)):
            return False
        pause = min(2 * pause, _LONGEST_LOOK)
    return True


def _united(
    records: Iterable[tuple[Cause | None, set[int]]], full: bool
) -> tuple[set[int], dict[int, tuple[Cause, ...]]]:
    """Every inode the records name, and each one's causes, in the order they came
    (masked as history keeps them unless ``full``). Inodes with the same causes share
    one tuple: events are grouped by it."""
    changed: set[int] = set()
    causes: dict[int, tuple[Cause, ...]] = {}
    for cause, inodes in records:
        changed |= inodes
        if cause is None:
            continue
        if not full:
            cause = cause.redacted()  # itself, unless its command line holds secrets
        alone = (cause,)
        for ino in inodes:
            known = causes.get(ino)
            if known is None:
                causes[ino] = alone
            elif known[-1] is not cause and cause not in known:
                causes[ino] = (*known[-(MAX_CAUSES - 1) :], cause)
    return changed, causes


def _grouped(
    changes: Iterable[tuple[ChangeKind, str, tuple[Cause, ...]]],
) -> Iterator[tuple[ChangeKind, tuple[str, ...], tuple[Cause, ...]]]:
    """The changes (each kind's paths sorted, as ``attributed_changes`` gives them) as
    (kind, paths, causes), a group per kind and causes in the order of their first
    path, cut to ``EVENT_PATHS`` paths."""
    # By the causes' tuple first (most paths share one: no hashing of causes per
    # path), then the few groups by their value.
    shared: dict[tuple[ChangeKind, int], tuple[tuple[Cause, ...], list[str]]] = {}
    for kind, path, causes in changes:
        key = (kind, id(causes))
        group = shared.get(key)
        if group is None:
            group = shared[key] = (causes, [])
        group[1].append(path)
    groups: dict[tuple[ChangeKind, tuple[Cause, ...]], list[str]] = {}
    for (kind, _), (causes, paths) in shared.items():
        groups.setdefault((kind, causes), []).extend(paths)
    for (kind, causes), paths in groups.items():
        paths.sort()  # sorted already unless groups of equal causes were joined
        for start in range(0, len(paths), EVENT_PATHS):
            yield kind, tuple(paths[start : start + EVENT_PATHS]), causes


def _now() -> datetime:
    return datetime.now(UTC)
