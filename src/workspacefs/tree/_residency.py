"""Which file data stays in memory: clean data leaves, coldest first, when the
budget needs room, and comes back on the next read.

A file's data is *clean* when a content the workspace's store keeps holds the
same bytes (``File.backing``: a git blob of the store's repository, or of the
repository the workspace was loaded from). Clean data can leave memory at any
moment: the file becomes deferred on that content again (``File.deferred``'s
state), and its next read loads it as a lazy load does. Data that no kept
content holds (written since the store last wrote it back) is *dirty* and
never leaves. Who makes data clean is the store (``enable``'s ``clean``); the
tree only tracks it and evicts it: no I/O happens here.

Policy: 2Q (Johnson and Shasha, VLDB 1994) with its main queue run as CLOCK,
the shape of Linux's inactive and active page lists. Data that becomes clean
enters a FIFO *probation* queue (2Q's A1in); data read again while there, once
it has aged, moves to the *protected* queue (Am), whose CLOCK hand gives each
entry read since the hand last passed a second chance. Victims come from
probation while it holds more than a quarter of the budget, else from
protected. A file evicted from probation stays a *ghost* (A1out: a mark on the
file, no data) while half a budget of other data enters; loaded again while a
ghost, it goes straight to protected. Why 2Q and
not plain CLOCK or LRU: the workloads that read most data read it once --
``grep -r``, a build reading its sources, ``git status``, a scan of a tree
larger than the budget -- and under CLOCK or LRU each such scan pushes out the
files an agent keeps editing and reading. Under 2Q a scan only cycles through
probation. Why CLOCK for the main queue: a read must not take a lock (readers
of frozen versions take none), and CLOCK's reference mark is one attribute
store, where LRU moves an entry on every read.

"Read again once it has aged" is 2Q's correlated-reference period, measured in
data entering the cache: ``generation`` advances each time a sixteenth of the
budget has become clean, and a read counts as a re-reference only in a later
generation than the one the data entered in (a file read in 1 MiB blocks by
one ``grep`` is one reference, not sixteen).

Eviction holds ``lock``, never the tree lock: every transition of a file's
data between memory and its content (a load installing what it read, an
eviction, a write making clean data dirty) happens under ``lock``, and a file
whose data a writer is changing is never clean (see ``File``). Readers take no
lock at all: they read a file's chunk dict once, and an evicted file's dict is
an ``Absent`` marker that says where its bytes are.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable
from itertools import chain
from typing import Protocol


class Tracked(Protocol):
    """A file's data as the residency sees it (``File``; a protocol, so that this
    module imports neither the nodes nor the budget that holds it)."""

    _queue: int
    _seen: int
    _mark: int

    @property
    def backing(self) -> object | None: ...

    @property
    def held(self) -> int: ...

    def resident(self) -> object | None: ...

    def _evict(self) -> None: ...


class Limited(Protocol):
    """The memory budget's figures (``MemoryBudget``)."""

    @property
    def limit(self) -> int | None: ...

    @property
    def held(self) -> int: ...


Clean = Callable[[int, Tracked | None], None]
"""Writes dirty data back to the store until about ``nbytes`` more are clean,
leaving ``writer`` (a file being changed now) as it is; the store's."""

PROBATION, PROTECTED, GHOST = 1, 2, 3
"""The queue a tracked file is in (``File._queue``; 0: none), or GHOST: evicted from
probation ``GHOST_GENERATIONS`` or fewer generations ago (2Q's A1out)."""
PROBATION_SHARE = 4
"""Probation gives up victims while it holds more than 1/4 of the budget."""
GENERATION_SHARE = 16
"""A generation passes each time 1/16 of the budget has become clean."""
GHOST_GENERATIONS = GENERATION_SHARE // 2
"""A ghost is remembered while half a budget of data enters (2Q's Kout)."""
SLACK_SHARE = 32
"""Eviction frees 1/32 of the budget more than asked, so that the writes after
the one that needed room do not each evict again."""

_Entry = tuple["weakref.ref[Tracked]", int]


