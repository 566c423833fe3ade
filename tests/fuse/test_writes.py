"""Writes through the mount: the data is the tree's own, whatever buffer it came in."""

from __future__ import annotations

import mmap
import os
from typing import Any

import pytest

from workspacefs.fuse import WorkspaceOperations
from workspacefs.fuse._features import WRITE_MEMORYVIEW

from .conftest import Mounted

MIB = 1 << 20


def pattern(seed: int, size: int) -> bytes:
    """``size`` bytes that differ from every other seed's at every offset."""
    block = bytes((seed * 37 + i) % 251 for i in range(251))
    return (block * (size // 251 + 1))[:size]


def test_each_write_is_kept_after_its_request_buffer_is_reused(mounted: Mounted) -> None:
    """Writes to several files, interleaved, of sizes within a page to past a chunk,
    through the page cache and direct: each file holds its own bytes afterwards (the
    buffer a request arrives in holds the next request once it is answered)."""
    sizes = [1, 4097, 10_240, 65_536 + 3, 200_000]
    aligned = mmap.mmap(-1, MIB)  # a page-aligned MiB is one request; an unaligned one two
    aligned.write(pattern(99, MIB))
    expected: dict[str, bytearray] = {}
    descriptors = {}
    for index, flags in enumerate([os.O_WRONLY, os.O_RDWR, os.O_WRONLY, os.O_RDWR]):
        name = f"f{index}"
        descriptors[name] = os.open(mounted.path(name), flags | os.O_CREAT, 0o644)
        expected[name] = bytearray()
    try:
        for step in range(3):
            for index, (name, fd) in enumerate(descriptors.items()):
                data = pattern(step * 10 + index, sizes[(step + index) % len(sizes)])
                assert os.write(fd, data) == len(data)
                expected[name] += data
            fd = descriptors["f0"]
            assert os.write(fd, aligned) == MIB
            expected["f0"] += aligned
            unaligned = pattern(50 + step, MIB)
            assert os.write(descriptors["f1"], unaligned) == MIB
            expected["f1"] += unaligned
    finally:
        for fd in descriptors.values():
            os.close(fd)
        aligned.close()
    for name, content in expected.items():
        assert mounted.fs.read_bytes(name).content == content, name
        with open(mounted.path(name), "rb") as mine:
            assert mine.read() == content, name


@pytest.mark.skipif(not WRITE_MEMORYVIEW, reason="needs the patched pyfuse3 (scripts/setup.sh)")
def test_write_gets_a_view_that_is_released_when_it_returns(
    mounted: Mounted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The patched pyfuse3 passes write a view of libfuse's buffer, not a copy, and
    releases it after the call: a handler that kept it fails instead of reading the
    next request."""
    seen: list[Any] = []
    handler = WorkspaceOperations.write

    async def write(self: WorkspaceOperations, *args: Any) -> int:
        seen.append(args[2])
        return await handler(self, *args)

    monkeypatch.setattr(WorkspaceOperations, "write", write)
    fd = os.open(mounted.path("f"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"first")
        os.write(fd, b"second")
    finally:
        os.close(fd)
    assert [type(buf) for buf in seen] == [memoryview, memoryview]
    for buf in seen:
        with pytest.raises(ValueError, match="released"):
            buf.tobytes()
    assert mounted.fs.read_bytes("f").content == b"firstsecond"
