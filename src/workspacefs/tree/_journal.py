"""What changed under the tree lock, and who is told when it is released.

Every mutation of the live tree records the inodes and directory entries it
touched; there is no mode to switch on, so a new write path cannot forget.
The lock hands what was recorded to the tree's subscribers (the FUSE layer's
kernel cache invalidation) when its outermost holder releases it, outside
the lock: a subscriber may need another thread to take the lock before it
returns (the kernel may ask the FUSE loop to flush), so it never runs under it.

FUSE handlers hold it as ``lock.unpublished``: the kernel made those
changes itself, already knows them, and must not be asked to invalidate
from inside its own request.

Observers (``observe``) are told of every journal an outermost release hands
over, the kernel's own included, still under the lock: for a record of every
change in the order the lock serialised them (the change feed), which must
cost the changing thread no more than an append.

A front door the owner relies on can fail (a mount whose FUSE loop died):
``refuse`` then makes every publishing hold, i.e. every API call, raise an
error until it is lifted, so the owner learns of it on its next call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Journal:
    """What a group of operations touched: inodes, and directory entries by name."""

    __slots__ = ("entries", "inodes")

    def __init__(self) -> None:
        self.inodes: set[int] = set()
        self.entries: set[tuple[int, str]] = set()

    def __bool__(self) -> bool:
        return bool(self.inodes or self.entries)

    def update(self, other: Journal) -> None:
        """Add what ``other`` touched."""
        self.inodes |= other.inodes
        self.entries |= other.entries


Subscriber = Callable[[Journal], None]
"""Told what changed, in the releasing thread, after the lock is released."""
Observer = Callable[[Journal], None]
"""Told what changed, in the releasing thread, still holding the lock: it must only
record (an append), as it delays every other holder, the FUSE thread included."""


class TreeLock:
    """The tree's reentrant lock; its outermost release publishes the journal."""

    __slots__ = (
        "_depth",
        "_lock",
        "_observers",
        "_publish",
        "_refusal",
        "_subscribers",
        "_take",
        "unpublished",
    )

    def __init__(self, take: Callable[[], Journal]) -> None:
        self._lock = threading.RLock()
        self._take = take
        self._depth = 0
        self._publish = True
        self._subscribers: list[Subscriber] = []
        self._observers: list[Observer] = []
        self._refusal: Callable[[], BaseException] | None = None
        self.unpublished = _UnpublishedHold(self)
        """The same lock; what changes under it is dropped, not published.

        For the FUSE handlers only (see the module docstring). Nested inside a
        publishing hold, the outer hold decides.
        """

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Tell ``subscriber`` what changed after each publishing release; returns the
        unsubscribe function."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def observe(self, observer: Observer) -> Callable[[], None]:
        """Tell ``observer``, under the lock, what each outermost release hands over,
        published or not (the FUSE handlers' changes too); returns the function that
        stops it. See ``Observer``."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    def owned(self) -> bool:
        """True if the calling thread holds the lock."""
        return bool(self._lock._is_owned())  # type: ignore[attr-defined]

    def try_hold(self) -> bool:
        """Take the lock, unpublished, if no other thread holds it (True); never waits.
        For work that reads the live tree on behalf of another lock's holder, which
        must not wait for this one (``release_hold`` gives it back)."""
        if not self._lock.acquire(blocking=False):
            return False
        if self._depth == 0:
            self._publish = False
        self._depth += 1
        return True

    def release_hold(self) -> None:
        """Give back what ``try_hold`` took."""
        self._release()

    def refuse(self, error: Callable[[], BaseException] | None) -> None:
        """Make every publishing hold raise what ``error()`` returns (None lifts it).

        Unpublished holds (the FUSE handlers, their cleanup) are not refused.
        """
        self._refusal = error

    def __enter__(self) -> TreeLock:
        self._lock.acquire()
        if self._depth == 0:
            refusal = self._refusal
            if refusal is not None:
                self._lock.release()
                raise refusal()
            self._publish = True
        self._depth += 1
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self._release()

    def _release(self) -> None:
        depth = self._depth = self._depth - 1
        if depth:
            self._lock.release()
            return
        journal = self._take()
        if self._observers and journal:
            for observer in self._observers:
                observer(journal)
        if not (self._publish and journal and self._subscribers):
            self._lock.release()
            return
        subscribers = list(self._subscribers)
        self._lock.release()
        for subscriber in subscribers:
            subscriber(journal)


class _UnpublishedHold:
    """``TreeLock.unpublished``: reusable, as handlers take it on every request."""

    __slots__ = ("_lock",)

    def __init__(self, lock: TreeLock) -> None:
        self._lock = lock

    def __enter__(self) -> TreeLock:
        # TreeLock.__enter__ without the refusal, inline: every request takes it.
        lock = self._lock
        lock._lock.acquire()
        if lock._depth == 0:
            lock._publish = False
        lock._depth += 1
        return lock

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self._lock._release()
