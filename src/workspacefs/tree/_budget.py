"""The memory a tree's file data holds, and the budget it may not pass.

File data lives in chunks (see ``_nodes``). A chunk counts its bytes into its
tree's ``MemoryBudget`` when it is made or grows, and gives them back when it
is freed: CPython frees an object the moment the last reference to it goes
(chunks hold no references, so they are never left to the cycle collector),
which makes ``held`` an exact count, not an estimate. It covers the live
tree, every snapshot, every frozen view and every orphan alike: data that
only a snapshot still holds counts until that snapshot is deleted.

Every write asks first for the bytes it would add and raises ``NoSpaceError``
(ENOSPC) if they would pass the limit, so the tree never allocates past its
budget: the check is made before anything is copied or changed. A write and a
load allocate inside ``granted``, which holds the check and the allocation it
allows together: loads run outside the tree lock (readers of frozen versions),
and forks write under locks of their own, so without it two could each find
room for themselves and together pass the limit. Frees may come from any
thread (a snapshot deleted elsewhere), hence the small lock around the count.

A budget whose workspace has a store is a cache target (``_residency``): a
write that would pass the limit first evicts clean data -- data the store
holds -- and only if that cannot make room is it refused.

What is not counted: the tree's own bookkeeping (nodes, directory dicts,
table pages; a few hundred bytes an inode), Python's per-chunk header (under
0.2% of a full chunk), and the spare capacity of a chunk grown in place by
small appends (at most an eighth of it). ``docs/memory.md`` gives the bounds.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext

from .._errors import NoSpaceError
from ._residency import Residency, Tracked


class MemoryBudget:
    """Bytes of file data held by one tree and its versions, and their limit.

    Args:
        limit: The most bytes the tree's file data may hold; None for no limit.
    """

    __slots__ = ("_granting", "_held", "_lock", "_peak", "limit", "residency")

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and limit < 0:
            raise ValueError("a memory budget cannot be negative")
        self.limit = limit
        self._held = 0
        self._peak = 0
        self._lock = threading.Lock()
        self._granting = threading.Lock()  # see ``granted``
        self.residency = Residency(self)
        """The clean data that may leave memory when the limit is near (inactive
        until a store enables it)."""

    @property
    def held(self) -> int:
        """Bytes of file data alive now, in the live tree and every version."""
        return self._held

    def take_peak(self) -> int:
        """The most held since the last call (or since the budget was made); from
        now on the peak starts again at what is held. What it exceeds ``held`` by
        was freed meanwhile and may sit in the allocator (see the FUSE trimmer)."""
        with self._lock:
            peak, self._peak = self._peak, self._held
        return peak

    @property
    def free(self) -> int | None:
        """Bytes that may still be written (None without a limit)."""
        if self.limit is None:
            return None
        return max(0, self.limit - self._held)

    def has_room(self, nbytes: int) -> bool:
        """True if ``nbytes`` more fit within the limit (always, without one)."""
        limit = self.limit
        return limit is None or self._held + nbytes <= limit

    def reserve(self, nbytes: int, writer: Tracked | None = None) -> None:
        """Raise ``NoSpaceError`` unless ``nbytes`` more fit within the limit, evicting
        clean data first if that makes them fit (``writer``, the file about to
        take them, stays).

        A check, allocating nothing: what allocates does so inside ``granted``.
        """
        if self.limit is None or nbytes <= 0 or self._held + nbytes <= self.limit:
            return
        self.residency.reclaim(nbytes, writer)
        if self._held + nbytes > self.limit:
            raise self._refusal(nbytes)

    def granted(self, nbytes: int, writer: Tracked | None = None) -> AbstractContextManager[None]:
        """Allocate ``nbytes`` at most inside ``with budget.granted(nbytes):``: on entry
        they fit (clean data evicted if needed, else ``NoSpaceError``), and no other
        allocation of this budget runs until the block ends. Nothing to allocate (an
        overwrite in place) or no limit: nothing to hold."""
        if nbytes <= 0 or self.limit is None:
            return _NOTHING
        return Grant(self, nbytes, writer)

    def _refusal(self, nbytes: int) -> NoSpaceError:
        return NoSpaceError(
            f"the workspace memory budget of {self.limit or 0:,} bytes is used up "
            f"({self._held:,} held, {nbytes:,} more needed); delete files or "
            "snapshots (data only snapshots hold counts too)",
            None,
        )

    def add(self, nbytes: int) -> None:
        """Count ``nbytes`` more held (a chunk was made or grew)."""
        with self._lock:
            self._held += nbytes
            if self._held > self._peak:
                self._peak = self._held

    def release(self, nbytes: int) -> None:
        """Count ``nbytes`` less held (a chunk was freed or shrank)."""
        with self._lock:
            self._held -= nbytes


_NOTHING: AbstractContextManager[None] = nullcontext()


class Grant:
    """``MemoryBudget.granted``: the budget's allocation lock, held with room for
    ``nbytes``. Eviction makes room with the lock held (so no other allocation takes
    it first); write-back, with the lock released, since it may wait for threads
    that allocate."""

    __slots__ = ("_budget", "_locked", "_nbytes", "_writer")

    _TRIES = 8  # room written back, then taken by another thread first: try again

    def __init__(self, budget: MemoryBudget, nbytes: int, writer: Tracked | None) -> None:
        self._budget = budget
        self._nbytes = nbytes
        self._writer = writer
        self._locked = False

    def __enter__(self) -> None:
        budget, nbytes = self._budget, self._nbytes
        if budget.limit is None:
            return
        lock = budget._granting
        for _ in range(self._TRIES):
            lock.acquire()
            if self._fits():
                return
            budget.residency.reclaim(nbytes, self._writer, clean=False)
            if self._fits():
                return
            lock.release()
            budget.reserve(nbytes, self._writer)  # writes back too; raises if it cannot
        raise budget._refusal(nbytes)

    def _fits(self) -> bool:
        """True (and the lock kept) if the bytes fit now; hold the lock."""
        budget = self._budget
        limit = budget.limit
        if limit is None or self._nbytes <= 0 or budget._held + self._nbytes <= limit:
            self._locked = True
            return True
        return False

    def __exit__(self, *exc_info: object) -> None:
        if self._locked:
            self._locked = False
            self._budget._granting.release()
