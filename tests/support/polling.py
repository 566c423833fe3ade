"""Waiting for what happens on another clock: the kernel's FORGET after a close, a
process's exit, a container's end."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(
    predicate: Callable[[], object], timeout: float, what: str, *, interval: float = 0.02
) -> None:
    """Return once ``predicate()`` is true, asking every ``interval`` seconds; fail
    with ``what`` if it is still false after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not so after {timeout:g} s: {what}")
        time.sleep(interval)
