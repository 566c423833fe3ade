"""pyfuse3 ``Operations`` over the tree: the kernel's front door.

Every handler is a plain function that does its tree work under its tree's
lock (``ServedTree.lock``); ``fuse_errors`` makes it the coroutine pyfuse3
awaits, so the trio loop never parks holding a lock. Errors are translated
in one place, there: an ``OSError`` from the tree becomes
``FUSEError(errno)``; anything else is a bug, logged with its traceback and
answered with EIO rather than aborting the mount.

Every entry reply counts as a kernel reference (``LookupCounts``); an inode
unlinked while referenced stays alive as an orphan until ``forget``.

One mount serves several trees (``ServedTree``): the workspace's live tree,
with its own inode numbers; every snapshot under the hidden ``/.snapshots``
(``SnapshotsDir``, read-only); every fork added under the hidden ``/.forks``
(``ForksDir``, writable workspaces of their own). Each tree other than the
live one has a range of inode numbers; every handler routes the inodes it
gets to their tree (``_route``) and works on that tree alone, under its lock.
A rename or link between two trees is EXDEV, as between two filesystems.

Every request is a round trip through the kernel (tens of microseconds), so
the handlers are shaped to keep the kernel from asking: each one is counted
(``stats``), and with the patched pyfuse3 the mount is open-free (``open`` and
``opendir`` answer ENOSYS once; see ``WorkspaceOperations``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import logging
import os
import stat as _stat
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

import pyfuse3
from pyfuse3 import FileHandleT, FUSEError, InodeT

from .._errors import NoSpaceError, NotFoundError
from ..fs import HIDDEN, SHOWN, AccessRules
from ..tree import (
    NAME_MAX,
    ROOT_INO,
    Cause,
    Directory,
    Tree,
    TreeView,
    current_cause,
    mount_request,
)
from ._attributes import (
    BLOCK_SIZE,
    DEFAULT_CACHE,
    CachePolicy,
    capacity,
    entry_attributes,
    missing_entry,
)
from ._causes import RequestCauses
from ._connection import Connection
from ._features import KILLPRIV_V2, OPEN_FREE, capability
from ._forks_dir import ForksDir
from ._listings import Listings
from ._privileges import FILE_CAPABILITIES, kill_privileges
from ._served import HIDDEN_INOS, HIDDEN_NAMES, ServedTree
from ._snapshots_dir import SnapshotLister, SnapshotsDir
from ._stats import RequestCounter, RequestStats
from ._trees import OTHER_TREES, ServedTrees

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

_now = time.perf_counter_ns

_CHANGING = frozenset(
    {"setattr", "mknod", "mkdir", "symlink", "link", "unlink", "rmdir", "rename", "create"}
    | {"write", "setxattr", "removexattr", "fallocate"}
)
"""The handlers whose requests may change the tree (``on_change`` follows them)."""


def fuse_errors(
    handler: Callable[Concatenate[WorkspaceOperations, P], R],
) -> Callable[Concatenate[WorkspaceOperations, P], Coroutine[Any, Any, R]]:
    """Make ``handler`` a pyfuse3 handler that lets only ``FUSEError`` out: the one
    adapter at the FUSE edge.

    It also counts the request (``WorkspaceOperations.stats``), so every
    handler must wear it. Handlers are plain functions (none awaits anything),
    so a request costs one coroutine, this one.
    """
    name = handler.__name__
    changing = name in _CHANGING

    @functools.wraps(handler)
    async def wrapper(self: WorkspaceOperations, /, *args: P.args, **kwargs: P.kwargs) -> R:
        started = _now()
        mount_request(started)  # long readers in this process make way (``tree._turns``)
        try:
            if changing and self._before_change is not None:
                self._before_change()  # a store that can take no more: refused, unchanged
            result = handler(self, *args, **kwargs)
            if changing and self._on_change is not None:
                self._on_change()  # the durability policy `always`: on disk before the reply
            return result
        except FUSEError:
            raise
        except OSError as exc:
            raise FUSEError(exc.errno or errno.EIO) from None
        except MemoryError:  # the process ran out below the budget: refuse, stay alive
            log.warning("out of memory in %s: is the budget too high?", name)
            raise FUSEError(errno.ENOSPC) from None
        except Exception:
            log.exception("bug in FUSE handler %s", name)
            raise FUSEError(errno.EIO) from None
        finally:
            self._requests.record(name, started)

    return wrapper


def _kills_privileges(fields: pyfuse3.SetattrFields) -> bool:
    """Whether a setattr must clear set-ID bits, once HANDLE_KILLPRIV_V2 left that to
    the mount.

    The kernel says so for a chown and for a truncate by a caller without
    CAP_FSETID (``kill_suidgid``). A setattr that changes nothing at all is either
    ``chown(f, -1, -1)``, which clears the bits on Linux, or the kernel removing a
    writer's privileges before a page-cache write: both clear them (save a root
    writer's whose file has capabilities, which the kernel removes first: a case
    that cannot be told from the others).
    """
    return bool(fields.kill_suidgid) or not (
        fields.update_mode
        or fields.update_uid
        or fields.update_gid
        or fields.update_size
        or fields.update_atime
        or fields.update_mtime
        or fields.update_ctime
    )


def decode(name: bytes) -> str:
    """A kernel name as the tree's str (non-UTF-8 bytes kept as surrogates)."""
    return name.decode("utf-8", "surrogateescape")


