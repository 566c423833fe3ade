"""glibc malloc tuning for a mount, and giving freed file data back to the system.

Measured (docs/memory.md, 2 GiB written as 8 x 256 MiB ``dd`` + ``rm`` on a
mount, server CPU time): with glibc's defaults, or with only the thresholds
raised, every round faulted its memory in afresh (~400k-525k minor faults,
2.4-2.9 s), because the FUSE thread allocates from its own arena, whose
64 MiB heaps are unmapped as soon as they are empty. One arena plus high
mmap and trim thresholds keeps freed chunks and request buffers for reuse
(~50k faults, 1.6-1.8 s). ``tune`` applies exactly that, process-wide, when
a mount starts (pyfuse3 allows one mount per process, and the process that
serves a mount is where it pays).

Kept memory must not grow without bound, though: after an 800 MB tree was
deleted the process kept it all. ``Trimmer`` returns it (``malloc_trim``).
What the allocator keeps is about what the file data held at its peak since
the last trim minus what it holds now; that is returned once it reaches
``TRIM_AFTER`` and the workspace has allocated nothing for ``TRIM_IDLE``
seconds (a delete-and-rewrite cycle reuses the memory instead of faulting it
in again), and at once when it reaches ``TRIM_ALWAYS``.

A workspace whose budget is a cache (a store's: data leaves memory and comes back)
keeps its file data at the budget while data churns through it, so its peak says
nothing; the heap fragments instead (a 64 KiB chunk freed here, a 1 MiB piece of a
blob read there), and the free holes grew to 230 MiB besides a 1 GiB budget. So
what the process holds beyond its file data is watched too: its resident memory
less the file data held, against what that was after the last trim (the
interpreter, the tree's own bookkeeping). While data leaves memory (the budget's
residency evicted some since the last look), the trimmer looks every ``CHURN_LOOK``
rather than every second, and what it grew by past the file data freed is returned
once it reaches ``TRIM_AFTER``, busy or not: a cache at its budget is never idle, and
read back at 500 MB/s a second of churn left the holes well past that. A workspace
that only grows (``tar -x`` into a budget that holds it) is left to reuse what it
freed, as before: trimming it there cost ``tar -x`` of 768 MiB a third more time.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading

from ..tree import MemoryBudget

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8

TRIM_AFTER = 64 << 20
"""Freed and kept bytes that are returned to the system once the workspace is idle."""
TRIM_ALWAYS = 512 << 20
"""Freed and kept bytes that are returned even while the workspace is busy."""
TRIM_IDLE = 1.0
"""Seconds without allocation that make the workspace idle; also how often the trimmer looks."""
CHURN_LOOK = 0.1
"""Seconds between looks while data leaves memory: a cache read back at hundreds of MB/s
leaves holes that fast, and each look is one read of ``/proc/self/statm``."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    # The symbols of the process itself, libc's among them: ``find_library`` would
    # run ``ldconfig -p`` in a child process on the way to serving the mount.
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    # musl and others have neither; the defaults then stay.
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def tune() -> None:
    """One malloc arena, and freed memory kept for reuse (``Trimmer`` bounds it).

    The mmap threshold also keeps the 1 MiB request buffers pyfuse3 makes
    for every write on the heap instead of mapping and faulting each anew.
    """
    libc = _libc()
    if libc is None:
        return
    libc.mallopt(_M_ARENA_MAX, 1)
    libc.mallopt(_M_MMAP_THRESHOLD, 256 << 20)
    libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30)


class Trimmer:
    """A thread that gives freed memory back to the system (see the module docstring).

    Args:
        budget: The mounted tree's budget: its peak and what it holds say what
            was freed since the last trim.
    """

    def __init__(self, budget: MemoryBudget) -> None:
        self._budget = budget
        self._libc = _libc()
        self._floor = 0  # resident memory less file data after the last trim
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workspacefs-trim", daemon=True)

    def start(self) -> None:
        """Start looking; a no-op without glibc."""
        if self._libc is not None:
            self._thread.start()

    def stop(self) -> None:
        """Stop looking and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        peak = self._budget.take_peak()
        held = self._budget.held
        self._floor = _resident() - held
        evicted = self._budget.residency.evicted
        kept = 0
        churning = False
        since = 0.0  # seconds since the last look at the peak
        while not self._stop.wait(look := CHURN_LOOK if churning else TRIM_IDLE):
            since += look
            trim = False
            if since >= TRIM_IDLE:
                since = 0.0
                # Held grew past its last reading, or was higher in between: busy.
                busy = (recent := self._budget.take_peak()) > held
                peak = max(peak, recent)
                held = self._budget.held
                kept = peak - held
                trim = kept >= TRIM_ALWAYS or (kept >= TRIM_AFTER and not busy)
            churning, evicted = (
                self._budget.residency.evicted != evicted,
                self._budget.residency.evicted,
            )
            if churning and not trim:
                trim = _resident() - self._budget.held - self._floor - kept >= TRIM_AFTER
            if trim:
                self.trim()
                peak = held = self._budget.held
                kept = 0
                self._floor = _resident() - held

    def trim(self) -> None:
        """Return every free page of the heap to the system now."""
        if self._libc is not None:
            self._libc.malloc_trim(0)


def _resident() -> int:
    """This process's resident memory, in bytes (0 where ``/proc`` says nothing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


_PAGE = os.sysconf("SC_PAGE_SIZE")
