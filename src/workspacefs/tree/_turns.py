"""Turns between a mount and the long readers of the same process.

A mount's requests are answered by one thread while a long reader -- a grep of the
whole tree that a client of the daemon asked for -- computes in another, and both
need the GIL, which the interpreter hands over only once a switch interval (0.5 ms
in the daemon) and a request takes it several times: a create, write and close on
the mount took up to 3 ms at the 99th percentile while a client grepped 5,000 files.
So long readers make way: if the mount has answered a request within the last
``BUSY_NS``, a reader sleeps ``PAUSE`` seconds (the GIL released) before its next
file or directory, and the mount's requests run meanwhile without waiting. Once per
item, never longer: a mount busy without end slows a reader, it does not stop it.
Nothing pauses in a process that serves no mount, or while its mount is idle.
"""

from __future__ import annotations

import time

BUSY_NS = 2_000_000
"""How long after a mount's request it counts as busy."""
PAUSE = 0.0002
"""How long a long reader sleeps, each time, while the mount is busy."""

_last_request = -BUSY_NS


def mount_request(now_ns: int) -> None:
    """Note that a mount is answering a request now (its handlers call this with the
    ``time.perf_counter_ns()`` they took already)."""
    global _last_request
    _last_request = now_ns


def mount_busy(within_ns: int = BUSY_NS) -> bool:
    """Whether a mount of this process answered a request within the last ``within_ns``
    (for work that may wait until the mount is quiet: the change feed's batches)."""
    return time.perf_counter_ns() - _last_request < within_ns


def make_way() -> None:
    """For a long reader, between items: sleep a moment if a mount is busy."""
    if time.perf_counter_ns() - _last_request < BUSY_NS:
        time.sleep(PAUSE)


def wait_idle(limit: float) -> None:
    """For work nobody waits for (a hydration in the background), between items: sleep
    while a mount is busy, up to ``limit`` seconds. A mount's requests that need that
    work do it themselves meanwhile (e.g. list what they reach), so each of them waits
    for the background at most one item; ``limit`` keeps the background going, slowly,
    under a mount busy without end."""
    deadline = time.perf_counter_ns() + int(limit * 1e9)
    while True:
        now = time.perf_counter_ns()
        if now - _last_request >= BUSY_NS or now >= deadline:
            return
        time.sleep(BUSY_NS / 1e9)
