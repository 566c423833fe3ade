"""Open-free mode: no open or opendir handles; reads, writes and listings by inode.

The kernel calls these handlers with the file handle 0 once open and opendir
have answered ENOSYS (the patched pyfuse3 then passes the inode too).
"""

from __future__ import annotations

import errno
import os
import random
import stat
from typing import cast

import pyfuse3
import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.fuse._features import OPEN_FREE
from workspacefs.fuse._listings import FIRST_ENTRY, offset_of
from workspacefs.fuse._snapshots_dir import SnapshotsDir, snapshot_lister
from workspacefs.tree import ROOT_INO

from .conftest import CTX, Kernel, Listed, context, fuse_error, setattr_fields

pytestmark = [
    pytest.mark.trio,
    pytest.mark.skipif(not OPEN_FREE, reason="needs the patched pyfuse3 (scripts/setup.sh)"),
]

NO_HANDLE = 0


@pytest.fixture
def free(fs: InMemoryFilesystem, kernel: Kernel) -> WorkspaceOperations:
    """Open-free handlers over ``fs``'s live tree, with ``/.snapshots``."""
    operations = WorkspaceOperations(fs.tree, snapshots=snapshot_lister(fs), open_free=True)
    kernel.watch(operations)
    return operations


async def create_file(
    ops: WorkspaceOperations, parent: int, name: bytes, data: bytes = b"", mode: int = 0o644
) -> int:
    """Create ``parent/name`` holding ``data``, as the kernel does without handles."""
    info, entry = await ops.create(parent, name, stat.S_IFREG | mode, os.O_WRONLY, CTX)
    assert info.fh == NO_HANDLE  # nothing to release: the kernel sends no RELEASE then
    assert info.direct_io
    if data:
        assert await ops.write(NO_HANDLE, 0, data, entry.st_ino, os.O_WRONLY, CTX) == len(data)
    return entry.st_ino


async def read_listing(
    ops: WorkspaceOperations, kernel: Kernel, ino: int, start: int = 0, room: int | None = None
) -> list[Listed]:
    """One readdir request without a handle, from offset ``start``."""
    kernel.listed, kernel.room = [], room
    await ops.readdir(NO_HANDLE, start, cast(pyfuse3.ReaddirToken, None), ino)
    return kernel.listed


async def list_all(
    ops: WorkspaceOperations, kernel: Kernel, ino: int, room: int | None = None
) -> list[Listed]:
    """Every entry, in as many requests as ``room`` takes."""
    found: list[Listed] = []
    start = 0
    while listed := await read_listing(ops, kernel, ino, start, room):
        found += listed
        assert listed[-1].next_id > start, "a listing must move on"
        start = listed[-1].next_id
    return found


async def test_open_and_opendir_hand_opening_to_the_kernel(
    free: WorkspaceOperations,
) -> None:
    ino = await create_file(free, ROOT_INO, b"f", b"data")
    assert free.pass_inode_to_fh_handlers
    with fuse_error(errno.ENOSYS):
        await free.open(ino, os.O_RDONLY, CTX)
    with fuse_error(errno.ENOSYS):
        await free.opendir(ROOT_INO, CTX)


async def test_reads_and_writes_by_inode(free: WorkspaceOperations, fs: InMemoryFilesystem) -> None:
    ino = await create_file(free, ROOT_INO, b"f", b"hello world")
    assert await free.read(NO_HANDLE, 6, 100, ino) == b"world"
    assert await free.write(NO_HANDLE, 6, b"there", ino, os.O_RDWR, CTX) == 5
    assert fs.read("f").content == "hello there"
    # O_APPEND: at the tree's end of file, whatever offset the kernel believed in.
    assert await free.write(NO_HANDLE, 3, b"!", ino, os.O_WRONLY | os.O_APPEND, CTX) == 1
    assert fs.read("f").content == "hello there!"
    # Read-write creates go through the page cache (no direct_io), without handles too.
    info, _ = await free.create(ROOT_INO, b"g", stat.S_IFREG | 0o644, os.O_RDWR, CTX)
    assert (info.fh, info.direct_io) == (NO_HANDLE, False)


async def test_writes_by_unprivileged_callers_clear_set_id_bits(
    free: WorkspaceOperations, fs: InMemoryFilesystem
) -> None:
    """A direct_io write (a write-only create) leaves set-ID bits to the mount."""
    ino = await create_file(free, ROOT_INO, b"f", b"x", mode=0o6775)
    assert stat.S_IMODE((await free.getattr(ino, CTX)).st_mode) == 0o755  # uid 1000, umask 022
    root = context(uid=0, gid=0)
    await free.setattr(ino, attributes(0o6775), setattr_fields(update_mode=True), None, root)
    await free.write(NO_HANDLE, 0, b"y", ino, os.O_WRONLY, root)
    assert stat.S_IMODE((await free.getattr(ino, CTX)).st_mode) == 0o6775


