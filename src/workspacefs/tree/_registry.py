"""A weak, thread-safe registry of the objects of one kind that are still alive.

Space accounting must know every version that keeps data alive, wherever it
is held (a snapshot store, the git persistence state, a frozen view being
read), and every workspace of a family of forks. The registry names them
without keeping them: an entry goes when its object is freed.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Generic, TypeVar

T = TypeVar("T")


class WeakRegistry(Generic[T]):
    """Objects still alive, in the order they were added; holds none of them.

    ``add`` and ``alive`` may run in any threads: the lock keeps an ``add``
    from changing the dict under an ``alive`` that copies it, and the weak
    dictionary drops an entry whose object is freed meanwhile at a safe point.
    """

    __slots__ = ("_entries", "_lock", "_numbers")

    def __init__(self) -> None:
        self._entries: weakref.WeakValueDictionary[int, T] = weakref.WeakValueDictionary()
        self._numbers = itertools.count()
        self._lock = threading.Lock()

    def add(self, item: T) -> None:
        """Register ``item`` (it must support weak references)."""
        with self._lock:
            self._entries[next(self._numbers)] = item

    def alive(self) -> list[T]:
        """Every registered object still alive, oldest first."""
        with self._lock:
            return list(self._entries.values())
