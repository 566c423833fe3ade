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
from collections.abc import Iterator
from datetime import datetime

import pygit2
from pygit2.enums import ObjectType

from .._errors import LimitExceededError, SnapshotError
from ..fs import FilesystemSnapshot, InMemoryFilesystem, SnapshotChanges, SnapshotRef
from ..tree import PATH_MAX, ROOT_INO, File, Tree
from ._blobs import BlobContent, BlobStore
from ._history import recorded_history
from ._objects import EMPTY_TREE, MODE_LINK, MODE_TREE, decode_name, encode_name, read_blob
from ._persist import Progress, ProgressHook, resolve_commit
from ._records import (
    DEFAULT_LOAD_LIMITS,
    Entry,
    LoadLimits,
    Record,
    check_room,
    measure,
    read_checked_tree,
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
        meta_id = pygit2.Oid(hex=trailers(commit.message)["Workspacefs-Meta"])
        sized(odb, meta_id, ObjectType.COMMIT, "the metadata commit", limits)
        meta_commit = repository[meta_id]
        assert isinstance(meta_commit, pygit2.Commit)
        records, entries = measure(odb, meta_commit.tree_id, limits, special_modes)
        check_room(entries)
        history = GitHistory(repository, commit, record, limits)
        recorded = history if history.present() else None
        fs = InMemoryFilesystem(
            workspace_id=record.workspace_id, mount_point=mount_point, memory_budget=memory_budget
        )
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
    state = state_for(fs, git_dir)
    state.dir_trees, state.meta_trees = dirs
    state.blobs = {}
    for _, ino, node in version.walk():
        if isinstance(node, File) and isinstance(node.deferred_key, pygit2.Oid):
            state.blobs[ino] = (node.content_key, node.deferred_key)
    state.version = version.alias()  # held apart from the snapshot's, for space accounting
    state.record = record
    state.persisted.add(record.snapshot_id)
    state.commits[version.history_key] = (commit.id, meta_commit.id)
    return fs


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
    ) -> None:
        self._repository = repository
        self._record = record
        self._limits = limits
        self._lock = threading.Lock()  # libgit2 objects are not shared across threads unguarded
        self._read: list[list[SnapshotChanges]] = []
        self._next: pygit2.Commit | None = commit
        self._first = self._steps(commit)

    def present(self) -> bool:
        """Whether the commit records history (commits before attribution do not)."""
        return self._first is not None

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
            steps = self._first
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
        meta_id = pygit2.Oid(hex=trailers(commit.message)["Workspacefs-Meta"])
        sized(repository.odb, meta_id, ObjectType.COMMIT, "the metadata commit", limits)
        meta = repository[meta_id]
        assert isinstance(meta, pygit2.Commit)
        return recorded_history(repository.odb, meta, limits.max_record_bytes)
    except LimitExceededError:
        raise
    except (KeyError, ValueError, TypeError, pygit2.GitError) as exc:
        raise SnapshotError(
            f"the history recorded with {commit.id} is damaged: {exc}", repository.path
        ) from exc


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
        listed = _listed(odb, tree_oid, path, limits)
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
                child = tree.symlink(directory, entry.name, _link_target(odb, oid, where))
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
    _set_attributes(tree, attributes)  # last: creating entries touches their directories' times
    return dir_trees, meta_trees


def _listed(
    odb: pygit2.Odb, tree_oid: pygit2.Oid, path: str, limits: LoadLimits
) -> dict[bytes, tuple[int, pygit2.Oid]]:
    """Name -> (git mode, id) of the entries of the git tree of the directory at ``path``."""
    if tree_oid == EMPTY_TREE:
        return {}
    what = f"the tree of {path or '/'}"
    return {name: (mode, oid) for name, mode, oid in read_checked_tree(odb, tree_oid, what, limits)}


def _set_attributes(tree: Tree, attributes: list[tuple[int, Entry]]) -> None:
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


def _link_target(odb: pygit2.Odb, oid: pygit2.Oid, where: str) -> str:
    """A symlink's target, its blob's size checked before it is read."""
    kind, size = odb.read_header(oid)
    if kind != ObjectType.BLOB or not 0 < size < PATH_MAX:
        raise ValueError(f"{where}: a symlink target of {size:,} bytes (PATH_MAX is {PATH_MAX})")
    return decode_name(read_blob(odb, oid))
