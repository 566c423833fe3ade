"""The memory a tree's file data holds, and the budget it may not pass.

File data lives in chunks (see ``_nodes``). A chunk counts its bytes into its
tree's ``MemoryBudget`` when it is made or grows, and gives them back when it
is freed: CPython frees an object the moment the last reference to it goes
(chunks hold no references, so they are never left to the cycle collector),
which makes ``held`` an exact count, not an estimate. It covers the live
tree, every snapshot, every frozen view and every orphan alike: data that
only a snapshot still holds counts until that snapshot is deleted.

Every write asks first (``reserve``) for the bytes it would add and raises
``NoSpaceError`` (ENOSPC) if they would pass the limit, so the tree never
allocates past its budget: the check is made before anything is copied or
changed. Writes run under the tree lock, so a check and the allocation it
allows cannot be overtaken by another write; frees may come from any thread
(a snapshot deleted elsewhere), hence the small lock around the count.

What is not counted: the tree's own bookkeeping (nodes, directory dicts,
table pages; a few hundred bytes an inode), Python's per-chunk header (under
0.2% of a full chunk), and the spare capacity of a chunk grown in place by
small appends (at most an eighth of it). ``docs/memory.md`` gives the bounds.
"""

from __future__ import annotations

import threading

from .._errors import NoSpaceError


class MemoryBudget:
    """Bytes of file data held by one tree and its versions, and their limit.

    Args:
        limit: The most bytes the tree's file data may hold; None for no limit.
    """

    __slots__ = ("_held", "_lock", "_peak", "limit")

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and limit < 0:
            raise ValueError("a memory budget cannot be negative")
        self.limit = limit
        self._held = 0
        self._peak = 0
        self._lock = threading.Lock()

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

    def reserve(self, nbytes: int) -> None:
        """Raise ``NoSpaceError`` unless ``nbytes`` more fit within the limit.

        Call it before allocating; it only checks (the chunks count what they take).
        """
        if self.limit is not None and nbytes > 0 and self._held + nbytes > self.limit:
            raise NoSpaceError(
                f"the workspace memory budget of {self.limit:,} bytes is used up "
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
