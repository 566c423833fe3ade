"""Load a persisted snapshot into a new InMemoryFilesystem, lazily.

Directories, symlinks and metadata are read at once; a file's bytes stay a
blob id until the file is first read or written, so opening a large commit
costs its directory count, not its size. So is history: the changes each
earlier snapshot made, and their causes, are read commit by commit when
``changes``, ``history`` or ``blame`` first reach them (``GitHistory``).
"""

from __future__ import annotations

import os
import stat as _stat
import threading
import uuid
from collections.abc import Hashable, Iterator
from datetime import datetime

import pygit2
from pygit2.enums import ObjectType

from .._errors import LimitExceededError, SnapshotError
from ..fs import FilesystemSnapshot, InMemoryFilesystem, SnapshotChanges, SnapshotRef
from ..tree import ROOT_INO, File, Tree, Version
from ._blobs import BlobContent, BlobStore
from ._deferred import (
    EAGER_ENTRIES,
    Hydration,
    Listing,
    keep_hydration,
    root_listing,
    set_attributes,
)
from ._history import history_recorded, recorded_history
from ._limits import DEFAULT_LOAD_LIMITS, LoadLimits
from ._objects import EMPTY_TREE, MODE_LINK, MODE_TREE, encode_name
from ._persist import Progress, ProgressHook, resolve_commit
from ._records import (
    Entry,
    Record,
    check_room,
    link_target,
    listed_entries,
    measure,
    sized,
)
from ._repo import open_repository
from ._state import state_for


def trailers(message: str) -> dict[str, str]:
    """The ``Key: value`` lines of a commit message."""
    found = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.replace("-", "").isalnum():
            found[key] = value
    return found


def snapshot_record(commit: pygit2.Commit, git_dir: str) -> FilesystemSnapshot:
    """The snapshot record a snapshot commit carries."""
    fields = trailers(commit.message)
    try:
        return FilesystemSnapshot(
            snapshot_id=uuid.UUID(fields["Snapshot-Id"]),
            created_at=datetime.fromisoformat(fields["Created-At"]),
            ref=SnapshotRef("git", str(commit.id), repository=git_dir),
            root_path="/",
            tag=fields.get("Tag"),
            file_count=int(fields["Files"]),
            total_bytes=int(fields["Bytes"]),
            workspace_id=fields["Workspace"] or None,
        )
    except (KeyError, ValueError) as exc:
        raise SnapshotError(f"{commit.id} is not a workspacefs snapshot commit", git_dir) from exc


def load(
    repo: str | os.PathLike[str],
    ref: str,
    *,
    workspace: str | None = None,
    mount_point: str | None = None,
    progress: ProgressHook | None = None,
    limits: LoadLimits = DEFAULT_LOAD_LIMITS,
    special_modes: bool = False,
    memory_budget: int | None = None,
    background: bool = False,
) -> InMemoryFilesystem:
    """Load a persisted snapshot as a new live workspace.

    ``ref`` is a full ref, a ref relative to ``refs/workspacefs/<workspace>/``
    (``snapshots/3``), a tag or snapshot number of ``workspace``, or a commit
    id. The returned filesystem holds the snapshot (``current_snapshot_id``
    is its id, so it can be restored again) and persisting it back to the
    same repository is incremental.

    Every directory's record is read and checked before anything is built
    (``_records``): a snapshot past ``limits`` is refused, owners and modes the
    kernel cannot show are refused, times are clamped to years 1 to 9999.
    Setuid, setgid and sticky bits are dropped and device nodes refused unless
    ``special_modes`` (nothing from a repository brings privileges in unless
    asked). Files stay in the repository until first read, then stream into the
    workspace's memory budget (``memory_budget``, as ``InMemoryFilesystem``
    takes it): one that does not fit fails that read with ``NoSpaceError``.

    With ``background``, a large snapshot returns once its root is listed: every
    other directory is listed when first reached, and ``git.hydration(fs)`` lists
    the rest and reads files in the background once started (``_deferred``; its
    limits are then checked directory by directory as they are listed).

    Raises:
        NotFoundError: No repository at ``repo``.
        SnapshotNotFoundError: ``ref`` names no snapshot.
        LimitExceededError: The snapshot is past ``limits`` (the message names
            the limit and how to raise it).
        NoSpaceError: Its entries alone need more memory than the process has.
        SnapshotError: The commit or its metadata is damaged or refused.
    """
    repository = open_repository(repo)
    git_dir = os.path.realpath(repository.path)
    commit = resolve_commit(repository, workspace, ref)
    record = snapshot_record(commit, git_dir)
    odb = repository.odb
    try:
        meta_commit = _meta_commit(repository, commit, limits)
        enough = EAGER_ENTRIES if background else None
        records, entries = measure(odb, meta_commit.tree_id, limits, special_modes, enough)
        fs = InMemoryFilesystem(
            workspace_id=record.workspace_id, mount_point=mount_point, memory_budget=memory_budget
        )
        if entries is None:
            _load_in_background(fs, repository, commit, meta_commit, records, limits, special_modes)
            return fs
        check_room(entries)
        history = GitHistory(repository, commit, record, limits)
        recorded = history if history.present() else None
        with fs.transaction() as tree:
            dirs = _populate(
                tree,
                BlobStore(repository),
                commit.tree_id,
                meta_commit.tree_id,
                records,
                limits,
                progress,
            )
        version = fs.adopt_snapshot(record, history=recorded)
    except LimitExceededError:
        raise
    except (KeyError, ValueError, TypeError, pygit2.GitError) as exc:
        raise SnapshotError(f"cannot load {ref!r}: {exc}", git_dir) from exc
    blobs = {}
    for _, ino, node in version.walk():
        if isinstance(node, File) and isinstance(node.deferred_key, pygit2.Oid):
            blobs[ino] = (node.content_key, node.deferred_key)
    _keep_loaded(fs, git_dir, version, record, (commit.id, meta_commit.id), dirs, blobs)
    return fs


