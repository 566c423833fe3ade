"""A snapshot that serves at once, whatever its size: ``load(background=True)``.

Building a tree node by node costs about 25 microseconds an entry (each checked as
``_records`` checks it), seconds for a repository of 200,000 files, while an agent's
first request needs one directory. So a large snapshot is loaded with its root
listed and every other directory left unlisted (``tree.Unlisted``): each is listed,
checked first as a whole load checks it, the first time anything reaches it -- a
lookup through the mount, ``ls -R``, ``cat`` of a path -- and a ``Hydration`` lists
the rest in the background, breadth first, then reads file contents into memory in
the order an agent needs them: manifests (``package.json``, ``pyproject.toml``, lock
files) as their directories are listed, then sources, then the rest, within half the
memory budget (it never makes another file's data leave memory). A read of a file
not read yet reads it first, as any file of a lazy load.

Once every directory is listed, the state as loaded is adopted as the snapshot
(``restore`` to it, incremental persist back), as ``load`` adopts it at once. A write,
or anything that freezes the tree (a snapshot, a fork, a store's first record), lists
what is left first, in its own thread; so nothing written meets a directory still to
be listed, and the adopted state is exactly the commit's.

What a whole load checks before it builds anything -- how many entries the snapshot
expands to, their declared sizes, the room their bookkeeping needs -- is checked
here directory by directory as each is listed, against what was listed before: a
snapshot past a limit fails its next listing (and so every write) with the same
error, having built no more than the limit allows. A snapshot whose distinct
directories hold few entries (under ``EAGER_ENTRIES``: small ones, and bombs that
name one subtree many times) is counted whole and built at once, as before.

Hard links: a file's link count grows as the directories naming it are listed.
"""

from __future__ import annotations

import logging
import os
import stat as _stat
import threading
import weakref
from collections.abc import Callable, Hashable

import pygit2

from .._errors import LimitExceededError, NoSpaceError, SnapshotError
from ..fs import InMemoryFilesystem
from ..tree import ROOT_INO, File, Tree, collector_paused, wait_idle
from ._blobs import BlobContent, BlobStore
from ._limits import LoadLimits
from ._objects import EMPTY_TREE, MODE_LINK, MODE_TREE, encode_name
from ._records import (
    Entry,
    Record,
    check_room,
    entries_room,
    link_target,
    listed_entries,
    read_split_record,
    split_meta_tree,
)

log = logging.getLogger(__name__)

IDLE_WAIT = 0.1
"""Longest a hydration waits, between two directories or files, for a busy mount."""
EAGER_ENTRIES = 10_000
"""A snapshot whose distinct directories hold at most this many entries is built at
once (a few tenths of a second); a larger one serves while it is listed."""

MANIFESTS = frozenset(
    {
        "package.json",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "pnpm-workspace.yaml",
        "bun.lockb",
        "deno.json",
        "tsconfig.json",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
        "Pipfile",
        "Pipfile.lock",
        "poetry.lock",
        "uv.lock",
        "Cargo.toml",
        "Cargo.lock",
        "go.mod",
        "go.sum",
        "go.work",
        "Gemfile",
        "Gemfile.lock",
        "composer.json",
        "composer.lock",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "settings.gradle",
        "settings.gradle.kts",
        "mix.exs",
        "mix.lock",
        "Package.swift",
        "Package.resolved",
        "CMakeLists.txt",
        "Makefile",
        "Dockerfile",
        "flake.nix",
        "flake.lock",
    }
)
"""Files an agent reads first to learn a project: its manifests and lock files."""

SOURCE_SUFFIXES = frozenset(
    {
        ".py",
        ".pyi",
        ".js",
        ".mjs",
        ".cjs",
        ".jsx",
        ".ts",
        ".tsx",
        ".mts",
        ".vue",
        ".svelte",
        ".go",
        ".rs",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".cxx",
        ".hpp",
        ".hh",
        ".m",
        ".mm",
        ".java",
        ".kt",
        ".kts",
        ".scala",
        ".swift",
        ".cs",
        ".fs",
        ".rb",
        ".php",
        ".pl",
        ".lua",
        ".ex",
        ".exs",
        ".erl",
        ".hs",
        ".ml",
        ".clj",
        ".dart",
        ".zig",
        ".sh",
        ".bash",
        ".sql",
        ".proto",
        ".graphql",
    }
)
"""Suffixes of source files: read after the manifests, before the rest."""


