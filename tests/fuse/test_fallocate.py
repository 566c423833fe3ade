"""fallocate(2) on the mount: every mode Linux passes to FUSE, against tmpfs, within the budget."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem, mount
from workspacefs.fuse._features import FALLOCATE

from .conftest import Mounted
from .posix import FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE, fallocate
from .test_differential import zero_range_or

needs_fallocate = pytest.mark.skipif(
    not FALLOCATE, reason="needs the patched pyfuse3 (scripts/setup.sh)"
)

KIB = 1024
CASES = [
    # (mode, offset, length): on a file of 200 KiB of 0x5a
    (0, 300 * KIB, 100 * KIB),  # grows, allocated
    (0, 10 * KIB, 20 * KIB),  # inside: nothing changes but the allocation
    (FALLOC_FL_KEEP_SIZE, 150 * KIB, 500 * KIB),  # past the end, size kept
    (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 5000, 150 * KIB),
    (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 190 * KIB, 100 * KIB),  # past the end
    (FALLOC_FL_ZERO_RANGE, 100 * KIB, 300 * KIB),
    (FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 3, 500 * KIB),
]


def apply(root: Path, mode: int, offset: int, length: int) -> tuple[bytes, int]:
    path = root / "f"
    path.write_bytes(b"\x5a" * (200 * KIB))
    fd = os.open(path, os.O_RDWR)
    try:
        zero_range_or(fd, mode, offset, length, emulate="shm" in str(root))
        return path.read_bytes(), os.fstat(fd).st_blocks
    finally:
        os.close(fd)


@needs_fallocate
@pytest.mark.parametrize(("mode", "offset", "length"), CASES)
def test_modes_match_tmpfs(
    mounted: Mounted, plain_dir: Path, mode: int, offset: int, length: int
) -> None:
    data, blocks = apply(mounted.root, mode, offset, length)
    expected, _ = apply(plain_dir, mode, offset, length)  # tmpfs's st_blocks are its own
    assert data == expected
    if mode & FALLOC_FL_PUNCH_HOLE:
        assert blocks < 200 * KIB // 512  # the hole holds nothing
    elif not mode & FALLOC_FL_KEEP_SIZE:
        assert blocks * 512 >= max(200 * KIB, length)  # the range is held in memory


@needs_fallocate
def test_unsupported_modes_are_refused(mounted: Mounted) -> None:
    fd = os.open(mounted.path("f"), os.O_RDWR | os.O_CREAT)
    try:
        with pytest.raises(OSError) as excinfo:
            fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10)  # a hole must keep the size
        assert excinfo.value.errno == errno.EOPNOTSUPP
        with pytest.raises(OSError) as excinfo:
            fallocate(fd, 0x08, 0, 4096)  # COLLAPSE_RANGE
        assert excinfo.value.errno == errno.EOPNOTSUPP
    finally:
        os.close(fd)


@needs_fallocate
def test_fallocate_within_the_budget(tmp_path: Path) -> None:
    fs = InMemoryFilesystem(memory_budget=1 << 20)
    fs.write_bytes("f", b"kept")
    with mount(fs, tmp_path):
        fd = os.open(tmp_path / "f", os.O_RDWR)
        try:
            with pytest.raises(OSError) as excinfo:
                fallocate(fd, 0, 0, 2 << 20)
            assert excinfo.value.errno == errno.ENOSPC
            with pytest.raises(OSError) as excinfo:  # past the end too, though nothing is held
                fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 2 << 20)
            assert excinfo.value.errno == errno.ENOSPC
            assert os.fstat(fd).st_size == 4
            fallocate(fd, 0, 0, 512 << 10)  # fits
            assert fs.memory_usage().held == 512 << 10
            info = os.statvfs(tmp_path)
            assert info.f_bfree * info.f_frsize == (1 << 20) - (512 << 10)
        finally:
            os.close(fd)
        assert (tmp_path / "f").read_bytes()[:5] == b"kept\0"


@needs_fallocate
def test_a_hole_punched_after_a_snapshot_leaves_it_intact(mounted: Mounted) -> None:
    path = Path(mounted.path("f"))
    path.write_bytes(b"\x01" * (300 * KIB))
    mounted.fs.snapshot(tag="before")
    fd = os.open(path, os.O_RDWR)
    try:
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 10, 200 * KIB)
        fallocate(fd, FALLOC_FL_ZERO_RANGE, 250 * KIB, 100 * KIB)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"\x01" * 10 + bytes(200 * KIB) + b"\x01" * (50 * KIB - 10) + bytes(
        100 * KIB
    )
    assert Path(mounted.path(".snapshots/before/f")).read_bytes() == b"\x01" * (300 * KIB)


@pytest.mark.skipif(FALLOCATE, reason="a stock pyfuse3's behaviour")
def test_a_stock_pyfuse3_refuses_every_mode_and_changes_nothing(mounted: Mounted) -> None:
    path = Path(mounted.path("f"))
    path.write_bytes(b"kept")
    fd = os.open(path, os.O_RDWR)
    try:
        for mode, offset, length in CASES:
            with pytest.raises(OSError) as excinfo:
                fallocate(fd, mode, offset, length)
            assert excinfo.value.errno == errno.EOPNOTSUPP
    finally:
        os.close(fd)
    assert path.read_bytes() == b"kept"