def _keep_loaded(
    fs: InMemoryFilesystem,
    git_dir: str,
    version: Version,
    record: FilesystemSnapshot,
    commits: tuple[pygit2.Oid, pygit2.Oid],
    dirs: tuple[dict[int, pygit2.Oid], dict[int, pygit2.Oid]],
    blobs: dict[int, tuple[Hashable, pygit2.Oid]],
) -> None:
    """Note that ``version`` of ``fs`` is the snapshot commit ``commits`` of ``git_dir``
    (``record``), so that persisting there again writes only what changed since."""
    state = state_for(fs, git_dir)
    state.dir_trees, state.meta_trees = dirs
    state.blobs = blobs
    state.version = version.alias()  # held apart from the snapshot's, for space accounting
    state.record = record
    state.persisted.add(record.snapshot_id)
    state.commits[version.history_key] = commits


def _load_in_background(
    fs: InMemoryFilesystem,
    repository: pygit2.Repository,
    commit: pygit2.Commit,
    meta_commit: pygit2.Commit,
    records: dict[pygit2.Oid, Record],
    limits: LoadLimits,
    special_modes: bool,
) -> None:
    """``load``'s way with a large snapshot: the root listed now, the rest when needed
    or by the hydration, and the state as loaded adopted once all is listed."""
    git_dir = os.path.realpath(repository.path)
    record = snapshot_record(commit, git_dir)
    # Where history is (and its size) is checked now, its steps read when first used.
    history = GitHistory(repository, commit, record, limits, first=False)
    listing = Listing(
        open_repository(git_dir), BlobStore(repository), limits, special_modes, records
    )

    def listed() -> None:
        # Every directory listed, under the tree's lock, before any write (a write
        # lists the rest first): the live state is the commit's.
        version = fs.adopt_snapshot(record, history=history if history.present() else None)
        dirs = (listing.dir_trees, listing.meta_trees)
        _keep_loaded(fs, git_dir, version, record, (commit.id, meta_commit.id), dirs, listing.blobs)
        listing.done()

    tree = fs.tree
    with tree.lock:
        tree.when_listed(listed)
        root_listing(
            tree, listing, commit.tree_id, meta_commit.tree_id, records[meta_commit.tree_id].own
        )
    keep_hydration(fs, Hydration(fs, listing))


class GitHistory:
    """The recorded history of a loaded snapshot: its metadata commit's ``history``,
    then its parent commit's, and so on (see ``_history``); read lazily, kept once
    read, iterable again and again, safe across threads.

    Args:
        repository: The repository holding the commits.
        commit: The loaded snapshot's commit.
        record: Its record, which stands for the in-memory one its history names.
        limits: ``max_record_bytes`` bounds each commit's record of history.
    """

    def __init__(
        self,
        repository: pygit2.Repository,
        commit: pygit2.Commit,
        record: FilesystemSnapshot,
        limits: LoadLimits = DEFAULT_LOAD_LIMITS,
        *,
        first: bool = True,
    ) -> None:
        self._repository = repository
        self._record = record
        self._limits = limits
        self._lock = threading.Lock()  # libgit2 objects are not shared across threads unguarded
        self._read: list[list[SnapshotChanges]] = []
        self._next: pygit2.Commit | None = commit
        # The first commit's steps now (``first``: damage found at once), or when first
        # iterated (a load listed in the background: its first record can be long).
        self._first = self._steps(commit) if first else None
        self._present = self._first is not None if first else self._recorded(commit)

    def present(self) -> bool:
        """Whether the commit records history (commits before attribution do not)."""
        return self._present

    def __iter__(self) -> Iterator[SnapshotChanges]:
        index = 0
        while True:
            with self._lock:
                if index == len(self._read) and not self._advance():
                    return
                steps = self._read[index]
            yield from steps
            index += 1

    def _advance(self) -> bool:
        """Read the next commit's steps; False at the end of recorded history."""
        commit = self._next
        if commit is None:
            return False
        if self._read:
            steps = self._steps(commit)
        else:
            steps = self._first if self._first is not None else self._steps(commit)
            self._first = None
            first = steps[0].snapshot if steps else None
            if steps and first is not None and first.snapshot_id == self._record.snapshot_id:
                steps[0] = SnapshotChanges(self._record, steps[0].base, steps[0].changes)
        if steps is None:
            self._next = None
            return False
        parents = commit.parents
        self._next = parents[0] if parents else None
        self._read.append(steps)
        return True

    def _steps(self, commit: pygit2.Commit) -> list[SnapshotChanges] | None:
        return recorded_changes(self._repository, commit, self._limits)

    def _recorded(self, commit: pygit2.Commit) -> bool:
        """``_steps(commit) is not None``, without reading the steps."""
        try:
            return history_recorded(
                self._repository.odb,
                _meta_commit(self._repository, commit, self._limits),
                self._limits.max_record_bytes,
            )
        except LimitExceededError:
            raise
        except (KeyError, ValueError, TypeError, pygit2.GitError) as exc:
            raise SnapshotError(
                f"the history recorded with {commit.id} is damaged: {exc}", self._repository.path
            ) from exc


