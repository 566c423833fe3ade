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
import resource
from dataclasses import dataclass

from ..tree import CHUNK_SIZE

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

    @property
    def free(self) -> int:
        """What may still be written."""
        return max(0, self.budget - self.held)

    @property
    def snapshots_only(self) -> int:
        """Of ``held``, what only snapshots (and other frozen views) hold: what
        deleting every snapshot would free."""
        return max(0, self.held - self.live)


def available_memory() -> int:
    """Bytes this process can still allocate: the least of the machine's
    available memory, the headroom under the address-space limit
    (``RLIMIT_AS``) and the headroom of its cgroup's memory limit."""
    candidates = [_meminfo_available()]
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        candidates.append(soft - _status_kib("VmSize") * 1024)
    cgroup = _cgroup_headroom()
    if cgroup is not None:
        candidates.append(cgroup)
    return max(0, min(candidates))


def default_memory_budget() -> int:
    """The budget of a workspace made without one: ``DEFAULT_BUDGET_SHARE`` of
    ``available_memory()``, in whole chunks."""
    share = int(available_memory() * DEFAULT_BUDGET_SHARE)
    return share - share % CHUNK_SIZE


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _status_kib(field: str) -> int:
    """A ``kB`` figure of /proc/self/status (0 if absent)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cgroup_headroom() -> int | None:
    """memory.max - memory.current of this process's cgroup (v2), if limited."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as cgroups:
            path = next((line[3:].strip() for line in cgroups if line.startswith("0::")), None)
        if path is None:
            return None
        base = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        with open(os.path.join(base, "memory.max"), encoding="ascii") as limit_file:
            limit = limit_file.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(base, "memory.current"), encoding="ascii") as current_file:
            return int(limit) - int(current_file.read())
    except (OSError, ValueError):
        return None
