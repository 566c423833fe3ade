"""Data and attributes: open, read, write, getattr, setattr, statfs, xattrs."""

from __future__ import annotations

import errno
import logging
import os
import stat

import pyfuse3
import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.tree import CHUNK_SIZE, NAME_MAX, ROOT_INO

from .conftest import CTX, create_file, fuse_error, read_all, setattr_fields

pytestmark = pytest.mark.trio


async def test_write_then_read_through_handles(ops: WorkspaceOperations) -> None:
    info, entry = await ops.create(ROOT_INO, b"f", stat.S_IFREG | 0o644, os.O_RDWR, CTX)
    assert info.keep_cache  # API writes invalidate the page cache explicitly
    assert await ops.write(info.fh, 0, b"hello world") == 11
    assert await ops.write(info.fh, 6, b"there") == 5
    assert await ops.read(info.fh, 0, 100) == b"hello there"
    assert await ops.read(info.fh, 6, 3) == b"the"
    assert await ops.read(info.fh, 50, 10) == b""
    await ops.release(info.fh)
    assert (await ops.getattr(entry.st_ino, CTX)).st_size == 11


async def test_sparse_file_reads_zeros_and_holds_no_blocks(ops: WorkspaceOperations) -> None:
    ino = await create_file(ops, ROOT_INO, b"sparse")
    info = await ops.open(ino, os.O_WRONLY, CTX)
    far = 3 * CHUNK_SIZE + 5
    await ops.write(info.fh, far, b"X")
    await ops.release(info.fh)
    attributes = await ops.getattr(ino, CTX)
    assert attributes.st_size == far + 1
    assert attributes.st_blocks * 512 < 2 * CHUNK_SIZE  # holes hold nothing
    assert await read_all(ops, ino) == bytes(far) + b"X"