def recorded_changes(
    repository: pygit2.Repository,
    commit: pygit2.Commit,
    limits: LoadLimits = DEFAULT_LOAD_LIMITS,
) -> list[SnapshotChanges] | None:
    """The changes a snapshot commit records with their causes: its snapshot's, then
    each earlier one's back to its parent commit's snapshot (newest first); None if
    it records none (written before attribution existed).

    Raises:
        SnapshotError: The commit or its record is damaged.
    """
    try:
        meta = _meta_commit(repository, commit, limits)
        return recorded_history(repository.odb, meta, limits.max_record_bytes)
    except LimitExceededError:
        raise
    except (KeyError, ValueError, TypeError, pygit2.GitError) as exc:
        raise SnapshotError(
            f"the history recorded with {commit.id} is damaged: {exc}", repository.path
        ) from exc


def _meta_commit(
    repository: pygit2.Repository, commit: pygit2.Commit, limits: LoadLimits
) -> pygit2.Commit:
    """The metadata commit a snapshot commit names (its header checked first)."""
    meta_id = pygit2.Oid(hex=trailers(commit.message)["Workspacefs-Meta"])
    sized(repository.odb, meta_id, ObjectType.COMMIT, "the metadata commit", limits)
    meta = repository[meta_id]
    assert isinstance(meta, pygit2.Commit)
    return meta


def _populate(
    tree: Tree,
    store: BlobStore,
    root_tree: pygit2.Oid,
    root_meta: pygit2.Oid,
    records: dict[pygit2.Oid, Record],
    limits: LoadLimits,
    progress: ProgressHook | None,
) -> tuple[dict[int, pygit2.Oid], dict[int, pygit2.Oid]]:
    """Create every node from the checked ``records``; return each directory's
    workspace and metadata tree ids."""
    odb = store.odb
    dir_trees: dict[int, pygit2.Oid] = {}
    meta_trees: dict[int, pygit2.Oid] = {}
    attributes: list[tuple[int, Entry]] = []
    groups: dict[int, int] = {}
    own = records[root_meta].own
    if own is not None:
        attributes.append((ROOT_INO, own))
    stack: list[tuple[int, pygit2.Oid, pygit2.Oid, str]] = [(ROOT_INO, root_tree, root_meta, "")]
    while stack:
        directory, tree_oid, meta_oid, path = stack.pop()
        dir_trees[directory] = tree_oid
        meta_trees[directory] = meta_oid
        record = records[meta_oid]
        listed = listed_entries(odb, tree_oid, path, limits)
        for entry in record.entries:
            where = f"{path}/{entry.name}"
            if entry.link is not None and entry.link in groups:
                tree.link(groups[entry.link], directory, entry.name)
                continue
            git_mode, oid = listed.get(encode_name(entry.stored_as), (0, EMPTY_TREE))
            kind = entry.kind  # git_mode 0: the git tree holds nothing under that name
            if kind == _stat.S_IFDIR and git_mode in (0, MODE_TREE):
                child = tree.mkdir(directory, entry.name, entry.mode)
                stack.append((child, oid, record.subdirs[entry.name], where))
            elif kind == _stat.S_IFREG and _stat.S_ISREG(git_mode):
                content = BlobContent(store, oid)
                child = tree.create_deferred(directory, entry.name, content, entry.size, entry.mode)
            elif kind == _stat.S_IFLNK and git_mode == MODE_LINK:
                child = tree.symlink(directory, entry.name, link_target(odb, oid, where))
            elif kind not in (_stat.S_IFDIR, _stat.S_IFREG, _stat.S_IFLNK) and git_mode == 0:
                child = tree.mknod(directory, entry.name, entry.mode, entry.rdev)
            else:
                held = f"mode {git_mode:o}" if git_mode else "nothing"
                raise ValueError(f"{where}: recorded with mode {entry.mode:#o}, git holds {held}")
            if entry.link is not None:
                groups[entry.link] = child
            attributes.append((child, entry))
        if progress is not None and len(dir_trees) % 256 == 0:
            progress(Progress("directories", len(dir_trees), len(dir_trees) + len(stack)))
    set_attributes(tree, attributes)  # last: creating entries touches their directories' times
    return dir_trees, meta_trees
