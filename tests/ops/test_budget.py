"""The memory budget at the handlers: statfs tells it, writes past it answer ENOSPC."""

from __future__ import annotations

import errno
import os

import pyfuse3
import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.tree import CHUNK_SIZE, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, ROOT_INO

from .conftest import CTX, create_file, fuse_error, read_all, setattr_fields

pytestmark = pytest.mark.trio

BUDGET = 8 * CHUNK_SIZE


@pytest.fixture
def fs() -> InMemoryFilesystem:
    return InMemoryFilesystem(memory_budget=BUDGET)


async def test_statfs_shows_the_budget_and_what_snapshots_hold(
    fs: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    info = await ops.statfs(CTX)
    assert (info.f_blocks, info.f_bfree) == (BUDGET // 4096, BUDGET // 4096)
    ino = await create_file(ops, ROOT_INO, b"f", b"x" * (2 * CHUNK_SIZE))
    assert (await ops.statfs(CTX)).f_bfree == 6 * CHUNK_SIZE // 4096
    fs.snapshot()
    await ops.unlink(ROOT_INO, b"f", CTX)
    await ops.forget([(ino, 1)])
    assert (await ops.statfs(CTX)).f_bfree == 6 * CHUNK_SIZE // 4096  # the snapshot holds it


async def test_writes_past_the_budget_answer_enospc(ops: WorkspaceOperations) -> None:
    ino = await create_file(ops, ROOT_INO, b"f", b"a" * (7 * CHUNK_SIZE))
    info = await ops.open(ino, os.O_WRONLY, CTX)
    with fuse_error(errno.ENOSPC):
        await ops.write(info.fh, 7 * CHUNK_SIZE, b"b" * (CHUNK_SIZE + 1))
    assert await ops.write(info.fh, 7 * CHUNK_SIZE, b"b" * CHUNK_SIZE) == CHUNK_SIZE
    with fuse_error(errno.ENOSPC):
        await ops.write(info.fh, 8 * CHUNK_SIZE, b"c")
    size = _size(64 * CHUNK_SIZE)  # growing makes a hole: it holds nothing
    await ops.setattr(ino, size, setattr_fields(update_size=True), None, CTX)
    await ops.release(info.fh)
    data = await read_all(ops, ino)
    assert data == b"a" * (7 * CHUNK_SIZE) + b"b" * CHUNK_SIZE + bytes(56 * CHUNK_SIZE)


async def test_fallocate(ops: WorkspaceOperations) -> None:
    ino = await create_file(ops, ROOT_INO, b"f", b"z" * 100)
    await ops.fallocate(ino, 0, 0, 3 * CHUNK_SIZE, 0)
    assert (await ops.getattr(ino, CTX)).st_size == 3 * CHUNK_SIZE
    await ops.fallocate(ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 50, 10, 0)
    assert (await read_all(ops, ino))[:110] == b"z" * 50 + bytes(10) + b"z" * 40 + bytes(10)
    with fuse_error(errno.ENOSPC):
        await ops.fallocate(ino, 0, 0, BUDGET * 2, 0)


def _size(size: int) -> pyfuse3.EntryAttributes:
    attributes = pyfuse3.EntryAttributes()
    attributes.st_size = size
    return attributes
