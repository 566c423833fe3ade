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
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded by the mount only: ``status`` reads these counts without trio
    import trio


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
    """Counts requests as the handlers run (in the FUSE thread); read from any thread.

    One ``[count, nanoseconds]`` list per request type, so counting costs one
    dict lookup per request.
    """

    __slots__ = ("_tallies", "_waiting")

    def __init__(self) -> None:
        self._tallies: dict[str, list[int]] = {}
        self._waiting: trio.Event | None = None  # set by the next request (``next_request``)

    def record(self, name: str, started_ns: int) -> None:
        """Count one ``name`` request whose handler started at ``started_ns``
        (``time.perf_counter_ns``)."""
        elapsed = time.perf_counter_ns() - started_ns
        tally = self._tallies.get(name)
        if tally is None:
            self._tallies[name] = [1, elapsed]
        else:
            tally[0] += 1
            tally[1] += elapsed
        waiting = self._waiting
        if waiting is not None:
            self._waiting = None
            waiting.set()

    async def next_request(self) -> None:
        """Return once another request is counted (in the FUSE thread)."""
        import trio

        waiting = self._waiting = trio.Event()
        await waiting.wait()

    def served(self) -> int:
        """All requests counted so far (call in the FUSE thread)."""
        return sum(count for count, _ in self._tallies.values())

    def stats(self) -> RequestStats:
        """The counts so far (``dict.items`` copied to a list is atomic under the GIL;
        a request counted meanwhile may show in its count before its time)."""
        tallies = [(name, count, ns) for name, (count, ns) in list(self._tallies.items())]
        counts = {name: count for name, count, _ in tallies}
        seconds = {name: ns / 1e9 for name, _, ns in tallies}
        return RequestStats(MappingProxyType(counts), MappingProxyType(seconds))