async def test_listing_by_name_hash(free: WorkspaceOperations, kernel: Kernel) -> None:
    sub = (await free.mkdir(ROOT_INO, b"sub", 0o755, CTX)).st_ino
    inodes = {f"f{i}": await create_file(free, sub, f"f{i}".encode(), b"x" * i) for i in range(20)}
    listed = await list_all(free, kernel, sub)
    assert [(e.name, e.attributes.st_ino, e.next_id) for e in listed[:2]] == [
        (b".", sub, 1),
        (b"..", ROOT_INO, 2),
    ]
    entries = {e.name.decode(): e for e in listed[2:]}
    assert {name: e.attributes.st_ino for name, e in entries.items()} == inodes
    assert all(entries[f"f{i}"].attributes.st_size == i for i in range(20))
    offsets = [e.next_id for e in listed[2:]]
    assert offsets == sorted(offsets)
    assert min(offsets) >= FIRST_ENTRY
    assert all(e.next_id == offset_of(name) for name, e in entries.items())
    # Every entry but . and .. is a reference the kernel now holds.
    assert all(kernel.counts[ino] == 2 for ino in inodes.values())  # create + listing


async def test_a_full_buffer_resumes_where_it_stopped(
    free: WorkspaceOperations, kernel: Kernel
) -> None:
    for i in range(30):
        await create_file(free, ROOT_INO, f"f{i}".encode())
    whole = [e.name for e in await list_all(free, kernel, ROOT_INO)]
    for room in (1, 2, 3, 7):
        assert [e.name for e in await list_all(free, kernel, ROOT_INO, room)] == whole


async def test_unchanged_entries_are_listed_once_whatever_changes(
    free: WorkspaceOperations, kernel: Kernel
) -> None:
    """Without a frozen copy to iterate, offsets from names keep POSIX's promise:
    an entry neither added nor removed during a listing is returned exactly once."""
    rng = random.Random(5)
    names = {f"n{i}" for i in range(60)}
    for name in names:
        await create_file(free, ROOT_INO, name.encode())
    for _round in range(10):
        seen: list[bytes] = []
        touched: set[str] = set()
        start = 0
        while listed := await read_listing(free, kernel, ROOT_INO, start, room=5):
            seen += [e.name for e in listed]
            assert listed[-1].next_id > start, "a listing must move on"
            start = listed[-1].next_id
            for _ in range(3):  # churn between two requests of one listing
                name = rng.choice(sorted(names))
                if rng.random() < 0.5:
                    await free.unlink(ROOT_INO, name.encode(), CTX)
                    names.remove(name)
                    new = f"m{rng.randrange(10**6)}"
                    await create_file(free, ROOT_INO, new.encode())
                    names.add(new)
                    touched |= {name, new}
                else:
                    new = f"r{rng.randrange(10**6)}"
                    await free.rename(ROOT_INO, name.encode(), ROOT_INO, new.encode(), 0, CTX)
                    names.remove(name)
                    names.add(new)
                    touched |= {name, new}
        listed_names = [name.decode() for name in seen[2:]]
        assert len(listed_names) == len(set(listed_names)), "an entry was listed twice"
        assert names - touched <= set(listed_names), "an unchanged entry was skipped"
        assert set(listed_names) <= names | touched
    # Forget what the listings handed out for the inodes unlinked since.
    await free.forget([(ino, count) for ino, count in kernel.counts.items() if count])


async def test_listing_reflects_changes_between_listings(
    free: WorkspaceOperations, kernel: Kernel, fs: InMemoryFilesystem
) -> None:
    await create_file(free, ROOT_INO, b"a")
    assert [e.name for e in await list_all(free, kernel, ROOT_INO)][2:] == [b"a"]
    fs.write("b", "through the API")
    await free.unlink(ROOT_INO, b"a", CTX)
    assert [e.name for e in await list_all(free, kernel, ROOT_INO)][2:] == [b"b"]


async def test_snapshot_directories_list_by_name(
    free: WorkspaceOperations, kernel: Kernel, fs: InMemoryFilesystem
) -> None:
    fs.write("dir/kept.txt", "old")
    snapshot = fs.snapshot(tag="before")
    fs.write("dir/later.txt", "new")
    snapshots = await list_all(free, kernel, SnapshotsDir.INO)
    assert [e.name for e in snapshots[2:]] == sorted(
        [b"before", str(snapshot.snapshot_id).encode()], key=lambda n: offset_of(n.decode())
    )
    root = snapshots[2].attributes.st_ino
    directory = await free.lookup(root, b"dir", CTX)
    listed = await list_all(free, kernel, directory.st_ino)
    assert [e.name for e in listed] == [b".", b"..", b"kept.txt"]
    assert listed[1].attributes.st_ino == root
    assert await free.read(NO_HANDLE, 0, 10, listed[2].attributes.st_ino) == b"old"


async def test_snapshots_directory_changes_its_mtime_with_its_listing(
    free: WorkspaceOperations, fs: InMemoryFilesystem
) -> None:
    """A kernel that caches listings reuses one only while the mtime stays."""
    before = await free.getattr(SnapshotsDir.INO, CTX)
    assert before.attr_timeout == 0
    assert (await free.getattr(SnapshotsDir.INO, CTX)).st_mtime_ns == before.st_mtime_ns
    fs.snapshot(tag="new")
    assert (await free.getattr(SnapshotsDir.INO, CTX)).st_mtime_ns > before.st_mtime_ns


async def test_readdir_of_a_missing_directory(free: WorkspaceOperations, kernel: Kernel) -> None:
    ino = await create_file(free, ROOT_INO, b"f")
    with fuse_error(errno.ENOTDIR):
        await read_listing(free, kernel, ino)
    with fuse_error(errno.ENOENT):
        await read_listing(free, kernel, 9999)


def attributes(mode: int) -> pyfuse3.EntryAttributes:
    """A setattr request's attributes carrying ``mode``."""
    entry = pyfuse3.EntryAttributes()
    entry.st_mode = stat.S_IFREG | mode
    return entry