def manifest(name: str) -> bool:
    """True for a manifest or lock file's name."""
    return name in MANIFESTS or name.endswith((".lock", "-lock.json", "-lock.yaml"))


class Listing:
    """The directories of one snapshot being loaded: each listed when first needed
    (the tree's lock held), what they hold counted against the load's limits, and
    what a persist back needs gathered as they go.

    Args:
        repository: Its own handle on the repository: listings run in whichever
            thread holds the tree's lock, while files read from the shared store.
        blobs: Where the files' contents are read from.
        records: Records read already (``measure``), by metadata tree id.
    """

    def __init__(
        self,
        repository: pygit2.Repository,
        blobs: BlobStore,
        limits: LoadLimits,
        special_modes: bool,
        records: dict[pygit2.Oid, Record],
    ) -> None:
        self._odb = repository.odb
        self._where = os.path.realpath(repository.path)
        self._blobs = blobs
        self._limits = limits
        self._special_modes = special_modes
        self._records = records
        self._groups: dict[int, int] = {}  # hard link group -> the inode made for it
        self._room = entries_room()  # measured once: it takes a dozen files to read
        self.made = 0
        """Entries listed so far (each name of a hard link counts)."""
        self.declared = 0
        """The declared sizes of the files listed so far."""
        self.dir_trees: dict[int, pygit2.Oid] = {}
        self.meta_trees: dict[int, pygit2.Oid] = {}
        self.blobs: dict[int, tuple[Hashable, pygit2.Oid]] = {}
        """Each file listed: its content key and blob (a persist back writes neither)."""
        self.manifests: list[int] = []
        self.sources: list[int] = []
        self.others: list[int] = []
        """The files listed, in the order a hydration reads them."""
        self.listed: Callable[[list[int]], None] | None = None
        """Told the manifests of each directory once it is listed (``Hydration``)."""

    def done(self) -> None:
        """Every directory is listed: drop what only listing needed."""
        self._records = {}
        self._groups = {}

    def directory(
        self, tree_oid: pygit2.Oid, meta_oid: pygit2.Oid, path: str, own: Entry | None
    ) -> Directory:
        """The directory at ``path`` (``""``: the root), unlisted; ``own``: its own
        attributes, set again once its listing has touched its times."""
        blob, subdirs = split_meta_tree(self._odb, meta_oid, path or "/", self._limits)
        return Directory(self, tree_oid, meta_oid, blob, subdirs, path, own)

    def make(self, tree: Tree, ino: int, directory: Directory) -> None:
        """Make ``directory``'s entries in ``tree`` at ``ino``: everything read and
        checked first, so a listing that fails makes nothing."""
        try:
            record, plan = self._plan(directory)
        except (LimitExceededError, NoSpaceError):
            raise
        except (KeyError, ValueError, TypeError, pygit2.GitError) as exc:
            raise SnapshotError(f"cannot load {directory.path or '/'}: {exc}", self._where) from exc
        self.made += len(record.entries)
        self.declared += record.declared
        self.dir_trees[ino] = directory.tree_oid
        self.meta_trees[ino] = directory.meta_oid
        manifests: list[int] = []
        attributes: list[tuple[int, Entry]] = []
        for entry, made in plan:
            if entry.link is not None and entry.link in self._groups:
                tree.link(self._groups[entry.link], ino, entry.name)
                continue
            child = self._make(tree, ino, entry, made, manifests)
            if entry.link is not None:
                self._groups[entry.link] = child
            attributes.append((child, entry))
        if directory.own is not None:
            attributes.append((ino, directory.own))  # last: making entries touched its times
        set_attributes(tree, attributes)
        self.manifests += manifests
        if self.listed is not None and manifests:
            self.listed(manifests)

    def _make(self, tree: Tree, ino: int, entry: Entry, made: object, manifests: list[int]) -> int:
        """Make ``entry`` in directory ``ino`` from what ``_plan`` found; a file goes on
        the list a hydration reads it from (``manifests``, if it is one)."""
        if isinstance(made, Directory):
            child = tree.mkdir(ino, entry.name, entry.mode)
            tree.defer_listing(child, made, len(made.subdirs))
            return child
        if isinstance(made, str):
            return tree.symlink(ino, entry.name, made)
        if not isinstance(made, pygit2.Oid):
            return tree.mknod(ino, entry.name, entry.mode, entry.rdev)
        content = BlobContent(self._blobs, made)
        child = tree.create_deferred(ino, entry.name, content, entry.size, entry.mode)
        node = tree.node(child)
        assert isinstance(node, File)
        self.blobs[child] = (node.content_key, made)
        if entry.size:
            if manifest(entry.name):
                manifests.append(child)
            elif os.path.splitext(entry.name)[1] in SOURCE_SUFFIXES:
                self.sources.append(child)
            else:
                self.others.append(child)
        return child

    def _plan(self, directory: Directory) -> tuple[Record, list[tuple[Entry, object]]]:
        """The record of ``directory``, checked against the limits with what was listed
        before, and what each entry is made from: a ``Directory`` to list later, a blob
        id, a symlink's target, or None (a special node)."""
        limits, path = self._limits, directory.path
        record = self._records.get(directory.meta_oid)
        if record is None:
            record = read_split_record(
                self._odb,
                directory.blob,
                directory.subdirs,
                path or "/",
                limits,
                limits.max_entries - self.made,
                self._special_modes,
            )
        limits.check(
            "max_entries", self.made + len(record.entries), "the snapshot holds at least", "entries"
        )
        limits.check(
            "max_total_bytes",
            self.declared + record.declared,
            "the snapshot holds files declaring at least",
            "bytes",
        )
        check_room(self.made + len(record.entries), self._room)
        listed = listed_entries(self._odb, directory.tree_oid, path, limits)
        plan: list[tuple[Entry, object]] = []
        for entry in record.entries:
            where = f"{path}/{entry.name}"
            if entry.link is not None and entry.link in self._groups:
                plan.append((entry, None))
                continue
            git_mode, oid = listed.get(encode_name(entry.stored_as), (0, EMPTY_TREE))
            kind = entry.kind  # git_mode 0: the git tree holds nothing under that name
            made: object
            if kind == _stat.S_IFDIR and git_mode in (0, MODE_TREE):
                made = self.directory(oid, record.subdirs[entry.name], where, entry)
            elif kind == _stat.S_IFREG and _stat.S_ISREG(git_mode):
                made = oid
            elif kind == _stat.S_IFLNK and git_mode == MODE_LINK:
                made = link_target(self._odb, oid, where)
            elif kind not in (_stat.S_IFDIR, _stat.S_IFREG, _stat.S_IFLNK) and git_mode == 0:
                made = None
            else:
                held = f"mode {git_mode:o}" if git_mode else "nothing"
                raise ValueError(f"{where}: recorded with mode {entry.mode:#o}, git holds {held}")
            plan.append((entry, made))
        return record, plan


