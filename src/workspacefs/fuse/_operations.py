"""pyfuse3 ``Operations`` over the tree: the kernel's front door.

Every handler does its tree work synchronously under the tree lock (there is
no ``await`` inside a critical section, so the trio loop never parks holding
it) and translates errors in one place: an ``OSError`` from the tree becomes
``FUSEError(errno)``; anything else is a bug, logged with its traceback and
answered with EIO rather than aborting the mount.

Lookup counts are the tree's pins: +1 for every entry reply (lookup, create,
mkdir, mknod, symlink, link, and each accepted ``readdir_reply``), minus what
``forget`` says. An inode unlinked while pinned stays alive as an orphan.

Inode numbers go through ``InodeSpace`` (``_space``): the live tree's own
numbers, plus one range per snapshot served read-only under ``/.snapshots``.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import logging
import os
import stat as _stat
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import pyfuse3
from pyfuse3 import FUSEError

from ..tree import NAME_MAX, ROOT_INO, Directory, Node, Special, Tree, TreeView
from ._space import SNAPSHOT_BASE, SNAPSHOTS_INO, SNAPSHOTS_NAME, InodeSpace, SnapshotLister

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

BLOCK_SIZE = 4096


def fuse_errors(
    handler: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Let only ``FUSEError`` out of a handler: the one adapter at the FUSE edge."""

    @functools.wraps(handler)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await handler(*args, **kwargs)
        except FUSEError:
            raise
        except OSError as exc:
            raise FUSEError(exc.errno or errno.EIO) from None
        except Exception:
            log.exception("bug in FUSE handler %s", handler.__name__)
            raise FUSEError(errno.EIO) from None

    return wrapper


def decode(name: bytes) -> str:
    """A kernel name as the tree's str (non-UTF-8 bytes kept as surrogates)."""
    return name.decode("utf-8", "surrogateescape")


def encode(name: str) -> bytes:
    """A tree name as the kernel's bytes."""
    return name.encode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """How long the kernel may trust what it was told.

    Safe to be generous: every change made through the Python API, and every
    restore, is invalidated explicitly (see ``_invalidate``).
    """

    entry_timeout: float = 300.0
    attr_timeout: float = 300.0
    keep_cache: bool = True


DEFAULT_CACHE = CachePolicy()


def _missing(timeout: float) -> pyfuse3.EntryAttributes:
    """A negative lookup reply the kernel may cache for ``timeout`` seconds."""
    missing = pyfuse3.EntryAttributes()
    missing.st_ino = 0
    missing.entry_timeout = timeout
    return missing


@dataclass(slots=True)
class _OpenFile:
    ino: int
    append: bool


