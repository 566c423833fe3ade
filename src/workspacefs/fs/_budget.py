"""A workspace's memory budget: its default, and the report of what it holds.

The tree counts the bytes its file data holds and refuses writes past the
limit (``tree.MemoryBudget``); this module picks the limit when none is
given and reports the figures. The default is half of what this process can
still allocate when the workspace is made: the other half is headroom for
what the budget does not count (Python objects for inodes and directories,
request buffers of a mount, the rest of the program). ``docs/memory.md``
explains the bounds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..tree import CHUNK_SIZE
from ._ceilings import memory_ceilings

DEFAULT_BUDGET_SHARE = 0.5
"""The share of the memory this process can still allocate that a workspace
gets by default."""


@dataclass(frozen=True, slots=True)
class MemoryUsage:
    """What a workspace's file data holds, against its budget (bytes)."""

    budget: int
    """The most the workspace's file data may hold; writes past it fail with ENOSPC."""
    held: int
    """Held now by the live tree and every snapshot (shared data counted once)."""
    live: int
    """Of ``held``, what the live tree holds (open unlinked files included)."""
    evictable: int = 0
    """Of ``held``, clean data: what the store holds too, so it may leave memory when
    the budget needs room (0 for a workspace without a store: nothing leaves)."""
    on_disk: int = 0
    """Bytes of the live tree's files not in memory: deferred on stored content,
    never loaded or evicted; read back on access."""

    @property
    def free(self) -> int:
        """What may still be written."""
        return max(0, self.budget - self.held)

    @property
    def snapshots_only(self) -> int:
        """Of ``held``, what only snapshots (and other frozen views) hold: what
        deleting every snapshot would free."""
        return max(0, self.held - self.live)


def available_memory(proc: str | os.PathLike[str] = "/proc") -> int:
    """Bytes this process can still allocate: the least headroom of every limit it is
    under (``memory_ceilings``: the machine's available memory, ``RLIMIT_AS`` and
    ``RLIMIT_DATA``, the memory limits of its cgroups, v1 or v2, and of every cgroup
    above them).

    Args:
        proc: Where procfs is mounted (a fake tree in tests).
    """
    return max(0, min(ceiling.headroom for ceiling in memory_ceilings(proc)))


def default_memory_budget() -> int:
    """The budget of a workspace made without one: ``DEFAULT_BUDGET_SHARE`` of
    ``available_memory()``, in whole chunks."""
    share = int(available_memory() * DEFAULT_BUDGET_SHARE)
    return share - share % CHUNK_SIZE
