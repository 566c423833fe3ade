"""Memory comes back after deletes and truncates, within the documented bound.

Reproduces what the mount process kept before: all of a deleted tree (the
allocator was told to keep 1 GiB), and whole write buffers behind files
truncated to one chunk (a chunk was a view pinning its buffer).
"""

from __future__ import annotations

import os
import time

from workspacefs.fuse._allocator import TRIM_AFTER, TRIM_IDLE

from .conftest import Mounted

MIB = 1 << 20


def rss() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def settled_rss(limit: int, timeout: float = 4 * TRIM_IDLE + 5) -> int:
    """RSS once it is under ``limit``, or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while rss() > limit and time.monotonic() < deadline:
        time.sleep(0.1)
    return rss()


def test_deleted_and_truncated_data_is_returned(mounted: Mounted) -> None:
    blob = os.urandom(16 * MIB)
    base = rss()
    for index in range(16):
        with open(mounted.path(f"f{index}"), "wb") as handle:
            handle.write(blob)
    assert rss() - base > 200 * MIB
    for index in range(8):
        os.truncate(mounted.path(f"f{index}"), 64 * 1024)
    for index in range(8, 16):
        os.unlink(mounted.path(f"f{index}"))
    bound = base + TRIM_AFTER + 32 * MIB  # slack: the kernel's forgets, Python's heap
    assert settled_rss(bound) <= bound
    assert mounted.fs.memory_usage().held == 8 * 64 * 1024
