"""Names: lookup, create, mkdir, mknod, symlink, link, unlink, rmdir, rename."""

from __future__ import annotations

import errno
import os
import stat

import pyfuse3
import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.tree import ROOT_INO

from .conftest import CTX, Kernel, context, create_file, fuse_error, read_all

pytestmark = pytest.mark.trio


async def names(kernel: Kernel, ops: WorkspaceOperations, ino: int) -> list[bytes]:
    return [entry.name for entry in await kernel.listdir(ops, ino)][2:]


async def test_lookup_finds_what_create_made(ops: WorkspaceOperations, kernel: Kernel) -> None:
    ino = await create_file(ops, ROOT_INO, b"a.txt", b"hello")
    entry = await ops.lookup(ROOT_INO, b"a.txt", CTX)
    assert entry.st_ino == ino
    assert (entry.st_size, entry.st_nlink) == (5, 1)
    assert stat.S_ISREG(entry.st_mode)
    assert kernel.counts[ino] == 2  # create and lookup each hand out a reference


async def test_lookup_of_dot_and_dotdot(ops: WorkspaceOperations) -> None:
    sub = (await ops.mkdir(ROOT_INO, b"sub", 0o755, CTX)).st_ino
    assert (await ops.lookup(sub, b".", CTX)).st_ino == sub
    assert (await ops.lookup(sub, b"..", CTX)).st_ino == ROOT_INO


async def test_missing_name_is_a_cacheable_negative_entry(ops: WorkspaceOperations) -> None:
    entry = await ops.lookup(ROOT_INO, b"missing", CTX)
    assert entry.st_ino == 0
    assert entry.entry_timeout > 0  # tools probe missing names constantly


async def test_lookup_errors(ops: WorkspaceOperations) -> None:
    file = await create_file(ops, ROOT_INO, b"file")
    with fuse_error(errno.ENAMETOOLONG):
        await ops.lookup(ROOT_INO, b"x" * 256, CTX)
    with fuse_error(errno.ENOTDIR):
        await ops.lookup(file, b"x", CTX)
    with fuse_error(errno.ENOENT):
        await ops.lookup(12345, b"x", CTX)


async def test_new_nodes_get_the_callers_owner_and_umask(ops: WorkspaceOperations) -> None:
    ctx = context(uid=501, gid=20, umask=0o027)
    info, entry = await ops.create(ROOT_INO, b"f", stat.S_IFREG | 0o666, os.O_WRONLY, ctx)
    await ops.release(info.fh)
    assert (entry.st_uid, entry.st_gid, stat.S_IMODE(entry.st_mode)) == (501, 20, 0o640)
    directory = await ops.mkdir(ROOT_INO, b"d", 0o777, ctx)
    assert stat.S_ISDIR(directory.st_mode)
    assert stat.S_IMODE(directory.st_mode) == 0o750
    link = await ops.symlink(ROOT_INO, b"l", b"f", ctx)
    assert (link.st_uid, link.st_gid) == (501, 20)


async def test_setgid_directory_passes_on_its_group(ops: WorkspaceOperations) -> None:
    shared = (await ops.mkdir(ROOT_INO, b"shared", 0o2775, context(gid=50, umask=0))).st_ino
    member = context(uid=7, gid=7, umask=0)
    info, entry = await ops.create(shared, b"f", stat.S_IFREG | 0o644, os.O_WRONLY, member)
    await ops.release(info.fh)
    assert entry.st_gid == 50
    sub = await ops.mkdir(shared, b"sub", 0o755, member)
    assert sub.st_gid == 50
    assert sub.st_mode & stat.S_ISGID


async def test_create_errors(ops: WorkspaceOperations) -> None:
    file = await create_file(ops, ROOT_INO, b"file")
    with fuse_error(errno.EEXIST):
        await ops.create(ROOT_INO, b"file", stat.S_IFREG | 0o644, os.O_RDWR, CTX)
    with fuse_error(errno.EEXIST):
        await ops.mkdir(ROOT_INO, b"file", 0o755, CTX)
    with fuse_error(errno.ENOTDIR):
        await ops.create(file, b"x", stat.S_IFREG | 0o644, os.O_RDWR, CTX)
    with fuse_error(errno.ENAMETOOLONG):
        await ops.mkdir(ROOT_INO, b"x" * 256, 0o755, CTX)


async def test_mkdir_counts_parent_links(ops: WorkspaceOperations) -> None:
    before = (await ops.getattr(ROOT_INO, CTX)).st_nlink
    entry = await ops.mkdir(ROOT_INO, b"d", 0o755, CTX)
    assert entry.st_nlink == 2
    assert (await ops.getattr(ROOT_INO, CTX)).st_nlink == before + 1
    await ops.rmdir(ROOT_INO, b"d", CTX)
    assert (await ops.getattr(ROOT_INO, CTX)).st_nlink == before