async def test_append_writes_at_the_trees_end_of_file(
    fs: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    ino = await create_file(ops, ROOT_INO, b"log", b"one\n")
    info = await ops.open(ino, os.O_WRONLY | os.O_APPEND, CTX)
    fs.write("log", "one\ntwo\n")  # grown behind the kernel's back
    await ops.write(info.fh, 0, b"three\n")
    await ops.release(info.fh)
    assert await read_all(ops, ino) == b"one\ntwo\nthree\n"


async def test_open_with_truncate_empties_the_file(ops: WorkspaceOperations) -> None:
    ino = await create_file(ops, ROOT_INO, b"f", b"old content")
    info = await ops.open(ino, os.O_WRONLY | os.O_TRUNC, CTX)
    await ops.release(info.fh)
    assert (await ops.getattr(ino, CTX)).st_size == 0


async def test_open_errors(ops: WorkspaceOperations) -> None:
    directory = (await ops.mkdir(ROOT_INO, b"d", 0o755, CTX)).st_ino
    with fuse_error(errno.EISDIR):
        await ops.open(directory, os.O_RDONLY, CTX)
    with fuse_error(errno.ENOENT):
        await ops.open(9999, os.O_RDONLY, CTX)
    fifo = (await ops.mknod(ROOT_INO, b"fifo", stat.S_IFIFO | 0o644, 0, CTX)).st_ino
    info = await ops.open(fifo, os.O_RDONLY, CTX)  # the kernel never reads a fifo here
    with fuse_error(errno.EINVAL):
        await ops.read(info.fh, 0, 1)
    await ops.release(info.fh)


async def test_flush_and_fsync_are_declined_once(ops: WorkspaceOperations) -> None:
    ino = await create_file(ops, ROOT_INO, b"f")
    info = await ops.open(ino, os.O_RDWR, CTX)
    with fuse_error(errno.ENOSYS):
        await ops.flush(info.fh)
    with fuse_error(errno.ENOSYS):
        await ops.fsync(info.fh, True)
    await ops.release(info.fh)
    fh = await ops.opendir(ROOT_INO, CTX)
    with fuse_error(errno.ENOSYS):
        await ops.fsyncdir(fh, False)
    await ops.releasedir(fh)


@pytest.mark.logs_errors("bug in FUSE handler read")
async def test_a_bug_answers_eio_and_is_logged(
    ops: WorkspaceOperations, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR), fuse_error(errno.EIO):
        await ops.read(424242, 0, 10)  # no such handle: a KeyError inside
    assert "bug in FUSE handler read" in caplog.text


async def test_getattr_of_the_root_and_of_a_gone_inode(ops: WorkspaceOperations) -> None:
    root = await ops.getattr(ROOT_INO, CTX)
    assert stat.S_ISDIR(root.st_mode)
    assert (root.st_ino, root.st_nlink) == (ROOT_INO, 2)
    with fuse_error(errno.ENOENT):
        await ops.getattr(31337, CTX)


async def test_setattr_changes_what_fields_say(ops: WorkspaceOperations) -> None:
    ino = await create_file(ops, ROOT_INO, b"f", b"0123456789")
    attr = pyfuse3.EntryAttributes()
    attr.st_mode = stat.S_IFDIR | 0o4750  # the file type bits are the inode's
    attr.st_uid, attr.st_gid = 12, 34
    attr.st_atime_ns, attr.st_mtime_ns = 1_000, 2_000
    attr.st_size = 4
    fields = setattr_fields(
        update_mode=True,
        update_uid=True,
        update_gid=True,
        update_atime=True,
        update_mtime=True,
        update_size=True,
    )
    entry = await ops.setattr(ino, attr, fields, None, CTX)
    assert entry.st_mode == stat.S_IFREG | 0o4750
    assert (entry.st_uid, entry.st_gid) == (12, 34)
    assert (entry.st_atime_ns, entry.st_mtime_ns) == (1_000, 2_000)
    assert entry.st_size == 4
    assert await read_all(ops, ino) == b"0123"
    attr.st_size = 6
    entry = await ops.setattr(ino, attr, setattr_fields(update_size=True), None, CTX)
    assert await read_all(ops, ino) == b"0123\0\0"
    assert (entry.st_uid, stat.S_IMODE(entry.st_mode)) == (12, 0o4750)  # untouched


async def test_setattr_errors(ops: WorkspaceOperations) -> None:
    directory = (await ops.mkdir(ROOT_INO, b"d", 0o755, CTX)).st_ino
    attr = pyfuse3.EntryAttributes()
    attr.st_size = 0
    with fuse_error(errno.EISDIR):
        await ops.setattr(directory, attr, setattr_fields(update_size=True), None, CTX)
    with fuse_error(errno.ENOENT):
        await ops.setattr(5555, attr, setattr_fields(update_mode=True), None, CTX)


async def test_statfs_tracks_bytes_and_files(ops: WorkspaceOperations) -> None:
    before = await ops.statfs(CTX)
    assert before.f_namemax == NAME_MAX
    assert before.f_bsize == before.f_frsize == 4096
    await create_file(ops, ROOT_INO, b"f", b"x" * 10_000)
    after = await ops.statfs(CTX)
    assert before.f_bfree - after.f_bfree == 3  # 10,000 bytes in 4 KiB blocks
    assert before.f_ffree - after.f_ffree == 1


async def test_xattrs(ops: WorkspaceOperations) -> None:
    ino = await create_file(ops, ROOT_INO, b"f")
    await ops.setxattr(ino, b"user.colour", b"blue", CTX)
    await ops.setxattr(ino, b"user.shape", b"\x00round", CTX)
    assert await ops.getxattr(ino, b"user.colour", CTX) == b"blue"
    assert sorted(await ops.listxattr(ino, CTX)) == [b"user.colour", b"user.shape"]
    await ops.removexattr(ino, b"user.colour", CTX)
    assert await ops.listxattr(ino, CTX) == [b"user.shape"]
    with fuse_error(pyfuse3.ENOATTR):
        await ops.getxattr(ino, b"user.colour", CTX)
    with fuse_error(pyfuse3.ENOATTR):
        await ops.removexattr(ino, b"user.colour", CTX)
    with fuse_error(errno.EOPNOTSUPP):  # no ACL support: cp -a must chmod instead
        await ops.setxattr(ino, b"system.posix_acl_access", b"\x02", CTX)
    with fuse_error(errno.ENOENT):
        await ops.getxattr(8888, b"user.x", CTX)
