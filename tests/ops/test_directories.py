"""readdir: ``.`` and ``..`` first, offsets stable while the directory changes."""

from __future__ import annotations

import errno
import stat

import pytest

from workspacefs.fuse import WorkspaceOperations
from workspacefs.tree import ROOT_INO

from .conftest import CTX, Kernel, create_file, fuse_error

pytestmark = pytest.mark.trio


async def test_listing_has_dot_entries_and_attributes(
    ops: WorkspaceOperations, kernel: Kernel
) -> None:
    sub = (await ops.mkdir(ROOT_INO, b"sub", 0o755, CTX)).st_ino
    file = await create_file(ops, sub, b"f", b"12345")
    listed = await kernel.listdir(ops, sub)
    assert [(e.name, e.attributes.st_ino) for e in listed] == [
        (b".", sub),
        (b"..", ROOT_INO),
        (b"f", file),
    ]
    assert listed[2].attributes.st_size == 5
    assert stat.S_ISREG(listed[2].attributes.st_mode)
    assert [e.next_id for e in listed] == [1, 2, 3]


async def test_readdir_entries_are_lookups(ops: WorkspaceOperations, kernel: Kernel) -> None:
    """Each entry but . and .. hands the kernel a reference (readdirplus)."""
    ino = await create_file(ops, ROOT_INO, b"f")
    await ops.forget([(ino, kernel.counts[ino])])
    await kernel.listdir(ops, ROOT_INO)
    assert kernel.counts[ino] == 1
    assert kernel.counts[ROOT_INO] == 0


async def test_a_full_buffer_resumes_at_the_next_offset(
    ops: WorkspaceOperations, kernel: Kernel
) -> None:
    for i in range(7):
        await create_file(ops, ROOT_INO, f"f{i}".encode())
    listed = await kernel.listdir(ops, ROOT_INO, room=3)
    assert [e.name for e in listed] == [b".", b".."] + [f"f{i}".encode() for i in range(7)]


async def test_offsets_stay_stable_while_the_directory_changes(
    ops: WorkspaceOperations, kernel: Kernel
) -> None:
    inodes = {f"f{i}": await create_file(ops, ROOT_INO, f"f{i}".encode()) for i in range(8)}
    fh = await ops.opendir(ROOT_INO, CTX)
    first = await kernel.read_entries(ops, fh, 0, room=4)
    assert [e.name for e in first] == [b".", b"..", b"f0", b"f1"]
    # Meanwhile: f2 is deleted (and forgotten by the kernel), f5 renamed, g created,
    # and f0, already listed, deleted.
    await ops.unlink(ROOT_INO, b"f2", CTX)
    await ops.forget([(inodes["f2"], kernel.counts[inodes["f2"]])])
    await ops.rename(ROOT_INO, b"f5", ROOT_INO, b"f5-renamed", 0, CTX)
    await create_file(ops, ROOT_INO, b"g")
    await ops.unlink(ROOT_INO, b"f0", CTX)
    rest = await kernel.read_entries(ops, fh, first[-1].next_id, until_end=True)
    await ops.releasedir(fh)
    # Nothing repeated, nothing skipped but what is gone; the listing is the
    # directory as it was at opendir.
    assert [e.name for e in rest] == [b"f3", b"f4", b"f5", b"f6", b"f7"]
    assert [e.attributes.st_ino for e in rest][2] == inodes["f5"]
    now = [e.name for e in await kernel.listdir(ops, ROOT_INO)]
    assert now == [b".", b"..", b"f1", b"f3", b"f4", b"f6", b"f7", b"f5-renamed", b"g"]


async def test_opendir_errors(ops: WorkspaceOperations) -> None:
    file = await create_file(ops, ROOT_INO, b"f")
    with fuse_error(errno.ENOTDIR):
        await ops.opendir(file, CTX)
    with fuse_error(errno.ENOENT):
        await ops.opendir(777, CTX)