class Residency:
    """The clean file data of one memory budget, and the policy that evicts it.

    Inactive until ``enable``: a workspace without a store keeps all its data.
    """

    __slots__ = (
        "_aside",
        "_budget",
        "_clean",
        "_cleaning",
        "_dead",
        "_entered",
        "_keeps",
        "_probation",
        "_probation_bytes",
        "_protected",
        "evicted",
        "generation",
        "lock",
    )

    def __init__(self, budget: Limited) -> None:
        self._budget = budget
        self.lock = threading.Lock()
        """Held for every transition of file data in or out of memory (see module)."""
        self.generation = 1
        """Advances as data enters the cache; a file notes it at each read."""
        self.evicted = 0
        """Files evicted so far (a figure for reports and tests)."""
        self._keeps: Callable[[object], bool] | None = None
        self._clean: Clean | None = None
        self._cleaning = threading.local()  # set while this thread runs ``_clean``
        self._probation: deque[_Entry] = deque()
        self._protected: deque[_Entry] = deque()
        self._aside: list[tuple[int, _Entry]] = []
        self._probation_bytes = 0
        self._entered = 0
        self._dead = 0

    @property
    def active(self) -> bool:
        """True if clean data may leave memory."""
        return self._keeps is not None

    def enable(self, keeps: Callable[[object], bool], clean: Clean | None = None) -> None:
        """Let data leave memory from now on.

        Args:
            keeps: True for a content that stays readable for as long as the
                workspace lives (the store keeps it durably): only data such a
                content holds is evicted.
            clean: Called when eviction alone cannot make room (see ``Clean``);
                without the tree lock, or with it held by the calling thread.
        """
        with self.lock:
            self._keeps = keeps
            self._clean = clean

    def disable(self) -> None:
        """Keep all data in memory from now on; forget what is tracked."""
        with self.lock:
            self._keeps = self._clean = None
            for _, node in self._entries():
                node._queue = 0
            self._probation.clear()
            self._protected.clear()
            self._probation_bytes = 0

    # -- tracking (under ``lock``) ----------------------------------------------------

    def track(self, node: Tracked) -> None:
        """Note that ``node``'s data is clean and in memory (hold ``lock``). Data
        whose content the store does not keep is not tracked: it never leaves."""
        keeps = self._keeps
        backing = node.backing
        queue = node._queue
        if keeps is None or queue in (PROBATION, PROTECTED) or backing is None:
            return
        if not keeps(backing):
            return
        size = node.held
        generation = self.generation
        entry = (weakref.ref(node, self._died), size)
        if queue == GHOST and generation - node._mark <= GHOST_GENERATIONS:
            node._queue = PROTECTED  # evicted too soon: it is read again and again
            self._protected.append(entry)
        else:
            node._queue = PROBATION
            self._probation.append(entry)
            self._probation_bytes += size
        node._mark = node._seen = generation
        self._entered += size
        limit = self._budget.limit
        if limit is not None and self._entered * GENERATION_SHARE > limit:
            self.generation = generation + 1
            self._entered = 0
        if self._dead > 1024 and self._dead * 2 > len(self._probation) + len(self._protected):
            self._compact()

    def _died(self, _ref: object) -> None:
        # A weakref callback, in whatever thread freed the node: count only.
        self._dead += 1

    def _compact(self) -> None:
        """Drop the entries of files that no longer exist."""
        self._probation = deque(entry for entry in self._probation if entry[0]() is not None)
        self._protected = deque(entry for entry in self._protected if entry[0]() is not None)
        self._probation_bytes = sum(size for _, size in self._probation)
        self._dead = 0

    def _entries(self) -> list[tuple[_Entry, Tracked]]:
        found = []
        for entry in chain(self._probation, self._protected):
            node = entry[0]()
            if node is not None:
                found.append((entry, node))
        return found

    # -- eviction ---------------------------------------------------------------------

    def drop(self, node: Tracked) -> None:
        """Evict ``node`` now if its data is clean and kept: a caller about to replace
        it whole, so that the versions sharing it can let it go too."""
        keeps = self._keeps
        with self.lock:
            backing = node.backing
            if keeps is None or backing is None or node.resident() is None:
                return
            if keeps(backing):
                node._evict()
                self.evicted += 1

    def reclaim(self, nbytes: int, writer: Tracked | None = None, *, clean: bool = True) -> None:
        """Make room for ``nbytes`` more within the budget's limit, if clean data
        (or, with ``clean``, data the store can make clean) allows; ``writer``, a
        file being changed, stays. The budget says afterwards whether there is room.

        Without ``clean`` it only evicts, taking no lock but the residency's: safe
        under the budget's grant lock (``Grant``)."""
        limit = self._budget.limit
        if limit is None or self._keeps is None or nbytes > limit:
            return
        target = max(0, limit - nbytes - limit // SLACK_SHARE)
        if self._evict_down_to(target, writer) or not clean:
            return
        cleaner = self._clean
        if cleaner is None or getattr(self._cleaning, "busy", False):
            return
        self._cleaning.busy = True  # what the store reads while cleaning must not recurse
        try:
            cleaner(self._budget.held - target, writer)
        finally:
            self._cleaning.busy = False
        self._evict_down_to(target, writer)

    def _evict_down_to(self, target: int, writer: Tracked | None) -> bool:
        """Evict victims until the budget holds at most ``target``; False if it
        could not (no victim left)."""
        budget = self._budget
        with self.lock:
            try:
                while budget.held > target:
                    node = self._victim(writer)
                    if node is None:
                        return False
                    node._evict()
                    self.evicted += 1
            finally:
                for queue, entry in self._aside:
                    (self._probation if queue == PROBATION else self._protected).append(entry)
                    if queue == PROBATION:
                        self._probation_bytes += entry[1]
                self._aside.clear()
        return True

    def _victim(self, writer: Tracked | None) -> Tracked | None:
        """The next file to evict (hold ``lock``); None if none is left. Each entry is
        looked at once, or twice if it earns a second chance."""
        quarter = (self._budget.limit or 0) // PROBATION_SHARE
        while True:
            if self._probation and (self._probation_bytes > quarter or not self._protected):
                entry = self._probation.popleft()
                self._probation_bytes -= entry[1]
                queue = PROBATION
            elif self._protected:
                entry = self._protected.popleft()
                queue = PROTECTED
            else:
                return None
            node = entry[0]()
            if node is None:
                self._dead = max(0, self._dead - 1)
                continue
            if node.backing is None or node.resident() is None:
                node._queue = 0  # dirty or gone already: tracked again when clean
                continue
            if node is writer:
                self._aside.append((queue, entry))
                continue
            if node._seen > node._mark:  # read again since it entered, or the hand passed
                node._mark = self.generation
                node._queue = PROTECTED
                self._protected.append((entry[0], node.held))
                continue
            node._queue = GHOST if queue == PROBATION else 0
            node._mark = self.generation
            return node

    # -- figures ----------------------------------------------------------------------

    def evictable(self) -> int:
        """Bytes of clean data in memory now, each chunk dict counted once: about
        what eviction could free (less what other versions share). O(tracked files)."""
        total = 0
        seen: set[int] = set()
        with self.lock:
            for _, node in self._entries():
                chunks = node.resident()
                if chunks is None or node.backing is None or id(chunks) in seen:
                    continue
                seen.add(id(chunks))
                total += node.held
        return total
