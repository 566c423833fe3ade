"""Random syscall sequences on the mount and on a kernel filesystem give identical results."""

from __future__ import annotations

import os
import random
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from workspacefs.fuse import fuse_mounts

from .conftest import Mounted
from .posix import (
    FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE,
    FALLOC_FL_ZERO_RANGE,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    fallocate,
    renameat2,
)
from .treestate import tree_state

NAMES = ["a", "b", "c", "a/x", "a/y", "b/x", "a/x/deep"]


def random_op(rng: random.Random) -> tuple[str, Callable[[Path], object]]:
    """One random operation, described, as a function of the root it runs under."""
    path, other = rng.choice(NAMES), rng.choice(NAMES)
    data = rng.randbytes(rng.choice([0, 3, 100, 70_000]))
    offset = rng.choice([0, 1, 5000, 65_536, 200_000])
    size = rng.choice([0, 2, 4096, 100_000])
    mode = rng.choice([0o600, 0o644, 0o755, 0o4750])
    flags = rng.choice([0, RENAME_NOREPLACE, RENAME_EXCHANGE])
    falloc = rng.choice(FALLOCATE_MODES)

    def write(root: Path) -> object:
        fd = os.open(root / path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            return os.pwrite(fd, data, offset)
        finally:
            os.close(fd)

    def append(root: Path) -> object:
        fd = os.open(root / path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            return os.write(fd, data)
        finally:
            os.close(fd)

    def allocate(root: Path) -> object:
        fd = os.open(root / path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            zero_range_or(fd, falloc, offset, size, emulate=str(root) not in fuse_mounts())
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def read(root: Path) -> object:
        fd = os.open(root / path, os.O_RDONLY)
        try:
            return os.pread(fd, 70_000, offset)
        finally:
            os.close(fd)

    ops: list[tuple[str, Callable[[Path], object]]] = [
        (f"write {path} {len(data)}@{offset}", write),
        (f"append {path} {len(data)}", append),
        (f"read {path} @{offset}", read),
        (f"truncate {path} {size}", lambda root: os.truncate(root / path, size)),
        (f"fallocate {path} {falloc:#x} {size}@{offset}", allocate),
        (f"rename {path} {other} {flags}", lambda root: renameat2(
            str(root / path), str(root / other), flags)),
        (f"link {path} {other}", lambda root: os.link(root / path, root / other)),
        (f"unlink {path}", lambda root: os.unlink(root / path)),
        (f"mkdir {path}", lambda root: os.mkdir(root / path)),
        (f"rmdir {path}", lambda root: os.rmdir(root / path)),
        (f"chmod {path} {mode:o}", lambda root: os.chmod(root / path, mode)),
        (f"utime {path}", lambda root: os.utime(root / path, ns=(offset, size))),
        (f"symlink {path} -> {other}", lambda root: os.symlink(other, root / path)),
        (f"stat {path}", lambda root: _stat_view(os.lstat(root / path))),
        (f"listdir {path}", lambda root: sorted(os.listdir(root / path))),
    ]  # fmt: skip
    return rng.choice(ops)


FALLOCATE_MODES = [
    0,
    FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE,  # refused: a hole must keep the size
    FALLOC_FL_ZERO_RANGE,
    FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
]


def zero_range_or(fd: int, mode: int, offset: int, length: int, *, emulate: bool) -> None:
    """fallocate(2); with ``emulate``, ZERO_RANGE as what it means (tmpfs lacks it):
    punch a hole, then extend the size unless KEEP_SIZE."""
    if not (emulate and mode & FALLOC_FL_ZERO_RANGE):
        fallocate(fd, mode, offset, length)
        return
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length)
    if not mode & FALLOC_FL_KEEP_SIZE and os.fstat(fd).st_size < offset + length:
        os.ftruncate(fd, offset + length)


def _stat_view(info: os.stat_result) -> tuple[int, ...]:
    """What stat shows that must agree (directory sizes differ between filesystems)."""
    size = 0 if stat.S_ISDIR(info.st_mode) else info.st_size
    return (info.st_mode, info.st_nlink, size)


def outcome(action: Callable[[Path], object], root: Path) -> object:
    try:
        return ("ok", action(root))
    except OSError as exc:
        return ("error", exc.errno)


@pytest.mark.parametrize("seed", range(12))
def test_random_syscalls_match_kernel(seed: int, mounted: Mounted, plain_dir: Path) -> None:
    rng = random.Random(seed)
    log = []
    for _ in range(150):
        description, action = random_op(rng)
        log.append(description)
        expected = outcome(action, plain_dir)
        got = outcome(action, mounted.root)
        assert got == expected, f"after {log}"
        assert tree_state(mounted.root) == tree_state(plain_dir), f"after {log}"