async def test_mknod_makes_fifos_and_devices(ops: WorkspaceOperations) -> None:
    fifo = await ops.mknod(ROOT_INO, b"fifo", stat.S_IFIFO | 0o644, 0, CTX)
    assert stat.S_ISFIFO(fifo.st_mode)
    device = await ops.mknod(ROOT_INO, b"null", stat.S_IFCHR | 0o666, os.makedev(1, 3), CTX)
    assert stat.S_ISCHR(device.st_mode)
    assert device.st_rdev == os.makedev(1, 3)
    plain = await ops.mknod(ROOT_INO, b"plain", stat.S_IFREG | 0o600, 0, CTX)
    assert stat.S_ISREG(plain.st_mode)
    with fuse_error(errno.EINVAL):
        await ops.mknod(ROOT_INO, b"link", stat.S_IFLNK | 0o777, 0, CTX)


async def test_symlink_and_readlink_keep_any_bytes(ops: WorkspaceOperations) -> None:
    target = b"../some/\xff\xfe-not-utf8"
    entry = await ops.symlink(ROOT_INO, b"link", target, CTX)
    assert stat.S_ISLNK(entry.st_mode)
    assert entry.st_size == len(target)
    assert await ops.readlink(entry.st_ino, CTX) == target
    file = await create_file(ops, ROOT_INO, b"file")
    with fuse_error(errno.EINVAL):
        await ops.readlink(file, CTX)


async def test_non_utf8_names_round_trip(ops: WorkspaceOperations, kernel: Kernel) -> None:
    name = b"caf\xe9.txt"  # latin-1, not UTF-8
    ino = await create_file(ops, ROOT_INO, name, b"x")
    assert (await ops.lookup(ROOT_INO, name, CTX)).st_ino == ino
    assert await names(kernel, ops, ROOT_INO) == [name]


async def test_hard_links(ops: WorkspaceOperations, kernel: Kernel) -> None:
    ino = await create_file(ops, ROOT_INO, b"a", b"shared")
    sub = (await ops.mkdir(ROOT_INO, b"sub", 0o755, CTX)).st_ino
    entry = await ops.link(ino, sub, b"b", CTX)
    assert (entry.st_ino, entry.st_nlink) == (ino, 2)
    assert (await ops.lookup(sub, b"b", CTX)).st_ino == ino
    await ops.unlink(ROOT_INO, b"a", CTX)
    assert (await ops.getattr(ino, CTX)).st_nlink == 1
    assert await read_all(ops, ino) == b"shared"


async def test_link_errors(ops: WorkspaceOperations, kernel: Kernel) -> None:
    ino = await create_file(ops, ROOT_INO, b"a")
    other = await create_file(ops, ROOT_INO, b"b")
    directory = (await ops.mkdir(ROOT_INO, b"d", 0o755, CTX)).st_ino
    with fuse_error(errno.EEXIST):
        await ops.link(ino, ROOT_INO, b"b", CTX)
    with fuse_error(errno.EPERM):
        await ops.link(directory, ROOT_INO, b"d2", CTX)
    with fuse_error(errno.ENOTDIR):
        await ops.link(ino, other, b"x", CTX)
    await ops.unlink(ROOT_INO, b"a", CTX)  # still held: an orphan
    with fuse_error(errno.ENOENT):
        await ops.link(ino, ROOT_INO, b"revived", CTX)


async def test_unlink_and_rmdir_errors(ops: WorkspaceOperations) -> None:
    await create_file(ops, ROOT_INO, b"file")
    full = (await ops.mkdir(ROOT_INO, b"full", 0o755, CTX)).st_ino
    await create_file(ops, full, b"inside")
    with fuse_error(errno.ENOENT):
        await ops.unlink(ROOT_INO, b"missing", CTX)
    with fuse_error(errno.EISDIR):
        await ops.unlink(ROOT_INO, b"full", CTX)
    with fuse_error(errno.ENOTDIR):
        await ops.rmdir(ROOT_INO, b"file", CTX)
    with fuse_error(errno.ENOTEMPTY):
        await ops.rmdir(ROOT_INO, b"full", CTX)
    with fuse_error(errno.ENOENT):
        await ops.rmdir(ROOT_INO, b"missing", CTX)
    await ops.unlink(full, b"inside", CTX)
    await ops.rmdir(ROOT_INO, b"full", CTX)
    assert (await ops.lookup(ROOT_INO, b"full", CTX)).st_ino == 0