def encode(name: str) -> bytes:
    """A tree name as the kernel's bytes."""
    return name.encode("utf-8", "surrogateescape")


OPEN_PROBE = b".workspacefs-open-probe"
"""While the mount starts (``WorkspaceOperations.open_probe``), the root answers a
lookup of this name with an empty file of the mount's own, unless a real entry
has the name."""
_PROBE_INO = InodeT(HIDDEN_INOS + 2)  # among the hidden directories' numbers: never routed
_RESERVED = frozenset(name.encode() for name in HIDDEN_NAMES)


@dataclass(slots=True)
class _OpenFile:
    ino: InodeT
    append: bool
    direct: bool  # direct_io: the kernel leaves clearing set-ID bits on writes to us
    uid: int  # the opener's: whether its writes clear set-ID bits
    cause: Cause | None = field(default_factory=current_cause)  # its writes' (stock pyfuse3)


class WorkspaceOperations(pyfuse3.Operations):
    """The FUSE request handlers for one tree (live) or version (read-only), and
    the forks added to it.

    Args:
        view: The live ``Tree``, or a frozen version (always read-only).
        read_only: Refuse every write with EROFS (forks added later too).
        cache: How long the kernel may trust entries and attributes.
        snapshots: Lists the snapshots ``/.snapshots`` shows; None hides it.
        open_free: Let the kernel open files and directories without a request
            (open and opendir answer ENOSYS once; the kernel then caches pages
            and listings until invalidated). Needs the patched pyfuse3
            (``OPEN_FREE``); without it every open is a request.
        handle_killpriv: Clear set-ID bits and file capabilities on writes,
            truncates and chowns where the kernel asks (``HANDLE_KILLPRIV_V2``), so
            that it stops asking for ``security.capability`` before writes and for
            the attributes before chowns. Needs libfuse 3.18.3 and the patched
            pyfuse3 (``KILLPRIV_V2``); without it the kernel clears them itself.
        rules: The workspace's access rules (``AccessRules``): what a hidden rule
            covers is neither found nor listed, in the tree and its snapshots (the
            tree refuses what the rules refuse of a change itself).
    """

    supports_dot_lookup = True
    enable_writeback_cache = False
    enable_acl = False
    # Read by the patched pyfuse3 at init: write gets a view of libfuse's request
    # buffer, valid during the call, instead of a copy of the data. The tree copies
    # what it keeps into its chunks anyway (``tree._chunks``), so this spares one
    # copy of every byte written (a stock pyfuse3 ignores it and passes bytes).
    write_memoryview = True

    def __init__(
        self,
        view: TreeView,
        *,
        read_only: bool = False,
        cache: CachePolicy = DEFAULT_CACHE,
        snapshots: SnapshotLister | None = None,
        open_free: bool = False,
        handle_killpriv: bool = False,
        on_sync: Callable[[], None] | None = None,
        on_change: Callable[[], None] | None = None,
        before_change: Callable[[], None] | None = None,
        rules: AccessRules | None = None,
    ) -> None:
        super().__init__()
        self._on_sync = on_sync
        self._on_change = on_change
        self._before_change = before_change
        if open_free and not OPEN_FREE:
            raise ValueError("open_free needs the patched pyfuse3 (scripts/setup.sh builds it)")
        if handle_killpriv and not KILLPRIV_V2:
            raise ValueError(
                "handle_killpriv needs libfuse 3.18.3 and the patched pyfuse3 "
                "(scripts/setup.sh builds both)"
            )
        self._open_free = open_free
        self._handle_killpriv = handle_killpriv
        self._killpriv = False  # negotiated (init_connection): the kernel leaves set-ID bits to us
        self._connection: Connection | None = None
        # Read by the patched pyfuse3 at init: fh handlers then get the inode
        # too, since every open-free file has the file handle 0; write also gets
        # the kernel's word on set-ID bits.
        self.pass_inode_to_fh_handlers = open_free or handle_killpriv
        self._listings = Listings()
        self._view = view
        self._trees = ServedTrees(view, read_only=read_only, snapshots=snapshots, rules=rules)
        self._origin = self._trees.origin
        self._snapshots = self._trees.snapshots
        self._forks = self._trees.forks
        self._route = self._trees.route
        self._writable = self._trees.writable
        self._special_or_route = self._trees.route_any
        self._cache = cache
        self._causes = RequestCauses(self._origin.tree)  # forks follow its `attributing`
        self._handles: Callable[[], FileHandleT] = itertools.count(1).__next__
        self._files: dict[FileHandleT, _OpenFile] = {}
        self._dirs: dict[FileHandleT, list[tuple[str, InodeT]]] = {}
        self._requests = RequestCounter()
        self._probing = False
        keep = cache.keep_cache
        self._created_direct = pyfuse3.FileInfo(fh=0, keep_cache=keep, direct_io=True)
        self._created_cached = pyfuse3.FileInfo(fh=0, keep_cache=keep, direct_io=False)

    def stats(self) -> RequestStats:
        """The requests served so far, by type (callable from any thread)."""
        return self._requests.stats()

    def served(self) -> int:
        """How many requests were served so far (call in the FUSE thread)."""
        return self._requests.served()

    async def next_request(self) -> None:
        """Return once another request is served (await in the FUSE thread)."""
        await self._requests.next_request()

    @property
    def open_free(self) -> bool:
        """True if open and opendir leave opening to the kernel (see the constructor)."""
        return self._open_free

    @property
    def connection(self) -> Connection | None:
        """What the kernel and libfuse agreed on (None before INIT, or with a stock
        pyfuse3, which never shows the connection)."""
        return self._connection

    def init_connection(self, conn: Any) -> None:
        """Ask for what saves kernel requests (only a patched pyfuse3 calls this).

        ``conn`` is pyfuse3's ``ConnectionInfo``, valid during the call.
        """
        # readlink answers go to the page cache too; restores and API writes
        # invalidate a symlink's inode like any other.
        conn.want |= conn.capable & capability("CACHE_SYMLINKS")
        # libfuse's default, relied upon: a changed mtime drops cached pages.
        conn.want |= conn.capable & capability("AUTO_INVAL_DATA")
        # Lookups and readdirs of one directory need not wait for each other in
        # the kernel (they are served one by one here anyway, under the tree lock).
        conn.want |= conn.capable & capability("PARALLEL_DIROPS")
        # The first HANDLE_KILLPRIV would leave every write's set-ID bits to us with
        # no word on the writer (libfuse 3.14 asks for it by default, but never
        # passes it on to the kernel).
        conn.want &= ~capability("HANDLE_KILLPRIV")
        if self._handle_killpriv:
            # Set-ID bits are ours to clear, when the kernel says: no more
            # security.capability GETXATTR before page-cache writes, nor a GETATTR
            # before each chown (see _privileges).
            conn.want |= conn.capable & capability("HANDLE_KILLPRIV_V2")
        if self._open_free:
            # Without OPEN requests an atomic O_TRUNC would be dropped: the
            # kernel must send the truncation as a SETATTR of its own.
            conn.want &= ~capability("ATOMIC_O_TRUNC")
        # libfuse would serve requests from io_uring threads of its own
        # (FUSE_URING_ENABLE=1), which pyfuse3 never reads: keep /dev/fuse.
        conn.want &= ~capability("OVER_IO_URING")
        # Each request one read(2) of /dev/fuse. With SPLICE_READ libfuse splices
        # requests into a pipe it wants as large as a request can be (1 MiB and
        # a header: more than /proc/sys/fs/pipe-max-size allows), and libfuse
        # 3.18 then makes and drops a pipe for every request (pipe2, open and
        # read of pipe-max-size, two fcntl, three close) before it falls back to
        # read(2) anyway; pyfuse3 copies a write's data into bytes in any case.
        conn.want &= ~capability("SPLICE_READ")
        self._killpriv = bool(conn.want & conn.capable & capability("HANDLE_KILLPRIV_V2"))
        self._connection = Connection.of(conn)

    # -- forks -----------------------------------------------------------------

    def add_fork(
        self,
        name: str,
        view: TreeView,
        *,
        read_only: bool = False,
        show: bool = True,
        rules: AccessRules | None = None,
    ) -> ServedTree:
        """Serve ``view`` (a fork's live tree, or any tree) at ``/.forks/<name>/``,
        under the fork's access ``rules``.

        With ``show`` False it is served but not yet found by name (the caller
        then calls ``show_fork``, e.g. once it invalidates the fork's caches).

        Raises:
            AlreadyExistsError: A fork of that name is served, or this tree is.
            InvalidPathError: ``name`` is no valid file name.
        """
        return self._trees.add_fork(name, view, read_only=read_only, show=show, rules=rules)

    def show_fork(self, served: ServedTree) -> None:
        """Make a fork added with ``show=False`` visible."""
        self._forks.show(served)

    def remove_fork(self, name: str) -> ServedTree:
        """Hide fork ``name`` at once; its tree is released (``on_release``) when
        the kernel holds none of its inodes, which may be now.

        The caller then expires the kernel's entries of it (``held_entries``,
        and ``/.forks/<name>``; outside any handler), so that the kernel lets
        go of what it cached.

        Raises:
            NotFoundError: No fork of that name is mounted.
        """
        return self._trees.remove_fork(name)

    def snapshot_bases(self) -> list[int]:
        """The inode offset of every snapshot ``/.snapshots`` may have shown the kernel."""
        return self._snapshots.bases()

    def held_entries(self, served: ServedTree) -> list[tuple[InodeT, str]]:
        """(parent, name) of every entry of ``served`` the kernel may have cached."""
        return self._trees.held_entries(served)

    def forks(self) -> dict[str, ServedTree]:
        """The visible forks by name."""
        return {served.name: served for served in self._forks.served() if not served.hidden}

    # -- helpers ---------------------------------------------------------------

    def _attributes(self, ino: InodeT) -> pyfuse3.EntryAttributes:
        """The ``stat`` of inode ``ino`` (the caller holds its tree's lock).

        ``/.snapshots`` and ``/.forks`` take their owner from the workspace's
        root without its lock: a fork's handlers ask for ``/.forks`` under the
        fork's lock, and taking the workspace's inside it would order the two
        locks against ``fast_forward`` (workspace, then fork). A root changed
        meanwhile gives these synthetic, read-only directories the old owner
        or the new one, nothing worse.
        """
        if ino == SnapshotsDir.INO:
            return self._snapshots.attributes(self._view.node(ROOT_INO), self._cache)
        if ino == ForksDir.INO:
            return self._forks.attributes(self._view.node(ROOT_INO), self._cache)
        served, local = self._route(ino)
        return self._entry(served, local)

    def _entry(self, served: ServedTree, local: InodeT) -> pyfuse3.EntryAttributes:
        """The ``stat`` of ``served``'s inode ``local`` (the caller holds ``served.lock``)."""
        if not served.base:  # the live tree, the hot path: its numbers are the kernel's
            return entry_attributes(local, served.view.node(local), self._cache)
        entry = entry_attributes(served.ino(local), served.view.node(local), self._cache)
        if served.hidden:
            # A removed fork: the kernel drops an expired entry on its last use
            # (FUSE's d_delete), then forgets the inode, and the fork can go.
            entry.entry_timeout = 0
        return entry

    def _reply(self, served: ServedTree, local: InodeT) -> pyfuse3.EntryAttributes:
        """An entry reply for ``served``'s inode ``local`` (the kernel now holds
        one more reference to it); the caller holds ``served.lock``."""
        entry = self._entry(served, local)
        lookups = served.lookups
        if lookups is not None:
            lookups.add(local)
        return entry

    def _parent(self, served: ServedTree, local: InodeT) -> InodeT:
        """The kernel's number of ``..`` of ``served``'s directory ``local``."""
        if local == ROOT_INO:
            return served.parent
        return served.ino(served.view.lookup(local, ".."))

    def _owner(
        self, served: ServedTree, parent: InodeT, ctx: pyfuse3.RequestContext, mode: int
    ) -> tuple[int, int, int]:
        """(mode, uid, gid) of a new node: umask applied, setgid directories inherited."""
        parent_node = served.view.node(parent)
        gid = ctx.gid
        if parent_node.mode & _stat.S_ISGID:
            gid = parent_node.gid
            if _stat.S_ISDIR(mode):
                mode |= _stat.S_ISGID
        return mode & ~ctx.umask, ctx.uid, gid

    @staticmethod
    def _check_new_name(served: ServedTree, parent: InodeT, name: bytes) -> None:
        """Refuse (EPERM) a new root entry named ``.snapshots`` or ``.forks``; the
        caller holds ``served.lock``.

        A container bound to the workspace has those two masked by a mount of its
        own over the kernel's entry (docs/sandbox.md). A real entry appearing at
        the root would change what that entry is, and the kernel detaches what is
        mounted on an entry it drops: the hidden directory would come back
        unmasked when the real one went. So no root gets one through the mount: a
        fork's (which serves neither, so that a try's container could otherwise
        make one for an accept to bring to the workspace) as well as the
        workspace's. The API and imports, the owner's doors, still may.
        """
        if (
            parent == ROOT_INO
            and name in _RESERVED
            and served.view.find(ROOT_INO, decode(name)) is None
        ):
            raise FUSEError(errno.EPERM)

    # -- lookups and attributes ------------------------------------------------

    @fuse_errors
    def lookup(
        self, parent_inode: InodeT, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        if len(name) > NAME_MAX:
            raise FUSEError(errno.ENAMETOOLONG)
        if parent_inode == SnapshotsDir.INO:
            return self._snapshots.lookup(decode(name), self._cache)
        if parent_inode == ForksDir.INO:
            return self._lookup_fork(decode(name))
        served, local = self._route(parent_inode)
        with served.lock:
            if name == b".." and local == ROOT_INO and served.parent != served.ino(ROOT_INO):
                return self._attributes(served.parent)  # a fork's: /.forks, never held
            found = served.view.find(local, decode(name))
            if found is not None:
                rules = served.rules
                if rules is None or not rules.hides:
                    return self._reply(served, found)
                ruled = self._ruled_lookup(served, local, decode(name), found, ctx)
                if ruled is not None:
                    return ruled
            if served is self._origin:
                if self._snapshots.shown_as(parent_inode, name):
                    return self._attributes(SnapshotsDir.INO)
                if ForksDir.shown_as(parent_inode, name):
                    return self._attributes(ForksDir.INO)
                if self._probing and local == ROOT_INO and name == OPEN_PROBE:
                    return self._probe_entry()
            # A negative entry the kernel may cache: tools probe for missing
            # files constantly (git, compilers, shells). API creates and
            # restores invalidate it like any other entry.
            return missing_entry(self._cache.entry_timeout)

    def _ruled_lookup(
        self, served: ServedTree, local: InodeT, name: str, found: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes | None:
        """The reply to a lookup that found ``name`` while hidden rules are in force:
        the entry, the caller's own answer, or None if it is hidden from everybody
        (then it is missing like any other name, and cached so)."""
        rules = served.rules
        assert rules is not None
        seen = rules.visibility(served.view, local, name)
        if seen == SHOWN:
            return self._reply(served, InodeT(found))
        if seen == HIDDEN:
            return None
        # Hidden from some tools' processes only: whatever this caller is told, the
        # kernel must not cache for the next one.
        self._causes.attribute(ctx)
        if rules.hidden(served.view, local, name):
            return missing_entry(0)
        entry = self._reply(served, InodeT(found))
        entry.entry_timeout = 0
        return entry

    @contextlib.contextmanager
    def open_probe(self) -> Iterator[str]:
        """While the block runs, ``/<OPEN_PROBE>`` (the name it yields) is a file to open.

        The kernel stops sending OPEN and RELEASE requests only after it saw an
        OPEN answered with ENOSYS, and until then it sends a RELEASE for every
        file created too: a fresh mount that extracts an archive before it
        reads anything would pay one more request per file. Opening this file
        once teaches the kernel at the start, whatever the tree holds. The
        entry is never cached (timeout 0) and never listed.
        """
        self._probing = True
        try:
            yield os.fsdecode(OPEN_PROBE)
        finally:
            self._probing = False

    def _probe_entry(self) -> pyfuse3.EntryAttributes:
        entry = pyfuse3.EntryAttributes()
        entry.st_ino = _PROBE_INO
        entry.entry_timeout = 0
        entry.attr_timeout = self._cache.attr_timeout  # else the open asks for them again
        entry.st_mode = _stat.S_IFREG | 0o444
        root = self._view.node(ROOT_INO)
        entry.st_uid, entry.st_gid = root.uid, root.gid
        return entry

    def _lookup_fork(self, name: str) -> pyfuse3.EntryAttributes:
        served = self._forks.find(name)
        if served is None:
            return missing_entry(0)  # a fork added later must show up at once
        with served.lock:
            # Cached like any entry: removing the fork invalidates it.
            return self._reply(served, InodeT(ROOT_INO))

    @fuse_errors
    def forget(self, inode_list: Sequence[tuple[InodeT, int]]) -> None:
        try:
            self._trees.forget(inode_list)
        except Exception:  # forget must never raise
            log.exception("forget failed")

    def forget_all(self) -> None:
        """The kernel session has ended: it holds no inode any more."""
        self._trees.forget_all()

    @fuse_errors
    def getattr(self, inode: InodeT, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        if inode < OTHER_TREES:  # the live tree: the most frequent request of all
            with self._origin.lock:
                return entry_attributes(inode, self._view.node(inode), self._cache)
        if inode in (SnapshotsDir.INO, ForksDir.INO):
            with self._origin.lock:
                return self._attributes(inode)
        served, local = self._route(inode)
        with served.lock:
            return self._entry(served, local)

    @fuse_errors
    def setattr(
        self,
        inode: InodeT,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: FileHandleT | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        self._causes.attribute(ctx)
        served, tree, (local,) = self._writable(inode)
        with served.lock:
            tree.setattr(
                local,
                mode=attr.st_mode if fields.update_mode else None,
                uid=attr.st_uid if fields.update_uid else None,
                gid=attr.st_gid if fields.update_gid else None,
                size=attr.st_size if fields.update_size else None,
                atime_ns=attr.st_atime_ns if fields.update_atime else None,
                mtime_ns=attr.st_mtime_ns if fields.update_mtime else None,
                ctime_ns=attr.st_ctime_ns if fields.update_ctime else None,
            )
            if self._killpriv and _kills_privileges(fields):
                self._drop_privileges(tree, local, kill=True)  # the reply carries the mode
            return self._entry(served, local)

    @fuse_errors
    def readlink(self, inode: InodeT, ctx: pyfuse3.RequestContext) -> bytes:
        served, local = self._route(inode)
        with served.lock:
            return encode(served.view.readlink(local))

    @fuse_errors
    def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        # The workspace's figures; its forks draw on the same memory budget.
        with self._origin.lock:
            size, free = capacity(self._view)
            files = self._view.file_count if isinstance(self._view, Tree) else 0
        blocks = size // BLOCK_SIZE
        free = free // BLOCK_SIZE
        data = pyfuse3.StatvfsData()
        data.f_bsize = data.f_frsize = BLOCK_SIZE
        data.f_blocks = blocks
        data.f_bfree = data.f_bavail = free
        data.f_files = 1 << 32
        data.f_ffree = data.f_favail = (1 << 32) - files
        data.f_namemax = NAME_MAX
        return data

    @fuse_errors
    def access(self, inode: InodeT, mode: int, ctx: pyfuse3.RequestContext) -> bool:
        # Only called without default_permissions: then every access is allowed.
        served, _ = self._special_or_route(inode)
        with served.lock:
            self._attributes(inode)  # ENOENT for an inode that is gone
        return True

    # -- creating and removing -------------------------------------------------

    @fuse_errors
    def mknod(
        self,
        parent_inode: InodeT,
        name: bytes,
        mode: int,
        rdev: int,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        self._causes.attribute(ctx)
        served, tree, (parent,) = self._writable(parent_inode)
        with served.lock:
            self._check_new_name(served, parent, name)
            mode, uid, gid = self._owner(served, parent, ctx, mode)
            return self._reply(served, tree.mknod(parent, decode(name), mode, rdev, uid, gid))

    @fuse_errors
    def mkdir(
        self, parent_inode: InodeT, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        self._causes.attribute(ctx)
        served, tree, (parent,) = self._writable(parent_inode)
        with served.lock:
            self._check_new_name(served, parent, name)
            mode, uid, gid = self._owner(served, parent, ctx, mode | _stat.S_IFDIR)
            return self._reply(served, tree.mkdir(parent, decode(name), mode, uid, gid))

    @fuse_errors
    def symlink(
        self, parent_inode: InodeT, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        self._causes.attribute(ctx)
        served, tree, (parent,) = self._writable(parent_inode)
        with served.lock:
            self._check_new_name(served, parent, name)
            _, uid, gid = self._owner(served, parent, ctx, 0)
            ino = tree.symlink(parent, decode(name), decode(target), uid, gid)
            return self._reply(served, ino)

    @fuse_errors
    def link(
        self,
        inode: InodeT,
        new_parent_inode: InodeT,
        new_name: bytes,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        self._causes.attribute(ctx)
        served, tree, (local, parent) = self._writable(inode, new_parent_inode)
        with served.lock:
            self._check_new_name(served, parent, new_name)
            tree.link(local, parent, decode(new_name))
            return self._reply(served, local)

    @fuse_errors
    def unlink(self, parent_inode: InodeT, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        self._causes.attribute(ctx)
        served, tree, (parent,) = self._writable(parent_inode)
        with served.lock:
            tree.unlink(parent, decode(name))

    @fuse_errors
    def rmdir(self, parent_inode: InodeT, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        self._causes.attribute(ctx)
        served, tree, (parent,) = self._writable(parent_inode)
        with served.lock:
            tree.rmdir(parent, decode(name))

    @fuse_errors
    def rename(
        self,
        parent_inode_old: InodeT,
        name_old: bytes,
        parent_inode_new: InodeT,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        self._causes.attribute(ctx)
        served, tree, (old, new) = self._writable(parent_inode_old, parent_inode_new)
        with served.lock:
            self._check_new_name(served, new, name_new)
            tree.rename(old, decode(name_old), new, decode(name_new), flags)

    # -- files -----------------------------------------------------------------

    def _open(self, ino: InodeT, flags: int, uid: int) -> tuple[pyfuse3.FileInfo, bool]:
        """Open ``ino``: (the reply, True if the kernel's attributes of it are now stale).

        The caller holds the lock of ``ino``'s tree.
        """
        served, local = self._route(ino)
        node = served.view.node(local)
        if isinstance(node, Directory):
            raise FUSEError(errno.EISDIR)
        stale = False
        if flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC:
            tree = served.writable()
            tree.check(local, "open")  # an access rule refuses the open, as a mode would
            if flags & os.O_TRUNC:  # libfuse asks for atomic O_TRUNC: the kernel leaves it to us
                if node.size:
                    tree.truncate(local, 0)
                stale = self._drop_privileges(tree, local, kill=uid != 0)
        # Write-only opens bypass the page cache: each write(2) is one request,
        # where the page cache splits unaligned ones and asks for
        # security.capability before each. Nothing reads through such a handle,
        # so nothing is lost; the kernel then leaves set-ID bits to us.
        direct = flags & os.O_ACCMODE == os.O_WRONLY
        handle = self._handles()
        self._files[handle] = _OpenFile(ino, bool(flags & os.O_APPEND), direct, uid)
        info = pyfuse3.FileInfo(fh=handle, keep_cache=self._cache.keep_cache, direct_io=direct)
        return info, stale

    def _created(self, ino: InodeT, flags: int, uid: int) -> pyfuse3.FileInfo:
        """The open half of a create reply."""
        if not self._open_free:
            info, _ = self._open(ino, flags & ~os.O_TRUNC, uid)  # new: nothing to cut
            return info
        # Open-free, the kernel sends no RELEASE for created files either: the
        # handle 0 keeps no state here, and writes come with the inode, the
        # flags and the writer (see _write_unopened). So every reply is one of
        # two, made once (pyfuse3 only reads them).
        return self._created_direct if flags & os.O_ACCMODE == os.O_WRONLY else self._created_cached

    def _drop_privileges(self, tree: Tree, local: InodeT, *, kill: bool) -> bool:
        """Clear what a write, truncate or chown clears: the set-ID bits if ``kill``,
        the file's capabilities always. True if the kernel's cached mode is now stale.

        ``kill`` is the kernel's word where it gives one (HANDLE_KILLPRIV_V2), else
        whether the writer is not root (who stands for CAP_FSETID).
        """
        node = tree.node(local)
        if node.xattrs and FILE_CAPABILITIES in node.xattrs:
            tree.removexattr(local, FILE_CAPABILITIES)
        if not kill:
            return False
        mode = kill_privileges(node.mode)
        if mode == node.mode:
            return False
        tree.setattr(local, mode=mode)
        return True

    def _attributes_changed(self, ino: InodeT) -> None:
        """Tell the kernel its cached attributes of ``ino`` are stale (a handler changed
        what the kernel did not ask for, such as set-ID bits a write cleared).

        Called by the handler after the tree lock is released. Unlike an entry
        invalidation, dropping attributes waits for no request in flight, so it
        cannot deadlock with the one being answered.
        """
        with contextlib.suppress(OSError):  # the kernel had already forgotten the inode
            pyfuse3.invalidate_inode(ino, attr_only=True)

    @fuse_errors
    def open(self, inode: InodeT, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        self._causes.attribute(ctx)
        if self._open_free:
            # The kernel takes ENOSYS as "opens need no request", from this one
            # on: no OPEN or RELEASE again, pages kept across opens (every
            # change the kernel did not make is invalidated explicitly), and
            # reads and writes arrive with the file handle 0 and the inode.
            raise FUSEError(errno.ENOSYS)
        served, _ = self._route(inode)
        with served.lock:
            info, stale = self._open(inode, flags, ctx.uid)
        if stale:
            self._attributes_changed(inode)
        return info

    @fuse_errors
    def create(
        self,
        parent_inode: InodeT,
        name: bytes,
        mode: int,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        self._causes.attribute(ctx)
        served, tree, (parent,) = self._writable(parent_inode)
        with served.lock:
            self._check_new_name(served, parent, name)
            mode, uid, gid = self._owner(served, parent, ctx, mode)
            ino = tree.create(parent, decode(name), mode, uid, gid)
            entry = self._reply(served, ino)
            return self._created(served.ino(ino), flags, ctx.uid), entry

    @fuse_errors
    def read(self, fh: FileHandleT, off: int, size: int, inode: InodeT = 0) -> bytes:
        served, local = self._route(inode or self._files[fh].ino)
        with served.lock:
            found = served.view.prepare_read(local, off, size)
        if isinstance(found, bytes):
            return found
        # Data not in memory (evicted, or never loaded) is read from the store without
        # the tree lock, so API calls in other threads go on meanwhile.
        try:
            return found()
        except NoSpaceError:
            # Room for it may need the live tree's dirty data written back, which only
            # a holder of the tree lock may do (``Residency``): once more, holding it.
            with served.lock:
                return served.view.read(local, off, size)

    @fuse_errors
    def write(
        self,
        fh: FileHandleT,
        off: int,
        buf: bytes | memoryview,
        inode: InodeT = 0,
        flags: int = 0,
        ctx: pyfuse3.RequestContext | None = None,
        kill_suidgid: bool = False,
    ) -> int:
        if ctx is not None:  # the patched pyfuse3 names the writer of every write
            self._causes.attribute(ctx)
            if not fh:  # open-free: no handle
                kill = kill_suidgid if self._killpriv else ctx.uid != 0
                return self._write_unopened(inode, off, buf, flags, kill)
        handle = self._files[fh]
        if ctx is None:  # stock pyfuse3: the writer is the one who opened the file
            self._causes.resume(handle.cause)
        if not self._killpriv:
            # Page-cache writes had their bits cleared by the kernel; direct_io
            # writes did not: the opener's uid decides.
            kill_suidgid = handle.direct and handle.uid != 0
        served, tree, (local,) = self._writable(handle.ino)
        with served.lock:
            if handle.append:  # the tree, not the kernel's cached size, says where EOF is
                off = tree.node(local).size
            stale = self._drop_privileges(tree, local, kill=kill_suidgid)
            written = tree.write(local, off, buf)
        if stale:
            self._attributes_changed(handle.ino)
        return written

    def _write_unopened(
        self, ino: InodeT, off: int, buf: bytes | memoryview, flags: int, kill: bool
    ) -> int:
        """A write to a file opened (or created) without a handle: open-free mode.

        ``kill``: whether it clears set-ID bits (``_drop_privileges``).
        """
        served, tree, (local,) = self._writable(ino)
        with served.lock:
            if flags & os.O_APPEND:
                # The kernel appends at its cached size, which an API write may
                # have made stale. Its pages then hold this write at the wrong
                # offset, but after every write the kernel marks size and times
                # stale: the next read refetches them, sees the new mtime and
                # drops those pages (auto_inval_data, see init_connection).
                off = tree.node(local).size
            # A write-only created file is direct_io, and the kernel leaves its
            # set-ID bits to us; through the page cache the kernel has already
            # cleared them (by the same rule, unless HANDLE_KILLPRIV_V2 left that
            # to us too), so this is then a no-op.
            stale = self._drop_privileges(tree, local, kill=kill)
            written = tree.write(local, off, buf)
        if stale:
            self._attributes_changed(ino)
        return written

    # Nothing to flush: the tree is the storage. ENOSYS tells the kernel so once, and
    # it stops sending these requests (one round trip fewer per close). fsync is the
    # same unless the workspace is durable: then it is a durability point, answered
    # once everything written before it is on disk (``on_sync``).

    @fuse_errors
    def flush(self, fh: FileHandleT, inode: InodeT = 0) -> None:
        raise FUSEError(errno.ENOSYS)

    @fuse_errors
    def fsync(self, fh: FileHandleT, datasync: bool, inode: InodeT = 0) -> None:
        if self._on_sync is None:
            raise FUSEError(errno.ENOSYS)
        self._on_sync()

    @fuse_errors
    def release(self, fh: FileHandleT, inode: InodeT = 0) -> None:
        self._files.pop(fh, None)

    # -- directories -----------------------------------------------------------

    @fuse_errors
    def opendir(self, inode: InodeT, ctx: pyfuse3.RequestContext) -> FileHandleT:
        if self._open_free:
            # As for open; the kernel then also caches listings (FOPEN_CACHE_DIR)
            # until the directory changes or is invalidated, and readdir
            # offsets come from names (``_listings``), not from a frozen copy.
            raise FUSEError(errno.ENOSYS)
        # A frozen copy of the entries: offsets stay stable while the
        # directory changes, so no entry is skipped or repeated.
        if inode == SnapshotsDir.INO:
            entries = self._snapshots.listing()
        elif inode == ForksDir.INO:
            entries = self._forks.listing()
        else:
            served, local = self._route(inode)
            with served.lock:
                children = [(name, served.ino(ino)) for name, ino in served.view.readdir(local)]
                if served.rules is not None and served.rules.hides:
                    # A listing never reaches a tool's processes with what the tool may
                    # not see: the request that reads it names no caller.
                    children = [
                        item for item in children if not served.hides(local, item[0], anyone=True)
                    ]
                parent = self._parent(served, local)
            entries = [(".", inode), ("..", parent), *children]
        handle = self._handles()
        self._dirs[handle] = entries
        return handle

    @fuse_errors
    def readdir(
        self, fh: FileHandleT, start_id: int, token: pyfuse3.ReaddirToken, inode: InodeT = 0
    ) -> None:
        if not fh:
            self._readdir_by_name(inode, start_id, token)
            return
        entries = self._dirs[fh]
        directory = entries[0][1]
        if directory in (SnapshotsDir.INO, ForksDir.INO):
            for index in range(start_id, len(entries)):
                name, ino = entries[index]
                if not self._reply_entry(name, ino, index + 1, token, hold=index >= 2):
                    return
            return
        served, _ = self._route(directory)
        with served.lock:
            for index in range(start_id, len(entries)):
                name, ino = entries[index]
                try:
                    entry = self._attributes(ino)
                except (NotFoundError, FUSEError):  # gone since opendir
                    continue
                if not pyfuse3.readdir_reply(token, encode(name), entry, index + 1):
                    return
                if index >= 2:  # "." and ".." are not lookups
                    served.hold(ino - served.base)

    def _reply_entry(
        self, name: str, ino: InodeT, offset: int, token: pyfuse3.ReaddirToken, *, hold: bool
    ) -> bool:
        """Give the kernel one entry of a hidden directory (each may be another
        tree's root, so each under its own tree's lock); False if it has no room."""
        try:
            served, local = self._special_or_route(ino)
        except FUSEError:  # a snapshot pruned or a fork released since
            return True
        with served.lock:
            try:
                entry = self._attributes(ino)
            except (NotFoundError, FUSEError):
                return True
            if not pyfuse3.readdir_reply(token, encode(name), entry, offset):
                return False
            if hold:
                served.hold(local)
        return True

    def _readdir_by_name(self, ino: InodeT, start: int, token: pyfuse3.ReaddirToken) -> None:
        """List directory ``ino`` from offset ``start`` in name-hash order (``_listings``)."""
        if ino in (SnapshotsDir.INO, ForksDir.INO):
            listing = (self._snapshots if ino == SnapshotsDir.INO else self._forks).listing()
            for offset, name, dot in ((1, ".", ino), (2, "..", ROOT_INO)):
                if start < offset and not self._reply_entry(name, dot, offset, token, hold=False):
                    return
            special = dict(listing[2:])
            offsets, names, inodes, first = self._listings.after(ino, special, start)
            for index in range(first, len(offsets)):
                child = InodeT(inodes[index])
                if not self._reply_entry(names[index], child, offsets[index], token, hold=True):
                    return
            return
        served, local = self._route(ino)
        with served.lock:
            parent = self._parent(served, local)
            entries = served.view.directory(local).entries
            for offset, name, dot in ((1, ".", ino), (2, "..", parent)):
                if start < offset and not pyfuse3.readdir_reply(
                    token, encode(name), self._attributes(dot), offset
                ):
                    return
            offsets, names, inodes, first = self._listings.after(ino, entries, start)
            hides = served.rules is not None and served.rules.hides
            for index in range(first, len(offsets)):
                if hides and served.hides(local, names[index], anyone=True):  # see opendir
                    continue
                entry = self._entry(served, InodeT(inodes[index]))
                if not pyfuse3.readdir_reply(token, encode(names[index]), entry, offsets[index]):
                    return
                served.hold(inodes[index])

    @fuse_errors
    def releasedir(self, fh: FileHandleT, inode: InodeT = 0) -> None:
        self._dirs.pop(fh, None)

    @fuse_errors
    def fsyncdir(self, fh: FileHandleT, datasync: bool, inode: InodeT = 0) -> None:
        if self._on_sync is None:
            raise FUSEError(errno.ENOSYS)
        self._on_sync()

    # -- extended attributes ---------------------------------------------------

    @fuse_errors
    def setxattr(
        self, inode: InodeT, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        self._causes.attribute(ctx)
        served, tree, (local,) = self._writable(inode)
        if name.startswith(b"system.posix_acl_"):
            # Without ACL support, refuse ACLs like tmpfs without CONFIG_TMPFS_POSIX_ACL:
            # stored as plain bytes they would not change the mode, and cp -a
            # (which then skips its chmod) would leave files 0600.
            raise FUSEError(errno.EOPNOTSUPP)
        with served.lock:
            tree.setxattr(local, name, value)

    @fuse_errors
    def getxattr(self, inode: InodeT, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        if inode in (SnapshotsDir.INO, ForksDir.INO):
            raise FUSEError(pyfuse3.ENOATTR)
        served, local = self._route(inode)
        with served.lock:
            # The kernel asks for security.capability before every write and
            # chown it sends through the page cache, nearly always in vain:
            # answer a missing attribute without building the tree's error.
            xattrs = served.view.node(local).xattrs
            if not xattrs or name not in xattrs:
                raise FUSEError(pyfuse3.ENOATTR)
            return xattrs[name]

    @fuse_errors
    def listxattr(self, inode: InodeT, ctx: pyfuse3.RequestContext) -> Sequence[bytes]:
        if inode in (SnapshotsDir.INO, ForksDir.INO):
            return []
        served, local = self._route(inode)
        with served.lock:
            return served.view.listxattr(local)

    @fuse_errors
    def removexattr(self, inode: InodeT, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        self._causes.attribute(ctx)
        served, tree, (local,) = self._writable(inode)
        with served.lock:
            tree.removexattr(local, name)

    # -- fallocate -------------------------------------------------------------
    # Only the patched pyfuse3 calls it (``_features.FALLOCATE``); a stock one
    # leaves libfuse to answer ENOSYS, and the kernel then EOPNOTSUPP.

    @fuse_errors
    def fallocate(
        self, inode: InodeT, mode: int, offset: int, length: int, fh: FileHandleT
    ) -> None:
        self._causes.attribute(None)  # pyfuse3 passes this request no context
        served, tree, (local,) = self._writable(inode)
        with served.lock:
            tree.fallocate(local, mode, offset, length)
