"""Lookup counts and orphans: an unlinked inode lives while the kernel holds it."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from support.consistency import check_consistent
from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.tree import ROOT_INO

from .conftest import CTX, Kernel, create_file, fuse_error, read_all

pytestmark = pytest.mark.trio


async def test_unlinked_open_file_lives_until_forgotten(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    info, entry = await ops.create(ROOT_INO, b"tmp", stat.S_IFREG | 0o600, os.O_RDWR, CTX)
    ino = entry.st_ino
    await ops.write(info.fh, 0, b"before")
    await ops.lookup(ROOT_INO, b"tmp", CTX)
    assert kernel.counts[ino] == 2
    await ops.unlink(ROOT_INO, b"tmp", CTX)
    assert (await ops.lookup(ROOT_INO, b"tmp", CTX)).st_ino == 0
    await ops.write(info.fh, 6, b" after")
    assert await ops.read(info.fh, 0, 100) == b"before after"
    assert (await ops.getattr(ino, CTX)).st_nlink == 0
    assert set(fs.tree.orphans) == {ino}
    check_consistent(fs.tree, held=kernel.held())
    assert not fs.at(fs.snapshot()).exists("tmp")  # snapshots never see orphans
    await ops.release(info.fh)
    await ops.forget([(ino, 1)])
    assert set(fs.tree.orphans) == {ino}  # one reference left
    await ops.forget([(ino, 1)])
    assert not fs.tree.orphans
    with fuse_error(errno.ENOENT):
        await ops.getattr(ino, CTX)


async def test_unlink_of_an_unheld_inode_frees_it_at_once(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    ino = await create_file(ops, ROOT_INO, b"f", b"data")
    await ops.forget([(ino, kernel.counts[ino])])
    await ops.unlink(ROOT_INO, b"f", CTX)
    assert not fs.tree.orphans
    with fuse_error(errno.ENOENT):
        await ops.getattr(ino, CTX)


async def test_removed_directory_held_by_the_kernel(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    directory = (await ops.mkdir(ROOT_INO, b"d", 0o755, CTX)).st_ino
    await ops.rmdir(ROOT_INO, b"d", CTX)
    assert (await ops.getattr(directory, CTX)).st_nlink == 0
    with fuse_error(errno.ENOENT):  # nothing can be created in a removed directory
        await ops.rename(ROOT_INO, b"x", directory, b"y", 0, CTX)
    await ops.forget([(directory, 1)])
    assert not fs.tree.orphans


async def test_api_delete_of_a_file_the_kernel_holds(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    fs.write("api.txt", "written by the API")
    ino = (await ops.lookup(ROOT_INO, b"api.txt", CTX)).st_ino
    info = await ops.open(ino, os.O_RDONLY, CTX)
    fs.delete("api.txt")
    assert await ops.read(info.fh, 0, 100) == b"written by the API"
    await ops.release(info.fh)
    await ops.forget([(ino, 1)])
    assert not fs.tree.orphans


async def test_forget_batches_and_unknown_inodes(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    a = await create_file(ops, ROOT_INO, b"a")
    b = await create_file(ops, ROOT_INO, b"b")
    await ops.unlink(ROOT_INO, b"a", CTX)
    await ops.unlink(ROOT_INO, b"b", CTX)
    await ops.forget([(a, 1), (b, 1), (999_999, 3)])  # forget never fails
    del kernel.counts[999_999]  # (a kernel would not have sent it)
    assert not fs.tree.orphans


async def test_a_session_that_ends_holds_nothing(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    kept = await create_file(ops, ROOT_INO, b"kept")
    gone = await create_file(ops, ROOT_INO, b"gone", b"x")
    await ops.unlink(ROOT_INO, b"gone", CTX)
    ops.forget_all()
    kernel.counts.clear()
    assert not fs.tree.orphans
    assert not fs.tree.held(kept)
    assert fs.tree.get(gone) is None
    assert await read_all(ops, kept) == b""