async def test_rename_moves_and_replaces(ops: WorkspaceOperations, kernel: Kernel) -> None:
    a = await create_file(ops, ROOT_INO, b"a", b"A")
    await create_file(ops, ROOT_INO, b"b", b"B")
    sub = (await ops.mkdir(ROOT_INO, b"sub", 0o755, CTX)).st_ino
    await ops.rename(ROOT_INO, b"a", sub, b"a2", 0, CTX)
    assert (await ops.lookup(sub, b"a2", CTX)).st_ino == a
    await ops.rename(sub, b"a2", ROOT_INO, b"b", 0, CTX)  # replaces b
    assert (await ops.lookup(ROOT_INO, b"b", CTX)).st_ino == a
    assert await read_all(ops, a) == b"A"
    assert await names(kernel, ops, ROOT_INO) == [b"sub", b"b"]


async def test_rename_directories(ops: WorkspaceOperations) -> None:
    outer = (await ops.mkdir(ROOT_INO, b"outer", 0o755, CTX)).st_ino
    inner = (await ops.mkdir(outer, b"inner", 0o755, CTX)).st_ino
    empty = (await ops.mkdir(ROOT_INO, b"empty", 0o755, CTX)).st_ino
    await create_file(ops, inner, b"f")
    await create_file(ops, ROOT_INO, b"file")
    with fuse_error(errno.EINVAL):
        await ops.rename(ROOT_INO, b"outer", inner, b"loop", 0, CTX)
    with fuse_error(errno.ENOTEMPTY):
        await ops.rename(ROOT_INO, b"empty", outer, b"inner", 0, CTX)
    with fuse_error(errno.ENOTDIR):
        await ops.rename(ROOT_INO, b"empty", ROOT_INO, b"file", 0, CTX)
    with fuse_error(errno.EISDIR):
        await ops.rename(ROOT_INO, b"file", ROOT_INO, b"empty", 0, CTX)
    with fuse_error(errno.ENOENT):
        await ops.rename(ROOT_INO, b"missing", ROOT_INO, b"x", 0, CTX)
    await ops.rename(outer, b"inner", ROOT_INO, b"empty", 0, CTX)  # over an empty directory
    assert (await ops.lookup(ROOT_INO, b"empty", CTX)).st_ino == inner
    assert (await ops.lookup(inner, b"..", CTX)).st_ino == ROOT_INO
    assert (await ops.getattr(outer, CTX)).st_nlink == 2
    assert (await ops.getattr(empty, CTX)).st_nlink == 0  # replaced, still held: an orphan


async def test_rename_noreplace(ops: WorkspaceOperations) -> None:
    a = await create_file(ops, ROOT_INO, b"a")
    b = await create_file(ops, ROOT_INO, b"b")
    with fuse_error(errno.EEXIST):
        await ops.rename(ROOT_INO, b"a", ROOT_INO, b"b", pyfuse3.RENAME_NOREPLACE, CTX)
    assert (await ops.lookup(ROOT_INO, b"b", CTX)).st_ino == b
    await ops.rename(ROOT_INO, b"a", ROOT_INO, b"c", pyfuse3.RENAME_NOREPLACE, CTX)
    assert (await ops.lookup(ROOT_INO, b"c", CTX)).st_ino == a


async def test_rename_exchange_across_directories(ops: WorkspaceOperations) -> None:
    file = await create_file(ops, ROOT_INO, b"x", b"file")
    left = (await ops.mkdir(ROOT_INO, b"left", 0o755, CTX)).st_ino
    directory = (await ops.mkdir(left, b"y", 0o755, CTX)).st_ino
    exchange = pyfuse3.RENAME_EXCHANGE
    await ops.rename(ROOT_INO, b"x", left, b"y", exchange, CTX)
    assert (await ops.lookup(ROOT_INO, b"x", CTX)).st_ino == directory
    assert (await ops.lookup(left, b"y", CTX)).st_ino == file
    assert (await ops.lookup(directory, b"..", CTX)).st_ino == ROOT_INO
    assert (await ops.getattr(left, CTX)).st_nlink == 2  # its subdirectory left
    with fuse_error(errno.ENOENT):
        await ops.rename(ROOT_INO, b"x", ROOT_INO, b"missing", exchange, CTX)
    with fuse_error(errno.EINVAL):
        await ops.rename(ROOT_INO, b"x", left, b"y", exchange | pyfuse3.RENAME_NOREPLACE, CTX)


async def test_names_written_through_the_api_are_found(
    fs: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    fs.write("dir/api.txt", "from the API")
    directory = (await ops.lookup(ROOT_INO, b"dir", CTX)).st_ino
    file = (await ops.lookup(directory, b"api.txt", CTX)).st_ino
    assert await read_all(ops, file) == b"from the API"
