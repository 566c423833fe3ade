"""The FUSE handlers called directly, as the kernel calls them, without a mount.

This tier runs wherever Python does (no /dev/fuse): each test drives
``WorkspaceOperations`` with a fake request context, and the ``Kernel`` below
plays the kernel's part of the protocol: it counts the references every entry
reply hands out (and ``forget`` gives back) independently of the handlers'
own counts, and it is the buffer ``readdir`` fills. Every test ends with a
consistency check of the tree against those counts.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pyfuse3
import pytest

from support.consistency import check_consistent
from workspacefs import InMemoryFilesystem
from workspacefs.fuse import WorkspaceOperations
from workspacefs.fuse._snapshots_dir import SnapshotsDir, snapshot_lister


@dataclass(frozen=True, slots=True)
class FakeContext:
    """What a handler reads from a request (pyfuse3's cannot be built with values)."""

    uid: int = 1000
    gid: int = 1000
    pid: int = 4242
    umask: int = 0o022


def context(**values: int) -> pyfuse3.RequestContext:
    """A request context from ``FakeContext``'s fields."""
    return cast(pyfuse3.RequestContext, FakeContext(**values))


CTX = context()


@dataclass(frozen=True, slots=True)
class FakeSetattrFields:
    """Which attributes a setattr changes (pyfuse3's cannot be built with values)."""

    update_atime: bool = False
    update_mtime: bool = False
    update_ctime: bool = False
    update_mode: bool = False
    update_uid: bool = False
    update_gid: bool = False
    update_size: bool = False


def setattr_fields(**values: bool) -> pyfuse3.SetattrFields:
    """Setattr fields from ``FakeSetattrFields``'s flags."""
    return cast(pyfuse3.SetattrFields, FakeSetattrFields(**values))


@dataclass(frozen=True, slots=True)
class Listed:
    """One entry ``readdir`` gave the kernel."""

    name: bytes
    attributes: pyfuse3.EntryAttributes
    next_id: int


class Kernel:
    """The kernel's side of the protocol, for handlers called without a mount.

    ``counts`` are the lookup counts the kernel keeps: one per entry reply
    (lookup, create, mkdir, mknod, symlink, link, and each readdir entry but
    ``.`` and ``..``), minus what ``forget`` gives back. ``room`` is how many
    entries the next ``readdir`` buffer takes (None: all of them).
    """

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()
        self.room: int | None = None
        self.listed: list[Listed] = []

    def held(self) -> set[int]:
        """The live tree's inodes the kernel holds (snapshots' are never held)."""
        return {ino for ino, n in self.counts.items() if n > 0 and ino < SnapshotsDir.FIRST_INO}

    def readdir_reply(
        self, token: object, name: bytes, attributes: pyfuse3.EntryAttributes, next_id: int
    ) -> bool:
        """Stands in for ``pyfuse3.readdir_reply``: take the entry if the buffer has room."""
        if self.room is not None and len(self.listed) >= self.room:
            return False
        self.listed.append(Listed(name, attributes, next_id))
        if name not in (b".", b".."):
            self.counts[attributes.st_ino] += 1
        return True

    def watch(self, ops: WorkspaceOperations) -> None:
        """Count the references ``ops``'s replies hand out and ``forget`` takes back."""
        for name in ("lookup", "mkdir", "mknod", "symlink", "link", "create"):
            setattr(ops, name, self._counting(getattr(ops, name)))
        setattr(ops, "forget", self._forgetting(ops.forget))  # noqa: B010

    def _counting(self, handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(handler)
        async def counted(*args: Any) -> Any:
            reply = await handler(*args)
            entry = reply[1] if isinstance(reply, tuple) else reply  # create: (info, entry)
            if entry.st_ino:  # a negative entry holds nothing
                self.counts[entry.st_ino] += 1
            return reply

        return counted

    def _forgetting(
        self, handler: Callable[[Sequence[tuple[int, int]]], Awaitable[None]]
    ) -> Callable[[Sequence[tuple[int, int]]], Awaitable[None]]:
        @functools.wraps(handler)
        async def forget(inode_list: Sequence[tuple[int, int]]) -> None:
            await handler(inode_list)
            for ino, count in inode_list:
                self.counts[ino] -= count

        return forget

    async def listdir(
        self, ops: WorkspaceOperations, ino: int, *, room: int | None = None
    ) -> list[Listed]:
        """Every entry of directory ``ino``: opendir, readdir until done, releasedir."""
        fh = await ops.opendir(ino, CTX)
        try:
            return await self.read_entries(ops, fh, 0, room=room, until_end=True)
        finally:
            await ops.releasedir(fh)

    async def read_entries(
        self,
        ops: WorkspaceOperations,
        fh: int,
        start: int,
        *,
        room: int | None = None,
        until_end: bool = False,
    ) -> list[Listed]:
        """One readdir call from offset ``start`` with room for ``room`` entries
        (or, ``until_end``, as many calls as it takes)."""
        found: list[Listed] = []
        while True:
            self.listed, self.room = [], room
            await ops.readdir(fh, start, cast(pyfuse3.ReaddirToken, None))
            found += self.listed
            if not until_end or not self.listed:
                return found
            start = self.listed[-1].next_id


@pytest.fixture
def fs() -> InMemoryFilesystem:
    return InMemoryFilesystem()


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> Kernel:
    kernel = Kernel()
    monkeypatch.setattr(pyfuse3, "readdir_reply", kernel.readdir_reply)
    return kernel


@pytest.fixture(autouse=True)
def consistent(fs: InMemoryFilesystem, kernel: Kernel) -> Iterator[None]:
    """Every test ends with a consistency check of the tree and of its snapshots."""
    yield
    check_consistent(fs.tree, held=kernel.held())
    for record in fs.snapshots():
        check_consistent(fs.version(record))


@pytest.fixture
def ops(fs: InMemoryFilesystem, kernel: Kernel) -> WorkspaceOperations:
    """Handlers over ``fs``'s live tree, with ``/.snapshots``."""
    operations = WorkspaceOperations(fs.tree, snapshots=snapshot_lister(fs))
    kernel.watch(operations)
    return operations


@contextlib.contextmanager
def fuse_error(code: int) -> Iterator[None]:
    """Expect the handler call in the block to answer ``code``."""
    with pytest.raises(pyfuse3.FUSEError) as excinfo:
        yield
    got = excinfo.value.errno
    assert got == code, f"{errno.errorcode.get(got, got)}, expected {errno.errorcode[code]}"


async def create_file(
    ops: WorkspaceOperations, parent: int, name: bytes, data: bytes = b"", mode: int = 0o644
) -> int:
    """Create ``parent/name`` holding ``data`` (and close it); its inode."""
    info, entry = await ops.create(parent, name, stat.S_IFREG | mode, os.O_RDWR, CTX)
    if data:
        assert await ops.write(info.fh, 0, data) == len(data)
    await ops.release(info.fh)
    return entry.st_ino


async def read_all(ops: WorkspaceOperations, ino: int) -> bytes:
    """The whole content of file ``ino``, read through a handle."""
    info = await ops.open(ino, os.O_RDONLY, CTX)
    try:
        return await ops.read(info.fh, 0, 1 << 30)
    finally:
        await ops.release(info.fh)
