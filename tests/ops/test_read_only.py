"""Read-only handlers: a frozen version, or the live tree mounted read-only."""

from __future__ import annotations

import errno
import os
import stat

import pyfuse3
import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.tree import ROOT_INO

from .conftest import CTX, Kernel, fuse_error, read_all, setattr_fields

pytestmark = pytest.mark.trio


async def refuses_every_write(ops: WorkspaceOperations, file: int, directory: int) -> None:
    attr = pyfuse3.EntryAttributes()
    attr.st_mode = 0o600
    mode = setattr_fields(update_mode=True)
    with fuse_error(errno.EROFS):
        await ops.create(directory, b"new", stat.S_IFREG | 0o644, os.O_WRONLY, CTX)
    with fuse_error(errno.EROFS):
        await ops.mkdir(directory, b"new", 0o755, CTX)
    with fuse_error(errno.EROFS):
        await ops.mknod(directory, b"new", stat.S_IFIFO | 0o644, 0, CTX)
    with fuse_error(errno.EROFS):
        await ops.symlink(directory, b"new", b"target", CTX)
    with fuse_error(errno.EROFS):
        await ops.link(file, directory, b"new", CTX)
    with fuse_error(errno.EROFS):
        await ops.unlink(directory, b"f", CTX)
    with fuse_error(errno.EROFS):
        await ops.rmdir(ROOT_INO, b"d", CTX)
    with fuse_error(errno.EROFS):
        await ops.rename(directory, b"f", directory, b"g", 0, CTX)
    with fuse_error(errno.EROFS):
        await ops.setattr(file, attr, mode, None, CTX)
    with fuse_error(errno.EROFS):
        await ops.setxattr(file, b"user.x", b"1", CTX)
    with fuse_error(errno.EROFS):
        await ops.removexattr(file, b"user.x", CTX)
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC):
        with fuse_error(errno.EROFS):
            await ops.open(file, flags, CTX)


async def test_a_version_is_read_only(fs: InMemoryFilesystem) -> None:
    fs.write("d/f", "frozen")
    version = fs.version(fs.snapshot())
    ops = WorkspaceOperations(version)  # its own inode space: the kernel model is the live one's
    directory = (await ops.lookup(ROOT_INO, b"d", CTX)).st_ino
    file = (await ops.lookup(directory, b"f", CTX)).st_ino
    await refuses_every_write(ops, file, directory)
    fs.write("d/f", "live")
    assert await read_all(ops, file) == b"frozen"
    assert (await ops.statfs(CTX)).f_namemax == 255


async def test_the_live_tree_read_only(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    fs.write("d/f", "one")
    read_only = WorkspaceOperations(fs.tree, read_only=True)
    kernel.watch(read_only)
    directory = (await read_only.lookup(ROOT_INO, b"d", CTX)).st_ino
    file = (await read_only.lookup(directory, b"f", CTX)).st_ino
    await refuses_every_write(read_only, file, directory)
    info = await read_only.open(file, os.O_RDONLY, CTX)
    fs.delete("d/f")  # the API still writes; the kernel's reference keeps the file
    assert await read_only.read(info.fh, 0, 10) == b"one"
    assert set(fs.tree.orphans) == {file}
    await read_only.release(info.fh)
    await read_only.forget([(file, 1)])
    assert not fs.tree.orphans
