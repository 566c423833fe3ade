"""The hidden ``/.snapshots`` directory, served by the handlers without a mount."""

from __future__ import annotations

import errno
import os
import stat

import pyfuse3
import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.tree import ROOT_INO

from .conftest import CTX, Kernel, create_file, fuse_error, read_all

pytestmark = pytest.mark.trio


async def snapshots_dir(ops: WorkspaceOperations) -> int:
    entry = await ops.lookup(ROOT_INO, b".snapshots", CTX)
    assert entry.st_ino, "/.snapshots answers a lookup by name"
    return entry.st_ino


async def test_found_by_name_never_listed(ops: WorkspaceOperations, kernel: Kernel) -> None:
    await create_file(ops, ROOT_INO, b"a")
    entry = await ops.lookup(ROOT_INO, b".snapshots", CTX)
    assert entry.st_mode == stat.S_IFDIR | 0o555
    assert entry.st_nlink == 2
    assert entry.entry_timeout <= 1  # its listing changes without invalidation
    assert [e.name for e in await kernel.listdir(ops, ROOT_INO)] == [b".", b"..", b"a"]
    assert (await ops.getattr(entry.st_ino, CTX)).st_mode == entry.st_mode
    assert await ops.access(entry.st_ino, os.R_OK, CTX)
    with fuse_error(pyfuse3.ENOATTR):
        await ops.getxattr(entry.st_ino, b"user.x", CTX)
    assert await ops.listxattr(entry.st_ino, CTX) == []


async def test_each_snapshot_by_tag_and_by_id(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    fs.write("src/app.py", "v1")
    first = fs.snapshot(tag="first")
    fs.write("src/app.py", "v2 live")
    directory = await snapshots_dir(ops)
    listed = await kernel.listdir(ops, directory)
    assert [e.name for e in listed] == [
        b".",
        b"..",
        *sorted([b"first", str(first.snapshot_id).encode()]),
    ]
    assert listed[1].attributes.st_ino == ROOT_INO
    by_tag = await ops.lookup(directory, b"first", CTX)
    by_id = await ops.lookup(directory, str(first.snapshot_id).encode(), CTX)
    assert by_tag.st_ino == by_id.st_ino
    assert by_tag.entry_timeout <= 1  # a deleted snapshot must not linger
    assert (await ops.lookup(by_tag.st_ino, b"..", CTX)).st_ino == by_tag.st_ino
    src = (await ops.lookup(by_tag.st_ino, b"src", CTX)).st_ino
    app = (await ops.lookup(src, b"app.py", CTX)).st_ino
    assert await read_all(ops, app) == b"v1"
    live_src = (await ops.lookup(ROOT_INO, b"src", CTX)).st_ino
    live_app = (await ops.lookup(live_src, b"app.py", CTX)).st_ino
    assert app != live_app
    assert await read_all(ops, live_app) == b"v2 live"


async def test_new_snapshots_show_up_at_once(
    fs: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    directory = await snapshots_dir(ops)
    missing = await ops.lookup(directory, b"later", CTX)
    assert (missing.st_ino, missing.entry_timeout) == (0, 0)
    fs.write("f", "x")
    fs.snapshot(tag="later")
    assert (await ops.lookup(directory, b"later", CTX)).st_ino


async def test_everything_inside_is_read_only(
    fs: InMemoryFilesystem, ops: WorkspaceOperations
) -> None:
    fs.write("f.txt", "x")
    fs.snapshot(tag="ro")
    directory = await snapshots_dir(ops)
    root = (await ops.lookup(directory, b"ro", CTX)).st_ino
    file = (await ops.lookup(root, b"f.txt", CTX)).st_ino
    with fuse_error(errno.EROFS):
        await ops.mkdir(directory, b"new", 0o755, CTX)
    with fuse_error(errno.EROFS):
        await ops.create(root, b"new", stat.S_IFREG | 0o644, os.O_WRONLY, CTX)
    with fuse_error(errno.EROFS):
        await ops.unlink(root, b"f.txt", CTX)
    with fuse_error(errno.EROFS):
        await ops.rename(root, b"f.txt", ROOT_INO, b"moved", 0, CTX)
    with fuse_error(errno.EROFS):
        await ops.link(file, ROOT_INO, b"linked", CTX)
    with fuse_error(errno.EROFS):
        await ops.open(file, os.O_WRONLY, CTX)
    with fuse_error(errno.EISDIR):
        await ops.open(directory, os.O_RDONLY, CTX)
    assert fs.read("f.txt").content == "x"


async def test_a_real_entry_named_snapshots_wins(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    fs.write(".snapshots/mine.txt", "a real file")
    fs.snapshot(tag="t")
    real = (await ops.lookup(ROOT_INO, b".snapshots", CTX)).st_ino
    assert [e.name for e in await kernel.listdir(ops, real)][2:] == [b"mine.txt"]
    assert b".snapshots" in [e.name for e in await kernel.listdir(ops, ROOT_INO)]


async def test_a_deleted_snapshot_goes_stale(
    fs: InMemoryFilesystem, ops: WorkspaceOperations, kernel: Kernel
) -> None:
    fs.write("a.txt", "a")
    snapshot = fs.snapshot(tag="gone-soon")
    directory = await snapshots_dir(ops)
    root = (await ops.lookup(directory, b"gone-soon", CTX)).st_ino
    fh = await ops.opendir(directory, CTX)
    fs.delete_snapshot(snapshot)
    assert (await ops.lookup(directory, b"gone-soon", CTX)).st_ino == 0
    with fuse_error(errno.ESTALE):
        await ops.getattr(root, CTX)
    # Listed at opendir, pruned since: skipped, not an error.
    names = [e.name for e in await kernel.read_entries(ops, fh, 0, until_end=True)]
    await ops.releasedir(fh)
    assert names == [b".", b".."]


async def test_hidden_when_not_asked_for(fs: InMemoryFilesystem, kernel: Kernel) -> None:
    fs.snapshot(tag="t")
    ops = WorkspaceOperations(fs.tree)
    kernel.watch(ops)
    assert (await ops.lookup(ROOT_INO, b".snapshots", CTX)).st_ino == 0
