"""Directory listings for readdir without opendir: offsets that survive any change.

Without opendir (open-free mode) there is no handle to pin a frozen copy of
the entries to, and the kernel may continue a listing at any offset it was
given, after any change. So an entry's offset is derived from its name, as
ext4 and NFS do: entries are listed in the order of a 62-bit hash of their
name, and a listing continues after the hash it was given. An entry that is
neither added nor removed meanwhile is then returned exactly once, whatever
else changes (POSIX leaves the added and removed ones open).

Offsets 1 and 2 are ``.`` and ``..``; an entry's offset is 3 plus its hash.
Two names in one directory sharing a hash (about one chance in 10^8 for a
million entries) could make a listing that stops between them skip the second.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Mapping

_HASH_MASK = (1 << 62) - 1
FIRST_ENTRY = 3
"""The offset of the first entry after ``.`` (1) and ``..`` (2)."""


def offset_of(name: str) -> int:
    """The readdir offset after ``name``: where a listing that returned it continues.

    Python's string hash: stable for the life of the process (that is, of the
    mount), cached on the string, and as good as any to spread names.
    """
    return FIRST_ENTRY + (hash(name) & _HASH_MASK)


class _Ordered:
    """One directory's entries in offset order, with the entries they were built from."""

    __slots__ = ("entries", "inodes", "names", "offsets")

    def __init__(self, entries: Mapping[str, int]) -> None:
        self.entries = dict(entries)
        ordered = sorted((offset_of(name), name, ino) for name, ino in self.entries.items())
        self.offsets = [offset for offset, _, _ in ordered]
        self.names = [name for _, name, _ in ordered]
        self.inodes = [ino for _, _, ino in ordered]


class Listings:
    """Recently listed directories in offset order, rebuilt when their entries change.

    A listing arrives in many readdir requests, each continuing where the
    last stopped; sorting once per directory version keeps each request
    O(entries) (a dict comparison) instead of O(entries log entries).

    Args:
        capacity: How many directories to keep.
    """

    __slots__ = ("_capacity", "_ordered")

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self._ordered: OrderedDict[int, _Ordered] = OrderedDict()

    def after(
        self, key: int, entries: Mapping[str, int], offset: int
    ) -> tuple[list[int], list[str], list[int], int]:
        """(offsets, names, inodes, start): the directory ``key`` with ``entries``,
        in offset order; the listing from ``offset`` on starts at index ``start``."""
        ordered = self._ordered.get(key)
        if ordered is None or ordered.entries != entries:
            ordered = _Ordered(entries)
            self._ordered[key] = ordered
            if len(self._ordered) > self._capacity:
                self._ordered.popitem(last=False)
        else:
            self._ordered.move_to_end(key)
        start = bisect.bisect_right(ordered.offsets, offset) if offset >= FIRST_ENTRY else 0
        return ordered.offsets, ordered.names, ordered.inodes, start

    def clear(self) -> None:
        """Forget every listing."""
        self._ordered.clear()
