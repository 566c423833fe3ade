"""The live tree: inode-based writes, O(1) snapshots and restores.

Copy-on-write by epoch ownership: every table page and node records the
epoch that made it. ``snapshot()`` freezes the current table by starting a
new epoch, which costs O(1), and returns it as a ``Version`` (``_version``);
afterwards the first write to a page, node or chunk copies just that object.
``restore(v)`` adopts ``v``'s table in a new epoch, also O(1). The set of
inodes touched in each epoch is kept (see ``_lineage``), so diffs and cache
invalidation cost O(changes), and so is who made each change (see
``_causes``), so attribution costs O(changes) too.

The tree does no locking of its own: ``lock`` is for callers (the Python API
and the FUSE thread) to hold around each operation or group of operations.
Every mutation records what it touched; releasing the lock publishes that
to subscribers (see ``_journal``).
"""

from __future__ import annotations

import itertools
import stat as _stat
import time
from collections.abc import Callable, Iterable, Set
from typing import Protocol

from .._errors import (
    AlreadyExistsError,
    BusyError,
    DirectoryNotEmptyError,
    InvalidArgumentError,
    InvalidPathError,
    IsADirectoryFsError,
    NameTooLongError,
    NoAttributeError,
    NotADirectoryFsError,
    NotFoundError,
    NotPermittedError,
    NotSupportedError,
)
from ._budget import MemoryBudget
from ._causes import CURRENT, Cause
from ._collector import collector_paused
from ._diff import changed_entries
from ._guard import Guard, Pending
from ._journal import Journal, TreeLock
from ._lineage import MAX_CAUSES, Lineage, changes_between, diverged
from ._nodes import Content, Directory, File, Node, Special, Symlink
from ._registry import WeakRegistry
from ._table import Table, nodes, put
from ._version import Version
from ._view import ROOT_INO, TreeView

NAME_MAX = 255
"""Longest name in bytes (POSIX NAME_MAX), as in every Linux filesystem."""
PATH_MAX = 4096
"""Longest symlink target in bytes (POSIX PATH_MAX)."""

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
XATTR_CREATE = 1
XATTR_REPLACE = 2
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_ZERO_RANGE = 0x10

_tree_ids = itertools.count(1)


class Unlisted(Protocol):
    """The entries of a directory not listed yet: directories listed when first needed,
    so that a large tree serves before it is all built.

    A tree loaded from a repository of hundreds of thousands of files takes seconds to
    build (a node per entry, each checked), while the first thing asked of it is one
    directory. So a loader may leave directories *unlisted* (``Tree.defer_listing``):
    the directory node exists, with its attributes, and its entries are made the first
    time anything reaches it -- a lookup, a listing, a path through it -- by the
    ``Unlisted`` source it was given, under the tree lock, in whichever thread asked.
    Meanwhile a loader lists the rest in the background (``Tree.list_next``, oldest
    first: breadth first when each listing defers its subdirectories).

    What must see the whole tree lists the rest first (``Tree.list_all``): every write
    (so that nothing the loader makes can meet a change, and the state as loaded can be
    frozen whole at the end), and every freeze -- a snapshot, a fork, a journal's
    frozen state, a walk of a frozen copy, the change feed's -- since a frozen version
    never changes and so could never be listed later. Listing is not a change anyone
    made: it is not attributed to a cause, not published to the lock's subscribers
    and observers (the kernel was never shown the entries, so it has nothing to
    forget; the change feed has nothing to tell), and not asked of access rules (their
    counts start again once the tree is whole); but it is in the change sets that
    snapshots and journals use, as a load's building always was.

    A source checks what it lists before it makes a node, so a listing that fails
    (damaged or hostile data) changes nothing and is tried again on the next access,
    failing the same way with the same error.
    """

    def list(self, tree: Tree, ino: int) -> None:
        """Make the entries of directory ``ino`` in ``tree`` (the tree's lock held);
        raise, having made nothing, if they cannot be made."""
        ...


