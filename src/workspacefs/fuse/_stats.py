"""How many requests the kernel sent the mount, by type, and how long their handlers took.

A request is a round trip through the kernel into Python (~50-100 us on a
2-vCPU VM, most of it the wakeup), so the count of requests, not the speed of
the handlers, decides how fast the mount is. Every handler is counted where
it is wrapped (``_operations.fuse_errors``); what the kernel or libfuse
answers without Python (INIT, INTERRUPT, and every request type the
filesystem does not implement, after its first ENOSYS) never shows up here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class RequestStats:
    """Requests served since the mount started (or between two readings).

    Attributes:
        counts: Requests by handler name (``lookup``, ``getattr``, ``read``...).
        seconds: Seconds spent in each handler, tree lock waits included.
    """

    counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    seconds: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def total(self) -> int:
        """All requests."""
        return sum(self.counts.values())

    @property
    def total_seconds(self) -> float:
        """Seconds spent in all handlers."""
        return sum(self.seconds.values())

    def __sub__(self, earlier: RequestStats) -> RequestStats:
        """What was served between ``earlier`` and this reading."""
        counts = {
            name: count - earlier.counts.get(name, 0)
            for name, count in self.counts.items()
            if count != earlier.counts.get(name, 0)
        }
        seconds = {
            name: self.seconds.get(name, 0.0) - earlier.seconds.get(name, 0.0) for name in counts
        }
        return RequestStats(MappingProxyType(counts), MappingProxyType(seconds))

    def summary(self, top: int = 6) -> str:
        """One line: the total and the ``top`` most frequent request types."""
        ranked = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))
        parts = [f"{name} {count:,}" for name, count in ranked[:top]]
        if len(ranked) > top:
            parts.append(f"other {sum(count for _, count in ranked[top:]):,}")
        return f"{self.total:,} requests" + (f" ({', '.join(parts)})" if parts else "")


class RequestCounter:
    """Counts requests as the handlers run (in the FUSE thread); read from any thread."""

    __slots__ = ("_counts", "_nanoseconds")

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._nanoseconds: dict[str, int] = {}

    def record(self, name: str, started_ns: int) -> None:
        """Count one ``name`` request whose handler started at ``started_ns``
        (``time.perf_counter_ns``)."""
        elapsed = time.perf_counter_ns() - started_ns
        self._counts[name] = self._counts.get(name, 0) + 1
        self._nanoseconds[name] = self._nanoseconds.get(name, 0) + elapsed

    def served(self) -> int:
        """All requests counted so far (call in the FUSE thread)."""
        return sum(self._counts.values())

    def stats(self) -> RequestStats:
        """The counts so far (a copy: dict copies are atomic under the GIL)."""
        counts = dict(self._counts)
        nanoseconds = dict(self._nanoseconds)
        seconds = {name: nanoseconds.get(name, 0) / 1e9 for name in counts}
        return RequestStats(MappingProxyType(counts), MappingProxyType(seconds))
