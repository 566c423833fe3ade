"""Chunks: the buffers file data lives in, each counted in its tree's budget.

A file's data is a dict ``index -> Chunk``; chunk ``i`` holds the bytes from
``i * CHUNK_SIZE`` on, possibly fewer than ``CHUNK_SIZE`` (the rest reads as
zeros up to the file's size), and a missing chunk is a hole.

A chunk owns exactly its own buffer: it is always a copy, never a view of
the buffer a write came in (a view would keep that whole buffer alive for as
long as the chunk lives, e.g. a 16 MiB request buffer behind a file truncated
to one chunk). So what the budget counts is what is held.
"""

from __future__ import annotations

from ._budget import MemoryBudget

CHUNK_SIZE = 1 << 16
"""File data is held in chunks of this size; a missing chunk reads as zeros."""

Bytes = bytes | bytearray | memoryview
"""What a write may pass in."""


class Chunk(bytearray):
    """The bytes of one chunk, counted in ``budget`` from birth to death.

    Shared between versions: only the live tree changes a chunk in place, and
    only one its file made in the current data epoch (see ``File.owned``).
    Size changes go through ``put`` and ``shrink``, which keep the count true.
    """

    __slots__ = ("_budget",)

    def __init__(self, budget: MemoryBudget, data: Bytes | int) -> None:
        self._budget = budget  # first: if the copy fails, __del__ gives back nothing
        super().__init__(data)
        budget.add(len(self))

    def __del__(self) -> None:
        self._budget.release(len(self))

    def put(self, start: int, data: Bytes) -> None:
        """Write ``data`` at ``start`` in place; a gap before it becomes zeros."""
        before = len(self)
        if start > before:
            self.extend(bytes(start - before))
        self[start : start + len(data)] = data
        if len(self) > before:
            self._budget.add(len(self) - before)

    def zero(self, start: int, end: int) -> None:
        """Zero ``[start, end)`` in place, growing the chunk to ``end`` if it is shorter."""
        held = min(end, len(self))
        if start < held:
            self[start:held] = bytes(held - start)
        if end > held:
            self.put(held, bytes(end - held))

    def shrink(self, size: int) -> None:
        """Drop the bytes from ``size`` on."""
        if size < len(self):
            dropped = len(self) - size
            del self[size:]
            self._budget.release(dropped)


_ZEROS = bytes(CHUNK_SIZE)


def is_zero(data: memoryview) -> bool:
    """True if ``data`` (at most a chunk) holds only zero bytes: a hole need not be kept."""
    # A memcmp; comparing two memoryviews goes item by item, 35 times slower (measured).
    return _ZEROS.startswith(data)