class Directory:
    """A directory of a snapshot being loaded, not listed yet (``tree.Unlisted``)."""

    __slots__ = ("blob", "listing", "meta_oid", "own", "path", "subdirs", "tree_oid")

    def __init__(
        self,
        listing: Listing,
        tree_oid: pygit2.Oid,
        meta_oid: pygit2.Oid,
        blob: pygit2.Oid,
        subdirs: dict[str, pygit2.Oid],
        path: str,
        own: Entry | None,
    ) -> None:
        self.listing = listing
        self.tree_oid = tree_oid
        self.meta_oid = meta_oid
        self.blob = blob
        self.subdirs = subdirs
        self.path = path
        self.own = own

    def list(self, tree: Tree, ino: int) -> None:
        self.listing.make(tree, ino, self)


class Hydration:
    """Lists a snapshot's directories and reads its files into memory in the background,
    in the order an agent needs them (see the module docstring); ``start`` it once the
    workspace serves, ``stop`` it before the workspace closes.

    ``state`` is ``listing``, ``hydrating``, ``done``, ``stopped`` or ``failed``
    (``error`` says why: a directory the snapshot holds could not be listed).
    """

    def __init__(self, fs: InMemoryFilesystem, listing: Listing) -> None:
        self._fs = fs
        self._listing = listing
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._urgent = list(listing.manifests)  # manifests listed, not read yet
        self.state = "listing"
        self.error: str | None = None
        self.hydrated = 0
        """Files read into memory by the hydration."""
        self.full = False
        """True once it stopped reading at half the memory budget."""
        listing.listed = self._listed

    def start(self) -> None:
        """Start in a thread of its own (once)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="workspacefs-hydrate", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop and wait for the thread (what is listed stays; the rest lists on use)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def facts(self) -> dict[str, object]:
        """Where it is: ``state``, directories still unlisted, files read, the error."""
        return {
            "state": self.state,
            "unlisted": self._fs.tree.unlisted,
            "listed_entries": self._listing.made,
            "hydrated_files": self.hydrated,
            "budget_full": self.full,
            "error": self.error,
        }

    def _listed(self, manifests: list[int]) -> None:
        # Under the tree's lock, in whichever thread listed them.
        self._urgent += manifests

    def _run(self) -> None:
        try:
            if self._list() and self._hydrate():
                self.state = "done"
            elif self.state != "failed":
                self.state = "stopped"
        except Exception as exc:  # a damaged or hostile snapshot: its listing says why
            self.state, self.error = "failed", str(exc)
            log.warning("hydrating %s stopped: %s", self._fs.mount_point or "the workspace", exc)

    def _list(self) -> bool:
        """List every directory, breadth first, a directory per hold of the lock, and
        read each one's manifests once it is listed. False if stopped."""
        tree = self._fs.tree
        with collector_paused():  # a load's many nodes (see ``tree._collector``)
            while not self._stop.is_set():
                with tree.lock.unpublished:
                    more = tree.list_next()
                    urgent, self._urgent = self._urgent, []
                if urgent and not self._read(urgent):
                    return False
                if not more:
                    break
                wait_idle(IDLE_WAIT)
        return not self._stop.is_set() and not tree.unlisted

    def _hydrate(self) -> bool:
        """Read the sources, then the rest; False if stopped."""
        self.state = "hydrating"
        listing = self._listing
        done = self._read(listing.sources) and self._read(listing.others)
        if done:
            listing.manifests, listing.sources, listing.others = [], [], []
        return done

    def _read(self, inodes: list[int]) -> bool:
        """Read each file into memory (those not read yet) until half the budget is held
        (then ``full``: the rest is read when used); False if stopped."""
        tree = self._fs.tree
        budget = tree.budget
        for ino in inodes:
            if self._stop.is_set():
                return False
            if self.full:
                return True
            with tree.lock.unpublished:
                node = tree.get(ino)
                marker = node.absent() if isinstance(node, File) else None
            if marker is None or not isinstance(node, File):
                continue
            limit = budget.limit
            if limit is not None and budget.held + marker.size > limit // 2:
                self.full = True  # the rest of the budget is for the work
                return True
            try:
                node.read_absent(marker, 0, 0)  # loaded outside the lock, installed if unchanged
            except NoSpaceError:
                self.full = True
                return True
            self.hydrated += 1
            wait_idle(IDLE_WAIT)
        return True