def validate_name(name: str) -> None:
    """Refuse names no POSIX directory can hold."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise InvalidPathError(f"invalid file name {name!r}", name)
    if len(name) > NAME_MAX // 4 and len(name.encode("utf-8", "surrogateescape")) > NAME_MAX:
        raise NameTooLongError(f"name longer than {NAME_MAX} bytes", name)


class Tree(TreeView):
    """The live, writable tree. Hold ``lock`` around every call.

    Args:
        uid: Owner of the root directory.
        gid: Group of the root directory.
        mode: Permission bits of the root directory (0700: a workspace starts as
            private as ``mkdtemp`` makes a directory; a hydrated one takes its source's).
        budget: Counts the memory the tree's file data holds (its versions'
            too) and refuses writes past its limit with ENOSPC; default: a
            budget without a limit, which only counts.
    """

    __slots__ = (
        "__weakref__",  # a fork's access rules refer to its origin's tree without keeping it
        "_causes",
        "_changes",
        "_epoch",
        "_epochs",
        "_head",
        "_held",
        "_journal",
        "_listing",
        "_next_ino",
        "_on_listed",
        "_orphans",
        "_unjournalled",
        "_unlisted",
        "_versions",
        "attributing",
        "blame_full_commands",
        "budget",
        "file_count",
        "guard",
        "id",
        "lock",
        "total_bytes",
    )

    def __init__(
        self,
        *,
        uid: int = 0,
        gid: int = 0,
        mode: int = 0o700,
        budget: MemoryBudget | None = None,
    ) -> None:
        # Epoch numbers come from one counter per family of forks (see ``fork``).
        epochs = itertools.count(1)
        epoch = next(epochs)
        root = Directory(epoch, mode, uid, gid, time.time_ns())
        self._init(
            epochs,
            epoch,
            put(Table(epoch, []), ROOT_INO, root, epoch),
            versions=WeakRegistry(),
            budget=budget if budget is not None else MemoryBudget(),
            head=Lineage(None, frozenset()),
            changes={ROOT_INO},
            next_ino=ROOT_INO + 1,
            attributing=True,
            blame_full_commands=False,
            file_count=0,
            total_bytes=0,
        )

    def _init(
        self,
        epochs: itertools.count[int],
        epoch: int,
        table: Table,
        *,
        versions: WeakRegistry[Version],
        budget: MemoryBudget,
        head: Lineage,
        changes: set[int],
        next_ino: int,
        attributing: bool,
        blame_full_commands: bool,
        file_count: int,
        total_bytes: int,
    ) -> None:
        # The one place every field is set: ``__init__`` and ``fork`` both come here,
        # so a new field cannot be forgotten by one of them.
        super().__init__(table)
        self._epochs = epochs
        self._epoch = epoch
        # Every version of the family still alive, wherever it is held (space accounting).
        self._versions = versions
        self.budget = budget
        self.id = next(_tree_ids)
        self._journal = Journal()
        self.lock = TreeLock(self._take_journal)
        self._next_ino = next_ino
        self._orphans: dict[int, Node] = {}
        self._held: set[int] = set()
        self._changes = changes
        # Inodes changed since a journal last froze the tree (None: no journal).
        self._unjournalled: set[int] | None = None
        self._causes: dict[int, Cause | tuple[Cause, ...]] = {}
        self._head = head
        self.attributing = attributing
        """Record the cause in effect (``current_cause``) with every change; off,
        changes are recorded without one (and the mount resolves no processes)."""
        self.blame_full_commands = blame_full_commands
        """Record causes' command lines and labels as they are; off (the default),
        as ``Cause.redacted`` masks their secrets, so history never holds them."""
        self.file_count = file_count
        self.total_bytes = total_bytes
        self.guard: Guard | None = None
        """The access rules asked before every change (``_guard``); None: no rules in
        force, which is what a tree costs without them (one attribute test a change).
        Set by the ``fs`` layer's ``AccessRules``, under the lock."""
        # Directories whose entries are made when first needed (``Unlisted``), oldest
        # first; True while one is being listed; what to call once none is left.
        self._unlisted: dict[int, Unlisted] = {}
        self._listing = False
        self._on_listed: Callable[[], None] | None = None

    # -- directories listed when first needed (see ``Unlisted``) ----------------

    def defer_listing(self, ino: int, source: Unlisted, subdirectories: int = 0) -> None:
        """Leave directory ``ino``, which has no entries yet, unlisted: ``source`` makes
        its entries the first time anything reaches it. ``subdirectories`` is how many
        of them are directories: its link count says so meanwhile (``find`` reads it).
        Hold the lock."""
        directory = self._mutable_dir(ino)
        if directory.entries:
            raise InvalidArgumentError("a directory with entries is listed", self.describe(ino))
        directory.nlink = 2 + subdirectories
        self._unlisted[ino] = source

    def when_listed(self, done: Callable[[], None]) -> None:
        """Call ``done`` (holding the lock, in the thread that listed the last one) once
        no directory is left unlisted: a loader freezes the state it loaded there."""
        self._on_listed = done

    @property
    def unlisted(self) -> int:
        """How many directories are left unlisted (0 once the tree is whole)."""
        return len(self._unlisted)

    def list_next(self) -> bool:
        """List the directory left unlisted longest; False if none is left. Hold the lock."""
        if not self._unlisted:
            return False
        self._list(next(iter(self._unlisted)))
        return True

    def list_all(self) -> None:
        """List every directory left unlisted (see ``Unlisted``). Hold the lock."""
        while self._unlisted:
            self._list(next(iter(self._unlisted)))

    def _list(self, ino: int) -> None:
        source = self._unlisted.pop(ino)
        journal, attributing, guard = self._journal, self.attributing, self.guard
        # Not a change: neither attributed, nor published, nor asked of access rules.
        self._journal, self.attributing, self.guard, self._listing = Journal(), False, None, True
        try:
            # A load's many nodes, which the collector would walk again and again.
            with collector_paused():
                self._list_from(ino, source)
        finally:
            self._journal, self.attributing, self.guard = journal, attributing, guard
            self._listing = False
        if self._unlisted:
            return
        if guard is not None:
            guard.reset()  # what it counted (quotas) is of a tree now whole
        done = self._on_listed
        if done is not None:
            self._on_listed = None
            done()

    def _list_from(self, ino: int, source: Unlisted) -> None:
        directory = self._mutable_dir(ino)
        nlink, directory.nlink = directory.nlink, 2  # its subdirectories count themselves
        try:
            source.list(self, ino)
        except BaseException:
            # Nothing made: tried again on the next access.
            directory.nlink = nlink
            self._unlisted[ino] = source
            raise

    # -- versions ------------------------------------------------------------

    def snapshot(self) -> Version:
        """Freeze the current state in O(1) and return it (every directory listed
        first: see ``Unlisted``)."""
        if self._unlisted:
            self.list_all()
        lineage = Lineage(self._head, self._changes, self._causes)
        version = Version(
            self._table,
            lineage,
            tree_id=self.id,
            number=self._epoch,
            file_count=self.file_count,
            total_bytes=self.total_bytes,
            family=self._versions,
        )
        self._head = lineage
        self._changes = set()
        self._causes = {}
        self._epoch = next(self._epochs)
        return version

    def track_changes(self) -> TreeView:
        """Start recording, for a journal, which inodes change; the state now, frozen.

        Unlike ``snapshot``, a journal's freezes add no step to the tree's history
        (a journal freezing every second would grow it without end): the tree only
        moves to a new epoch, so what changes after the freeze is copied first and
        the frozen table stays as it was. Every directory is listed first (see
        ``Unlisted``). Hold the lock.
        """
        if self._unlisted:
            self.list_all()
        self._unjournalled = set()
        self._epoch = next(self._epochs)
        return TreeView(self._table)

    def freeze(self) -> TreeView:
        """The state now, frozen, in O(1); hold the lock.

        Neither a snapshot (no step of history, no change of attribution) nor a
        journal's freeze (no change tracking): the tree only moves to a new epoch,
        so its next write to each page, node or chunk copies it and the view stays
        as it was. For readers that compare states as they go (the change feed).
        """
        if self._unlisted:
            self.list_all()
        self._epoch = next(self._epochs)
        return TreeView(self._table)

    def start_tracking(self) -> None:
        """Start recording which inodes change, as ``track_changes`` does, without a
        frozen state (a new journal, whose first record holds every inode anyway):
        directories left unlisted stay so. Hold the lock."""
        self._unjournalled = set()

    def freeze_changes(self) -> tuple[TreeView, set[int]] | None:
        """The state now, frozen, and the inodes changed since the last freeze (a
        superset of those that differ); None if nothing changed. See
        ``track_changes``. Hold the lock."""
        changed = self._unjournalled
        if not changed:
            return None
        if self._unlisted:
            self.list_all()  # what it makes joins ``changed`` (the same set)
        self._unjournalled = set()
        self._epoch = next(self._epochs)
        return TreeView(self._table), changed

    def unfrozen_changes(self) -> set[int]:
        """The inodes changed since the last ``freeze_changes`` (a copy). Hold the lock."""
        return set(self._unjournalled or ())

    @property
    def next_ino(self) -> int:
        """The inode number the next new inode gets."""
        return self._next_ino

    @property
    def live_epoch(self) -> int:
        """The epoch the live state's new nodes belong to (for building nodes to
        ``install``)."""
        return self._epoch

    def install(
        self,
        states: list[tuple[int, Node | None]],
        *,
        next_ino: int,
        file_count: int,
        total_bytes: int,
    ) -> None:
        """Put each ``(ino, node)`` of ``states`` in the live state as it is (None: no
        inode there), and set the counts: a journal's replay, whose records hold whole
        inode states that agree with each other. Hold the lock."""
        if self._unlisted:
            self.list_all()
        for ino, node in states:
            self._store(ino, node)
        self._next_ino = max(self._next_ino, next_ino)
        self.file_count = file_count
        self.total_bytes = total_bytes
        if self.guard is not None:
            self.guard.reset()

    def versions(self) -> list[Version]:
        """Every version of this tree and of its family of forks that is still
        alive, oldest first: those snapshot stores keep and any held elsewhere
        (a frozen view, the git persistence state). For space accounting."""
        return self._versions.alive()

    def fork(self, version: Version) -> Tree:
        """A new live tree whose state is ``version``, in O(1); for forks of a workspace.

        The fork adopts ``version``'s table as ``restore`` does, so it shares
        every page, node and chunk with this tree's versions until it writes.
        It has its own lock, journal, orphans and change sets, and continues
        this tree's lineage, so ``changes_between`` works between any version
        of either tree and the other (O(changes since their common ancestor)).

        Why nothing can be changed in place by the wrong tree: objects are
        changed in place only by the tree whose live epoch owns them, and the
        epochs of this tree and all its forks come from one counter, so no two
        trees of a family ever share an epoch number; whatever a fork reaches
        from ``version`` belongs to an older epoch and is copied on first write.

        Memory: the fork draws on this tree's ``budget`` (one budget for the
        family). A chunk counts in it once, when made, whichever tree made it,
        and is given back once, when the last version or tree holding it drops
        it (CPython frees it with its last reference); so shared data is never
        counted twice nor freed while a fork still holds it.

        Inode numbers continue from this tree's next one at the time of the
        fork; later inodes of the two trees may reuse each other's numbers,
        which diffs tolerate (they classify by path, see ``_diff``).
        """
        if version.tree_id != self.id:
            raise InvalidArgumentError("version belongs to another tree", None)
        fork = object.__new__(Tree)
        fork._init(
            self._epochs,
            next(self._epochs),
            version._table,
            versions=self._versions,
            budget=self.budget,
            head=version.lineage,
            changes=set(),
            next_ino=self._next_ino,
            attributing=self.attributing,
            blame_full_commands=self.blame_full_commands,
            file_count=version.file_count,
            total_bytes=version.total_bytes,
        )
        return fork

    def restore(self, version: Version) -> Journal:
        """Make ``version`` the live state in O(1) plus O(changes).

        Returns what changed (also recorded in the journal): every inode that
        may differ and every directory entry whose binding differs.

        Held inodes (open files, a shell's working directory) keep working as
        on a local filesystem: one that ``version`` lacks becomes an orphan
        (no names, a directory without entries) until it is released, and an
        orphan that ``version`` names is linked again.
        """
        if version.tree_id != self.id:
            raise InvalidArgumentError("version belongs to another tree", None)
        if self._unlisted:
            self.list_all()
        journal = Journal()
        journal.inodes = self.changes_since(version)
        return self._adopt(version, journal)

    def fast_forward(self, other: Tree) -> Journal | None:
        """Make ``other``'s live state this tree's, in O(1) plus O(changes), if this
        tree has not changed since the two diverged; None, changing nothing, if it has.

        ``other`` is a fork of this tree (or this tree's origin, or a sibling):
        a tree of the same family. A fast-forward is what a three-way merge of
        ``other`` would do when only ``other`` changed, without looking at a
        single path: this tree adopts ``other``'s table, frozen (so both copy
        on their next writes), as ``restore`` adopts a version, and continues
        its history. Hold both trees' locks.

        Why no inode can mean two files afterwards: the two trees number new
        inodes from the same point on, but this tree made none since they
        diverged (it did not change), and its next one comes after ``other``'s.

        Raises:
            InvalidArgumentError: ``other`` is no tree of this family.
        """
        if other._epochs is not self._epochs or other is self:
            raise InvalidArgumentError("not a fork of this tree", None)
        if self._unlisted:
            self.list_all()
        ours, theirs = diverged(self.pending(), other.pending())
        if ours:
            return None
        version = other.snapshot()
        journal = Journal()
        journal.inodes = theirs
        self._next_ino = max(self._next_ino, other._next_ino)
        return self._adopt(version, journal)

    def _adopt(self, version: Version, journal: Journal) -> Journal:
        """Make ``version`` the live state; ``journal.inodes`` holds every inode
        that may differ, and the changed entries are added to it."""
        journal.entries = changed_entries(TreeView(self._table), version, journal.inodes)
        before = self._table
        self._table = version._table
        self._head = version.lineage
        self._changes = set()
        if self._unjournalled is not None:
            self._unjournalled |= journal.inodes
        self._causes = {}
        self._epoch = next(self._epochs)
        self.file_count = version.file_count
        self.total_bytes = version.total_bytes
        if self.guard is not None:
            self.guard.reset()
        for ino in [ino for ino in self._orphans if version.get(ino) is not None]:
            del self._orphans[ino]
        # An inode missing from the target was created or changed since it,
        # so it is among the changed ones: O(changes), not O(held).
        for ino in journal.inodes:
            node = before.get(ino)
            if node is not None and ino in self._held and version.get(ino) is None:
                self._orphans[ino] = _orphaned(node, self._epoch)
        self._journal.update(journal)
        return journal

    def _take_journal(self) -> Journal:
        """What was touched since the last call (the lock publishes it)."""
        journal = self._journal
        if journal.inodes or journal.entries:  # an empty one stays: most holds change nothing
            self._journal = Journal()
        return journal

    def changes_since(self, version: Version) -> set[int]:
        """Inodes that may differ between ``version`` and the live state."""
        return changes_between(version.lineage, self.pending())

    def pending(self) -> Lineage:
        """The live state's place in history: the step it would become if frozen now
        (what changed since the last freeze, and who changed it). Hold the lock; the
        step is shared with the tree until the next freeze."""
        return Lineage(self._head, self._changes, self._causes)

    @staticmethod
    def changes_between(a: Version, b: Version) -> set[int]:
        """Inodes that may differ between two versions of one tree."""
        return changes_between(a.lineage, b.lineage)

    # -- nodes ---------------------------------------------------------------

    def node(self, ino: int) -> Node:
        node = self._table.get(ino)
        if node is None:
            node = self._orphans.get(ino)
            if node is None:
                raise NotFoundError(f"no inode {ino}", None)
        elif self._unlisted and ino in self._unlisted and not self._listing:
            self._list(ino)
            return self.node(ino)
        return node

    def get(self, ino: int) -> Node | None:
        node = self._table.get(ino)
        if node is None:
            return self._orphans.get(ino)
        if self._unlisted and ino in self._unlisted and not self._listing:
            self._list(ino)
            return self._table.get(ino)
        return node

    def _mutable(self, ino: int, node: Node | None = None) -> Node:
        """The node at ``ino`` (``node``, if the caller has looked it up), cloned
        first if a frozen version may share it."""
        if self._unlisted and not self._listing:
            self.list_all()  # a write sees the whole tree (see ``Unlisted``)
            node = None  # listing may have copied it
        if node is None:
            node = self.node(ino)
        if node.epoch != self._epoch:
            node = node.clone(self._epoch)
            self._store(ino, node)
        else:
            self._journal.inodes.add(ino)
            # The write path's common case, inline: the same cause object (one per
            # tool call, one per process on the mount) changing the same inode again.
            if self.attributing and self._causes.get(ino) is not CURRENT.get():
                self._attribute(ino)
        return node

    def _attribute(self, ino: int) -> None:
        """Record that the cause in effect changed ``ino`` in this epoch."""
        cause = CURRENT.get()
        if cause is None:
            return
        if not self.blame_full_commands:
            cause = cause.redacted()  # itself, unless its command line holds secrets
        known = self._causes.get(ino)
        if known is None:
            self._causes[ino] = cause
        elif isinstance(known, Cause):
            if known != cause:
                self._causes[ino] = (known, cause)
        elif known[-1] is not cause and known[-1] != cause:
            kept = tuple(c for c in known if c != cause)
            self._causes[ino] = (*kept[-(MAX_CAUSES - 1) :], cause)

    def _mutable_dir(self, ino: int) -> Directory:
        current = self.node(ino)
        if not isinstance(current, Directory):
            raise NotADirectoryFsError("not a directory", self.describe(ino))
        if current.nlink == 0:  # removed, yet reached through a held inode (a cwd)
            raise NotFoundError("directory was removed", self.describe(ino))
        node = self._mutable(ino, current)
        assert isinstance(node, Directory)
        return node

    def _store(self, ino: int, node: Node | None) -> None:
        self._changes.add(ino)
        if self._unjournalled is not None:
            self._unjournalled.add(ino)
        self._journal.inodes.add(ino)
        if self.attributing and self._causes.get(ino) is not CURRENT.get():
            self._attribute(ino)
        if ino in self._orphans:
            if node is None:
                del self._orphans[ino]
            else:
                self._orphans[ino] = node
            return
        self._table = put(self._table, ino, node, self._epoch)

    def republish(self, entries: Iterable[tuple[int, str]]) -> None:
        """Tell subscribers, at the lock's release, that these directory entries may
        look different though the tree did not change (an access rule now hides
        them, or no longer does): the mount drops what the kernel cached of them.
        Hold the lock."""
        self._journal.entries.update(entries)

    def _entry_changed(self, parent: int, name: str) -> None:
        self._journal.entries.add((parent, name))

    def _touch(self, node: Node, *, data: bool = True) -> None:
        now = time.time_ns()
        node.ctime_ns = now
        if data:
            node.mtime_ns = now

    # -- creating ------------------------------------------------------------

    def _add(self, parent: int, name: str, node: Node, action: str, size: int = 0) -> int:
        validate_name(name)
        pending = None
        guard = self.guard
        if guard is not None:
            # Before the name is looked at: a hidden one refused as any other, not
            # revealed as taken.
            pending = guard.check_add(self, parent, name, action, size)
        directory = self._mutable_dir(parent)
        if name in directory.entries:
            raise AlreadyExistsError("file exists", self.describe(parent, name))
        ino = self._next_ino
        self._next_ino += 1
        node.links = ((parent, name),)
        directory.entries[name] = ino
        self._entry_changed(parent, name)
        self._touch(directory)
        if isinstance(node, Directory):
            directory.nlink += 1
        else:
            self.file_count += 1
        self._store(ino, node)
        if pending is not None:
            assert guard is not None
            guard.commit(pending, 1)
        return ino

    def create(self, parent: int, name: str, mode: int = 0o644, uid: int = 0, gid: int = 0) -> int:
        """Create an empty regular file; return its inode."""
        if self._unlisted and not self._listing:
            self.list_all()  # first: listing may start a new epoch (a loader's freeze)
        node = File(self._epoch, mode, uid, gid, time.time_ns(), self.budget)
        return self._add(parent, name, node, "create")

    def create_deferred(
        self,
        parent: int,
        name: str,
        content: Content,
        size: int,
        mode: int = 0o644,
        uid: int = 0,
        gid: int = 0,
    ) -> int:
        """Create a file of ``size`` bytes whose content loads on first use."""
        node = File.deferred(
            self._epoch, mode, uid, gid, time.time_ns(), self.budget, content, size
        )
        ino = self._add(parent, name, node, "create", size)
        self.total_bytes += size
        return ino

    def mkdir(self, parent: int, name: str, mode: int = 0o755, uid: int = 0, gid: int = 0) -> int:
        """Create a directory; return its inode."""
        if self._unlisted and not self._listing:
            self.list_all()  # first: listing may start a new epoch (a loader's freeze)
        directory = Directory(self._epoch, mode, uid, gid, time.time_ns())
        return self._add(parent, name, directory, "mkdir")

    def make_dirs(self, path: str, mode: int = 0o755, uid: int = 0, gid: int = 0) -> int:
        """mkdir -p of a ``/``-separated path below the root (no symlinks followed);
        return the last directory's inode."""
        ino = ROOT_INO
        for name in (part for part in path.split("/") if part):
            child = self.directory(ino).entries.get(name)
            if child is None:
                child = self.mkdir(ino, name, mode, uid, gid)
            elif not isinstance(self.node(child), Directory):
                raise NotADirectoryFsError("not a directory", path)
            ino = child
        return ino

    def mknod(
        self, parent: int, name: str, mode: int, rdev: int = 0, uid: int = 0, gid: int = 0
    ) -> int:
        """Create a regular file, fifo, socket or device node from a full mode."""
        kind = _stat.S_IFMT(mode)
        if kind == _stat.S_IFREG or kind == 0:
            return self.create(parent, name, mode, uid, gid)
        if kind == _stat.S_IFDIR:
            return self.mkdir(parent, name, mode, uid, gid)
        if kind not in (_stat.S_IFIFO, _stat.S_IFSOCK, _stat.S_IFCHR, _stat.S_IFBLK):
            raise InvalidArgumentError(f"cannot mknod file type {kind:o}", name)
        if self._unlisted and not self._listing:
            self.list_all()
        node = Special(self._epoch, kind | (mode & 0o7777), rdev, uid, gid, time.time_ns())
        return self._add(parent, name, node, "mknod")

    def symlink(self, parent: int, name: str, target: str, uid: int = 0, gid: int = 0) -> int:
        """Create a symbolic link to ``target``; return its inode."""
        encoded = target.encode("utf-8", "surrogateescape")
        if not encoded or b"\0" in encoded:
            raise InvalidPathError("invalid symlink target", name)
        if len(encoded) >= PATH_MAX:
            raise NameTooLongError(f"symlink target longer than {PATH_MAX} bytes", name)
        if self._unlisted and not self._listing:
            self.list_all()
        link = Symlink(self._epoch, target, uid, gid, time.time_ns())
        return self._add(parent, name, link, "symlink")

    def link(self, ino: int, parent: int, name: str) -> None:
        """Add the hard link ``parent/name`` to ``ino`` (not a directory)."""
        validate_name(name)
        node = self.node(ino)
        if isinstance(node, Directory):
            raise NotPermittedError("hard links to directories are not allowed", name)
        if node.nlink == 0:
            raise NotFoundError("file was removed", name)
        pending = None
        guard = self.guard
        if guard is not None:
            guard.check_change(self, ino, "link", 0)  # its link count and ctime change
            size = node.size if isinstance(node, File) else 0
            pending = guard.check_add(self, parent, name, "link", size)
        directory = self._mutable_dir(parent)
        if name in directory.entries:
            raise AlreadyExistsError("file exists", self.describe(parent, name))
        node = self._mutable(ino)
        directory.entries[name] = ino
        self._entry_changed(parent, name)
        node.links = (*node.links, (parent, name))
        node.nlink += 1
        self._touch(directory)
        self._touch(node, data=False)
        self.file_count += 1
        self.total_bytes += node.size if isinstance(node, File) else 0
        if pending is not None:
            assert guard is not None
            guard.commit(pending, 1)

    # -- removing ------------------------------------------------------------

    def unlink(self, parent: int, name: str) -> None:
        """Remove the entry ``parent/name``, which must not be a directory."""
        ino = self.lookup(parent, name)
        if isinstance(self.node(ino), Directory):
            raise IsADirectoryFsError("is a directory", self.describe(parent, name))
        self._unlink_entry(parent, name, ino, "unlink")

    def rmdir(self, parent: int, name: str) -> None:
        """Remove the empty directory ``parent/name``."""
        if name in (".", ".."):
            raise InvalidArgumentError("cannot remove . or ..", name)
        ino = self.lookup(parent, name)
        node = self.node(ino)
        if not isinstance(node, Directory):
            raise NotADirectoryFsError("not a directory", self.describe(parent, name))
        if node.entries:
            raise DirectoryNotEmptyError("directory not empty", self.describe(parent, name))
        self._unlink_entry(parent, name, ino, "rmdir")

    def _unlink_entry(self, parent: int, name: str, ino: int, action: str | None) -> None:
        """Remove the entry; ``action`` names it for the guard (None: the caller asked)."""
        guard = self.guard
        pending = None
        if guard is not None and action is not None:
            pending = guard.check_remove(self, parent, name, ino, action)
        directory = self._mutable_dir(parent)
        node = self._mutable(ino)
        del directory.entries[name]
        self._entry_changed(parent, name)
        self._touch(directory)
        links = list(node.links)
        links.remove((parent, name))
        node.links = tuple(links)
        if isinstance(node, Directory):
            directory.nlink -= 1
            node.nlink = 0
        else:
            node.nlink -= 1
            self.file_count -= 1
            self.total_bytes -= node.size if isinstance(node, File) else 0
            self._touch(node, data=False)
        if node.nlink == 0:
            self._drop(ino, node)
        if pending is not None:
            assert guard is not None
            guard.commit(pending, 1)

    def empty(self, directory: int) -> None:
        """Remove everything below ``directory``, bottom-up, without recursion
        (trees may be deeper than Python's stack).

        With access rules in force, the whole subtree is checked first, so a
        protected path in it refuses the removal before anything goes.
        """
        node = self.node(directory)
        if self.guard is not None and node.links:
            parent, name = node.links[0]
            self.guard.check_remove(self, parent, name, directory, "delete")
        stack = [directory]
        while stack:
            current = stack[-1]
            pending = []
            for name, child in self.readdir(current):
                node = self.node(child)
                if isinstance(node, Directory) and node.entries:
                    pending.append(child)
                elif isinstance(node, Directory):
                    self.rmdir(current, name)
                else:
                    self.unlink(current, name)
            if pending:
                stack.extend(pending)
            else:
                stack.pop()

    def _drop(self, ino: int, node: Node) -> None:
        """Remove an unlinked inode, or keep it as an orphan while it is held."""
        self._store(ino, None)
        if ino in self._held:
            self._orphans[ino] = node

    # -- renaming ------------------------------------------------------------

    def rename(
        self, old_parent: int, old_name: str, new_parent: int, new_name: str, flags: int = 0
    ) -> None:
        """rename(2) with RENAME_NOREPLACE and RENAME_EXCHANGE.

        Any other flag (RENAME_WHITEOUT: leave a 0:0 character device at the old name) is
        refused with EINVAL: renaming without doing what the flag asks would report a
        success the caller did not get.
        """
        if flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE):
            raise InvalidArgumentError(f"rename flags {flags:#x} not supported", new_name)
        validate_name(old_name)
        validate_name(new_name)
        ino = self.lookup(old_parent, old_name)
        if self.guard is not None:
            # Before the target is looked at: a hidden one is refused as any other
            # protected name, not revealed as taken or missing.
            self.guard.check_add(self, new_parent, new_name, "rename", 0)
        target = self.directory(new_parent).entries.get(new_name)
        if flags & RENAME_EXCHANGE:
            if flags & RENAME_NOREPLACE:
                raise InvalidArgumentError("NOREPLACE and EXCHANGE together", new_name)
            self._swap(old_parent, old_name, ino, new_parent, new_name, target)
            return
        if target is not None and flags & RENAME_NOREPLACE:
            raise AlreadyExistsError("file exists", self.describe(new_parent, new_name))
        if target == ino or (old_parent == new_parent and old_name == new_name):
            return
        source = self.node(ino)
        if isinstance(source, Directory):
            self._refuse_cycle(ino, new_parent)
        if target is not None:
            _refuse_replacing(source, self.node(target), new_name)
        pending = None
        if self.guard is not None:
            pending = self._check_move(old_parent, old_name, new_parent, new_name, False, ino)
        if target is not None:
            self._unlink_entry(new_parent, new_name, target, None)  # the move's check covered it
        self._move(ino, old_parent, old_name, new_parent, new_name)
        if pending is not None:
            self._commit(pending)

    def _swap(
        self,
        old_parent: int,
        old_name: str,
        ino: int,
        new_parent: int,
        new_name: str,
        target: int | None,
    ) -> None:
        """RENAME_EXCHANGE of ``old_parent/old_name`` (``ino``) and ``new_parent/new_name``."""
        if target is None:
            raise NotFoundError("no such file or directory", self.describe(new_parent, new_name))
        pending = None
        if self.guard is not None:
            pending = self._check_move(old_parent, old_name, new_parent, new_name, True, ino)
        self._exchange(old_parent, old_name, ino, new_parent, new_name, target)
        if pending is not None:
            self._commit(pending)

    def _check_move(
        self, old_parent: int, old_name: str, new_parent: int, new_name: str, swap: bool, ino: int
    ) -> Pending | None:
        """Ask the guard about a rename that will be made (every other check passed)."""
        guard = self.guard
        if guard is None:
            return None
        if swap:  # what ``_exchange`` refuses, refused before the guard walks anything
            other = self.lookup(new_parent, new_name)
            if isinstance(self.node(ino), Directory):
                self._refuse_cycle(ino, new_parent)
            if isinstance(self.node(other), Directory):
                self._refuse_cycle(other, old_parent)
        return guard.check_move(self, old_parent, old_name, new_parent, new_name, swap)

    def _commit(self, pending: Pending | None, scale: int = 1) -> None:
        if pending is not None and self.guard is not None:
            self.guard.commit(pending, scale)

    def _move(
        self, ino: int, old_parent: int, old_name: str, new_parent: int, new_name: str
    ) -> None:
        source_dir = self._mutable_dir(old_parent)
        target_dir = self._mutable_dir(new_parent)
        node = self._mutable(ino)
        del source_dir.entries[old_name]
        target_dir.entries[new_name] = ino
        self._entry_changed(old_parent, old_name)
        self._entry_changed(new_parent, new_name)
        node.links = tuple(
            (new_parent, new_name) if link == (old_parent, old_name) else link
            for link in node.links
        )
        if isinstance(node, Directory) and old_parent != new_parent:
            source_dir.nlink -= 1
            target_dir.nlink += 1
        self._touch(source_dir)
        self._touch(target_dir)
        self._touch(node, data=False)

    def _exchange(
        self, parent_a: int, name_a: str, ino_a: int, parent_b: int, name_b: str, ino_b: int
    ) -> None:
        if ino_a == ino_b:
            return
        node_a, node_b = self.node(ino_a), self.node(ino_b)
        if isinstance(node_a, Directory):
            self._refuse_cycle(ino_a, parent_b)
        if isinstance(node_b, Directory):
            self._refuse_cycle(ino_b, parent_a)
        dir_a, dir_b = self._mutable_dir(parent_a), self._mutable_dir(parent_b)
        node_a, node_b = self._mutable(ino_a), self._mutable(ino_b)
        dir_a.entries[name_a], dir_b.entries[name_b] = ino_b, ino_a
        self._entry_changed(parent_a, name_a)
        self._entry_changed(parent_b, name_b)
        node_a.links = tuple(
            (parent_b, name_b) if link == (parent_a, name_a) else link for link in node_a.links
        )
        node_b.links = tuple(
            (parent_a, name_a) if link == (parent_b, name_b) else link for link in node_b.links
        )
        if parent_a != parent_b:
            moved = isinstance(node_a, Directory) - isinstance(node_b, Directory)
            dir_a.nlink -= moved
            dir_b.nlink += moved
        for directory in (dir_a, dir_b):
            self._touch(directory)
        for node in (node_a, node_b):
            self._touch(node, data=False)

    def _refuse_cycle(self, moved: int, new_parent: int) -> None:
        """A directory cannot move below itself."""
        current = new_parent
        while current != ROOT_INO:
            if current == moved:
                raise InvalidArgumentError("cannot move a directory into itself", None)
            links = self.node(current).links
            if not links:  # an orphaned directory: nothing can be created in it
                raise NotFoundError("directory was removed", None)
            current = links[0][0]
        if moved == ROOT_INO:
            raise BusyError("cannot move the root", None)

    # -- data and attributes -------------------------------------------------

    def write(self, ino: int, offset: int, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at ``offset`` into file ``ino``; return the byte count."""
        if offset < 0:
            raise InvalidArgumentError("negative offset", self.describe(ino))
        guard = self.guard
        if guard is None:
            node = self._mutable_file(ino)
            before = node.size
            node.write(offset, data, self._epoch)
            self.total_bytes += (node.size - before) * node.nlink
            self._touch(node)
            return len(data)
        current = self._file(ino)
        grow = max(current.size, offset + len(data)) - current.size if data else 0
        pending = guard.check_change(self, ino, "write", grow)
        node = self._mutable_file(ino)
        before = node.size
        node.write(offset, data, self._epoch)
        self.total_bytes += (node.size - before) * node.nlink
        self._touch(node)
        self._commit(pending, node.size - before)
        return len(data)

    def fallocate(self, ino: int, mode: int, offset: int, length: int) -> None:
        """fallocate(2) on file ``ino``, on the sparse chunk store.

        Mode 0 allocates ``[offset, offset + length)`` (its holes become zeros
        held in memory, counted in the budget) and extends the size to cover
        it; ``FALLOC_FL_KEEP_SIZE`` keeps the size (the part past the end of
        file is checked against the budget, not held: a chunk never reaches
        past the size). ``FALLOC_FL_PUNCH_HOLE`` (with ``KEEP_SIZE``, as
        Linux requires) makes the range read as zeros and frees the chunks it
        covers; ``FALLOC_FL_ZERO_RANGE`` zeroes the range and allocates it.

        A chunk a snapshot shares is copied before it is changed, so even a
        punch may need memory. Raises NoSpaceError, having changed nothing,
        when the budget cannot hold what it needs.
        """
        if offset < 0 or length <= 0:
            raise InvalidArgumentError("bad offset or length", self.describe(ino))
        known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE
        punch, zero_range = mode & FALLOC_FL_PUNCH_HOLE, mode & FALLOC_FL_ZERO_RANGE
        if mode & ~known or (punch and (zero_range or not mode & FALLOC_FL_KEEP_SIZE)):
            raise NotSupportedError(f"fallocate mode {mode:#x}", self.describe(ino))
        pending = None
        if self.guard is not None:
            current = self._file(ino)
            keep = punch or mode & FALLOC_FL_KEEP_SIZE
            grow = 0 if keep else max(current.size, offset + length) - current.size
            pending = self.guard.check_change(self, ino, "fallocate", grow)
        node = self._mutable_file(ino)
        before = node.size
        end = offset + length
        node.fill(
            offset,
            end,
            self._epoch,
            zero=bool(punch or zero_range),
            allocate=not punch,
            keep_size=bool(mode & FALLOC_FL_KEEP_SIZE),
        )
        self.total_bytes += (node.size - before) * node.nlink
        self._touch(node)
        if pending is not None:
            self._commit(pending, node.size - before)

    def live_data_bytes(self) -> int:
        """Bytes of file data the live tree holds (orphans too): what would
        stay held if every version were dropped. O(inodes)."""
        return self.live_residency()[0]

    def live_residency(self) -> tuple[int, int]:
        """Bytes of the live tree's file data (orphans too) in memory, and bytes of
        it not in memory (files deferred on stored content: never loaded, or
        evicted). O(inodes)."""
        held = absent = 0
        for node in itertools.chain(nodes(self._table), self._orphans.values()):
            if isinstance(node, File):
                if node.absent() is None:
                    held += node.held
                else:
                    absent += node.size
        return held, absent

    def replace(self, ino: int, data: bytes | bytearray | memoryview) -> None:
        """Make ``data`` the whole content of file ``ino``: all or nothing.

        The budget is asked before the old content goes, counting as freed only
        what no version shares, so a NoSpaceError leaves the file as it was.
        """
        if self.guard is not None:  # the whole change at once: all or nothing
            self.guard.check_change(self, ino, "write", len(data) - self._file(ino).size)
        node = self._mutable_file(ino)
        # Data a store holds need not stay while the new data comes in: the versions
        # sharing it can then let it go too (and the file keeps it, if this fails).
        node.budget.residency.drop(node)
        node.budget.reserve(len(data) - node.exclusive_bytes(self._epoch), node)
        self.truncate(ino, 0)
        self.write(ino, 0, data)

    def truncate(self, ino: int, size: int) -> None:
        """Set the size of file ``ino``."""
        if size < 0:
            raise InvalidArgumentError("negative size", self.describe(ino))
        pending = None
        if self.guard is not None:
            grow = size - self._file(ino).size
            pending = self.guard.check_change(self, ino, "truncate", grow)
        node = self._mutable_file(ino)
        before = node.size
        node.truncate(size, self._epoch)
        self.total_bytes += (size - before) * node.nlink
        self._touch(node)
        if pending is not None:
            self._commit(pending, size - before)

    def _file(self, ino: int) -> File:
        """The regular file ``ino``, as it is (EISDIR, EINVAL for anything else)."""
        current = self.node(ino)
        if not isinstance(current, File):
            if isinstance(current, Directory):
                raise IsADirectoryFsError("is a directory", self.describe(ino))
            raise InvalidArgumentError("not a regular file", self.describe(ino))
        return current

    def _mutable_file(self, ino: int) -> File:
        current = self.node(ino)
        if not isinstance(current, File):  # the write path's common case without a call
            self._file(ino)  # raises what it is
        node = self._mutable(ino, current)
        assert isinstance(node, File)
        return node

    def check_new(self, parent: int, name: str, action: str, size: int) -> None:
        """Raise what the access rules would for making ``parent/name`` with ``size``
        bytes, recording the denial (a caller about to create and then write it, so
        that a refused write leaves no empty file). Hold the lock."""
        if self.guard is not None:
            self.guard.check_add(self, parent, name, action, size)

    def check(self, ino: int, action: str) -> None:
        """Raise what the access rules would for a change of ``ino`` that does not grow
        it (e.g. an open for writing), recording the denial; nothing if none is in
        force or they allow it. Hold the lock."""
        if self.guard is not None:
            self.guard.check_change(self, ino, action, 0)

    def setattr(
        self,
        ino: int,
        *,
        mode: int | None = None,
        uid: int | None = None,
        gid: int | None = None,
        size: int | None = None,
        atime_ns: int | None = None,
        mtime_ns: int | None = None,
        ctime_ns: int | None = None,
    ) -> None:
        """Change attributes; ``mode`` keeps the file type bits of the inode."""
        if self.guard is not None and size is None:  # with a size, ``truncate`` asks
            self.guard.check_change(self, ino, _attribute_action(mode, uid, gid), 0)
        if size is not None:
            self.truncate(ino, size)
        node = self._mutable(ino)
        if mode is not None:
            node.mode = _stat.S_IFMT(node.mode) | (mode & 0o7777)
        if uid is not None:
            node.uid = uid
        if gid is not None:
            node.gid = gid
        if atime_ns is not None:
            node.atime_ns = atime_ns
        if mtime_ns is not None:
            node.mtime_ns = mtime_ns
        node.ctime_ns = ctime_ns if ctime_ns is not None else time.time_ns()

    def setxattr(self, ino: int, name: bytes, value: bytes, flags: int = 0) -> None:
        """Set an extended attribute (XATTR_CREATE / XATTR_REPLACE honoured)."""
        if not name or len(name) > NAME_MAX:
            raise (NameTooLongError if name else InvalidArgumentError)("bad xattr name", None)
        present = name in (self.node(ino).xattrs or ())
        if flags & XATTR_CREATE and present:
            raise AlreadyExistsError("attribute exists", self.describe(ino))
        if flags & XATTR_REPLACE and not present:
            raise NoAttributeError("no such attribute", self.describe(ino))
        if self.guard is not None:
            self.guard.check_change(self, ino, "setxattr", 0)
        node = self._mutable(ino)
        if node.xattrs is None:
            node.xattrs = {}
        node.xattrs[name] = bytes(value)
        self._touch(node, data=False)

    def removexattr(self, ino: int, name: bytes) -> None:
        """Remove an extended attribute."""
        if name not in (self.node(ino).xattrs or ()):
            raise NoAttributeError("no such attribute", self.describe(ino))
        if self.guard is not None:
            self.guard.check_change(self, ino, "removexattr", 0)
        node = self._mutable(ino)
        assert node.xattrs is not None
        del node.xattrs[name]
        self._touch(node, data=False)

    # -- references from outside ---------------------------------------------
    # Who refers to an inode from outside (the kernel, through its lookup
    # counts) is counted there; the tree keeps only the set of held inodes,
    # since an unlinked inode must outlive its last name while it is held.

    def hold(self, ino: int) -> None:
        """Mark ``ino`` as referred to from outside the tree (e.g. by the
        kernel's lookup count): unlinked, it stays alive as an orphan."""
        self._held.add(ino)

    def held(self, ino: int) -> bool:
        """True if something outside the tree refers to ``ino``."""
        return ino in self._held

    def release(self, ino: int) -> None:
        """Drop the outside reference to ``ino``; an orphan is freed now."""
        self._held.discard(ino)
        self._orphans.pop(ino, None)

    @property
    def orphans(self) -> Set[int]:
        """Inodes unlinked from the tree but still held from outside."""
        return self._orphans.keys()

    def orphan_nodes(self) -> list[tuple[int, Node]]:
        """(inode, node) of every orphan, for space accounting. Taken right after
        a ``snapshot()`` under the lock, the nodes are frozen like the version's:
        the next change to one clones it first."""
        return list(self._orphans.items())


def _attribute_action(mode: int | None, uid: int | None, gid: int | None) -> str:
    """What a setattr does, for a denial record: chmod, chown, or touch (times, size)."""
    if mode is not None:
        return "chmod"
    if uid is not None or gid is not None:
        return "chown"
    return "setattr"


def _orphaned(node: Node, epoch: int) -> Node:
    """``node`` as an orphan of ``epoch``: no names, and a directory no entries."""
    orphan = node.clone(epoch)
    orphan.links = ()
    orphan.nlink = 0
    if isinstance(orphan, Directory):
        orphan.entries = {}
    return orphan


def _refuse_replacing(source: Node, replaced: Node, name: str) -> None:
    """rename(2)'s rule for what a rename may replace: a directory only an empty
    directory, anything else only what is not a directory."""
    if not isinstance(source, Directory):
        if isinstance(replaced, Directory):
            raise IsADirectoryFsError("is a directory", name)
        return
    if not isinstance(replaced, Directory):
        raise NotADirectoryFsError("not a directory", name)
    if replaced.entries:
        raise DirectoryNotEmptyError("directory not empty", name)