class WorkspaceOperations(pyfuse3.Operations):
    """The FUSE request handlers for one tree (live) or version (read-only)."""

    supports_dot_lookup = True
    enable_writeback_cache = False
    enable_acl = False

    def __init__(
        self,
        view: TreeView,
        *,
        read_only: bool = False,
        cache: CachePolicy = DEFAULT_CACHE,
        capacity_bytes: int = 64 << 30,
        snapshots: SnapshotLister | None = None,
    ) -> None:
        super().__init__()
        self._view = view
        self._space = InodeSpace(view, snapshots)
        self._tree = view if isinstance(view, Tree) and not read_only else None
        self._lock: contextlib.AbstractContextManager[Any] = (
            view.lock.unpublished if isinstance(view, Tree) else contextlib.nullcontext()
        )
        self._cache = cache
        self._capacity = capacity_bytes
        self._handles = itertools.count(1)
        self._files: dict[int, _OpenFile] = {}
        self._dirs: dict[int, list[tuple[str, int]]] = {}

    # -- helpers ---------------------------------------------------------------

    def _writable(self, *inodes: int) -> Tree:
        """The live tree, if it may be written here (snapshots never may)."""
        if self._tree is None or any(ino >= SNAPSHOT_BASE for ino in inodes):
            raise FUSEError(errno.EROFS)
        return self._tree

    def _node(self, ino: int) -> Node:
        view, local, _ = self._space.resolve(ino)
        return view.node(local)

    def _snapshots_entry(self) -> pyfuse3.EntryAttributes:
        """The hidden ``/.snapshots`` directory: read-only, its listing changes."""
        entry = self._entry(SNAPSHOTS_INO, self._view.node(ROOT_INO))
        entry.st_mode = _stat.S_IFDIR | 0o555
        entry.st_nlink = 2
        entry.entry_timeout = entry.attr_timeout = 1.0
        return entry

    def _entry(self, ino: int, node: Node) -> pyfuse3.EntryAttributes:
        entry = pyfuse3.EntryAttributes()
        entry.st_ino = ino
        entry.generation = 0
        entry.entry_timeout = self._cache.entry_timeout
        entry.attr_timeout = self._cache.attr_timeout
        entry.st_mode = node.mode
        entry.st_nlink = node.nlink
        entry.st_uid = node.uid
        entry.st_gid = node.gid
        entry.st_rdev = node.rdev if isinstance(node, Special) else 0
        entry.st_size = node.size
        entry.st_blksize = BLOCK_SIZE
        entry.st_blocks = (node.allocated + 511) // 512
        entry.st_atime_ns = node.atime_ns
        entry.st_mtime_ns = node.mtime_ns
        entry.st_ctime_ns = node.ctime_ns
        entry.st_birthtime_ns = node.crtime_ns
        return entry

    def _reply(self, ino: int) -> pyfuse3.EntryAttributes:
        """An entry reply: the kernel now holds one more reference to ``ino``."""
        entry = self._entry(ino, self._node(ino))
        if self._tree is not None and ino < SNAPSHOT_BASE:  # snapshots have no orphans
            self._tree.pin(ino)
        return entry

    def _owner(self, parent: int, ctx: pyfuse3.RequestContext, mode: int) -> tuple[int, int, int]:
        """(mode, uid, gid) of a new node: umask applied, setgid directories inherited."""
        parent_node = self._view.node(parent)
        gid = ctx.gid
        if parent_node.mode & _stat.S_ISGID:
            gid = parent_node.gid
            if _stat.S_ISDIR(mode):
                mode |= _stat.S_ISGID
        return mode & ~ctx.umask, ctx.uid, gid

    # -- lookups and attributes ------------------------------------------------

    @fuse_errors
    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        if len(name) > NAME_MAX:
            raise FUSEError(errno.ENAMETOOLONG)
        with self._lock:
            if parent_inode == SNAPSHOTS_INO:
                return self._lookup_snapshot(decode(name))
            view, local, slot = self._space.resolve(parent_inode)
            found = view.find(local, decode(name))
            if found is None:
                if self._is_snapshots_dir(parent_inode, name):
                    return self._snapshots_entry()
                # A negative entry the kernel may cache: tools probe for
                # missing files constantly (git, compilers, shells). API
                # creates and restores invalidate it like any other entry.
                return _missing(self._cache.entry_timeout)
            return self._reply(InodeSpace.outer(slot, found))

    def _is_snapshots_dir(self, parent: int, name: bytes) -> bool:
        """``/.snapshots`` exists when asked for by name, unless a real entry has the name."""
        return self._space.enabled and parent == ROOT_INO and name == SNAPSHOTS_NAME.encode()

    def _lookup_snapshot(self, name: str) -> pyfuse3.EntryAttributes:
        ino = self._space.names().get(name)
        if ino is None:
            return _missing(0)  # a snapshot taken later must show up at once
        entry = self._reply(ino)
        entry.entry_timeout = 1.0  # a deleted snapshot must not linger
        return entry

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        if self._tree is None:
            return
        try:
            with self._lock:
                for ino, count in inode_list:
                    if ino < SNAPSHOT_BASE:
                        self._tree.forget(ino, count)
        except Exception:  # forget must never raise
            log.exception("forget failed")

    @fuse_errors
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        with self._lock:
            if inode == SNAPSHOTS_INO:
                return self._snapshots_entry()
            return self._entry(inode, self._node(inode))

    @fuse_errors
    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        tree = self._writable(inode)
        with self._lock:
            tree.setattr(
                inode,
                mode=attr.st_mode if fields.update_mode else None,
                uid=attr.st_uid if fields.update_uid else None,
                gid=attr.st_gid if fields.update_gid else None,
                size=attr.st_size if fields.update_size else None,
                atime_ns=attr.st_atime_ns if fields.update_atime else None,
                mtime_ns=attr.st_mtime_ns if fields.update_mtime else None,
                ctime_ns=attr.st_ctime_ns if fields.update_ctime else None,
            )
            return self._entry(inode, tree.node(inode))

    @fuse_errors
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        with self._lock:
            view, local, _ = self._space.resolve(inode)
            return encode(view.readlink(local))

    @fuse_errors
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        with self._lock:
            used = self._view.total_bytes if isinstance(self._view, Tree) else 0
            files = self._view.file_count if isinstance(self._view, Tree) else 0
        blocks = self._capacity // BLOCK_SIZE
        free = max(0, blocks - (used + BLOCK_SIZE - 1) // BLOCK_SIZE)
        data = pyfuse3.StatvfsData()
        data.f_bsize = data.f_frsize = BLOCK_SIZE
        data.f_blocks = blocks
        data.f_bfree = data.f_bavail = free
        data.f_files = 1 << 32
        data.f_ffree = data.f_favail = (1 << 32) - files
        data.f_namemax = NAME_MAX
        return data

    @fuse_errors
    async def access(self, inode: int, mode: int, ctx: pyfuse3.RequestContext) -> bool:
        # Only called without default_permissions: then every access is allowed.
        with self._lock:
            if inode != SNAPSHOTS_INO:
                self._node(inode)
        return True

    # -- creating and removing -------------------------------------------------

    @fuse_errors
    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        tree = self._writable(parent_inode)
        with self._lock:
            mode, uid, gid = self._owner(parent_inode, ctx, mode)
            return self._reply(tree.mknod(parent_inode, decode(name), mode, rdev, uid, gid))

    @fuse_errors
    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        tree = self._writable(parent_inode)
        with self._lock:
            mode, uid, gid = self._owner(parent_inode, ctx, mode | _stat.S_IFDIR)
            return self._reply(tree.mkdir(parent_inode, decode(name), mode, uid, gid))

    @fuse_errors
    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        tree = self._writable(parent_inode)
        with self._lock:
            _, uid, gid = self._owner(parent_inode, ctx, 0)
            return self._reply(tree.symlink(parent_inode, decode(name), decode(target), uid, gid))

    @fuse_errors
    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        tree = self._writable(inode, new_parent_inode)
        with self._lock:
            tree.link(inode, new_parent_inode, decode(new_name))
            return self._reply(inode)

    @fuse_errors
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        tree = self._writable(parent_inode)
        with self._lock:
            tree.unlink(parent_inode, decode(name))

    @fuse_errors
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        tree = self._writable(parent_inode)
        with self._lock:
            tree.rmdir(parent_inode, decode(name))

    @fuse_errors
    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        tree = self._writable(parent_inode_old, parent_inode_new)
        with self._lock:
            tree.rename(
                parent_inode_old, decode(name_old), parent_inode_new, decode(name_new), flags
            )

    # -- files -----------------------------------------------------------------

    def _open(self, ino: int, flags: int) -> pyfuse3.FileInfo:
        node = self._node(ino)
        if isinstance(node, Directory):
            raise FUSEError(errno.EISDIR)
        if flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC:
            tree = self._writable(ino)
            if flags & os.O_TRUNC and node.size:  # libfuse asks for atomic O_TRUNC
                tree.truncate(ino, 0)
        handle = next(self._handles)
        self._files[handle] = _OpenFile(ino, bool(flags & os.O_APPEND))
        return pyfuse3.FileInfo(fh=handle, keep_cache=self._cache.keep_cache)

    @fuse_errors
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        with self._lock:
            return self._open(inode, flags)

    @fuse_errors
    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: pyfuse3.RequestContext
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        tree = self._writable(parent_inode)
        with self._lock:
            mode, uid, gid = self._owner(parent_inode, ctx, mode)
            ino = tree.create(parent_inode, decode(name), mode, uid, gid)
            return self._open(ino, flags), self._reply(ino)

    @fuse_errors
    async def read(self, fh: int, off: int, size: int) -> bytes:
        with self._lock:
            view, local, _ = self._space.resolve(self._files[fh].ino)
            return view.read(local, off, size)

    @fuse_errors
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        tree = self._writable()
        with self._lock:
            handle = self._files[fh]
            if handle.append:  # the tree, not the kernel's cached size, says where EOF is
                off = tree.node(handle.ino).size
            return tree.write(handle.ino, off, buf)

    # Nothing to flush or sync: the tree is the storage. ENOSYS tells the
    # kernel so once, and it stops sending these requests (one round trip
    # fewer per close).

    async def flush(self, fh: int) -> None:
        raise FUSEError(errno.ENOSYS)

    async def fsync(self, fh: int, datasync: bool) -> None:
        raise FUSEError(errno.ENOSYS)

    @fuse_errors
    async def release(self, fh: int) -> None:
        self._files.pop(fh, None)

    # -- directories -----------------------------------------------------------

    @fuse_errors
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        with self._lock:
            # A frozen copy of the entries: offsets stay stable while the
            # directory changes, so no entry is skipped or repeated.
            if inode == SNAPSHOTS_INO:
                listed = sorted(self._space.names().items())
                entries = [(".", SNAPSHOTS_INO), ("..", ROOT_INO), *listed]
            else:
                view, local, slot = self._space.resolve(inode)
                parent = InodeSpace.outer(slot, view.lookup(local, ".."))
                children = [(n, InodeSpace.outer(slot, c)) for n, c in view.readdir(local)]
                entries = [(".", inode), ("..", parent), *children]
        handle = next(self._handles)
        self._dirs[handle] = entries
        return handle

    @fuse_errors
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        entries = self._dirs[fh]
        with self._lock:
            for index in range(start_id, len(entries)):
                name, ino = entries[index]
                if ino == SNAPSHOTS_INO:
                    entry = self._snapshots_entry()
                else:
                    try:
                        view, local, _ = self._space.resolve(ino)
                    except FUSEError:  # a snapshot pruned since opendir
                        continue
                    node = view.get(local)
                    if node is None:  # removed since opendir
                        continue
                    entry = self._entry(ino, node)
                if not pyfuse3.readdir_reply(token, encode(name), entry, index + 1):
                    return
                if self._tree is not None and index >= 2 and ino < SNAPSHOT_BASE:
                    self._tree.pin(ino)  # "." and ".." are not lookups; snapshots need no pins

    @fuse_errors
    async def releasedir(self, fh: int) -> None:
        self._dirs.pop(fh, None)

    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        raise FUSEError(errno.ENOSYS)

    # -- extended attributes ---------------------------------------------------

    @fuse_errors
    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        tree = self._writable(inode)
        if name.startswith(b"system.posix_acl_"):
            # Without ACL support, refuse ACLs like tmpfs without CONFIG_TMPFS_POSIX_ACL:
            # stored as plain bytes they would not change the mode, and cp -a
            # (which then skips its chmod) would leave files 0600.
            raise FUSEError(errno.EOPNOTSUPP)
        with self._lock:
            tree.setxattr(inode, name, value)

    @fuse_errors
    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        with self._lock:
            if inode == SNAPSHOTS_INO:
                raise FUSEError(pyfuse3.ENOATTR)
            view, local, _ = self._space.resolve(inode)
            try:
                return view.getxattr(local, name)
            except OSError as exc:
                if exc.errno == errno.ENODATA:
                    raise FUSEError(pyfuse3.ENOATTR) from None
                raise

    @fuse_errors
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> Sequence[bytes]:
        with self._lock:
            if inode == SNAPSHOTS_INO:
                return []
            view, local, _ = self._space.resolve(inode)
            return view.listxattr(local)

    @fuse_errors
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        tree = self._writable(inode)
        with self._lock:
            try:
                tree.removexattr(inode, name)
            except OSError as exc:
                if exc.errno == errno.ENODATA:
                    raise FUSEError(pyfuse3.ENOATTR) from None
                raise