_hydrations: weakref.WeakKeyDictionary[InMemoryFilesystem, Hydration] = weakref.WeakKeyDictionary()
_hydrations_lock = threading.Lock()


def hydration(fs: InMemoryFilesystem) -> Hydration | None:
    """The background listing and hydration of a workspace ``load(background=True)``
    made, if it made one that needs it (None: built at once, or another workspace)."""
    with _hydrations_lock:
        return _hydrations.get(fs)


def keep_hydration(fs: InMemoryFilesystem, found: Hydration) -> None:
    """Make ``found`` what ``hydration(fs)`` returns."""
    with _hydrations_lock:
        _hydrations[fs] = found


def set_attributes(tree: Tree, attributes: list[tuple[int, Entry]]) -> None:
    """Give each inode the attributes and extended attributes its record holds."""
    for ino, entry in attributes:
        for name, value in entry.xattrs:
            tree.setxattr(ino, name, value)
        tree.setattr(
            ino,
            mode=entry.mode,
            uid=entry.uid,
            gid=entry.gid,
            atime_ns=entry.atime,
            mtime_ns=entry.mtime,
            ctime_ns=entry.ctime,
        )


def root_listing(
    tree: Tree, listing: Listing, tree_oid: pygit2.Oid, meta_oid: pygit2.Oid, own: Entry | None
) -> None:
    """Leave the root unlisted with ``listing``, then list it (what it records checked
    before anything serves). Hold the tree's lock."""
    root = listing.directory(tree_oid, meta_oid, "", own)
    tree.defer_listing(ROOT_INO, root, len(root.subdirs))
    tree.list_next()
