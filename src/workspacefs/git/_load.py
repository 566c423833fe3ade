"""Load a persisted snapshot into a new InMemoryFilesystem, lazily.

Directories, symlinks and metadata are read at once; a file's bytes stay a
blob id until the file is first read or written, so opening a large commit
costs its directory count, not its size. So is history: the changes each
earlier snapshot made, and their causes, are read commit by commit when
``changes``, ``history`` or ``blame`` first reach them (``GitHistory``).
"""

from __future__ import annotations

import base64
import json
import os
import stat as _stat
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pygit2

from .._errors import SnapshotError
from ..fs import FilesystemSnapshot, InMemoryFilesystem, SnapshotChanges, SnapshotRef
from ..tree import ROOT_INO, File, Tree
from ._history import recorded_history
from ._objects import EMPTY_TREE, decode_name, encode_name, read_blob, read_tree
from ._persist import DIR_PREFIX, META_BLOB, Progress, ProgressHook, resolve_commit
from ._repo import open_repository
from ._state import state_for


class BlobContent:
    """A file's bytes in a git object database, read on first use."""

    __slots__ = ("_lock", "_odb", "_oid")

    def __init__(self, odb: pygit2.Odb, oid: pygit2.Oid, lock: threading.Lock) -> None:
        self._odb = odb
        self._oid = oid
        self._lock = lock

    @property
    def key(self) -> pygit2.Oid:
        return self._oid

    def load(self) -> bytes:
        with self._lock:  # libgit2 objects are not shared across threads unguarded
            try:
                return read_blob(self._odb, self._oid)
            except (pygit2.GitError, KeyError, ValueError) as exc:
                raise SnapshotError(f"stored content {self._oid} is damaged: {exc}", None) from exc


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
) -> InMemoryFilesystem:
    """Load a persisted snapshot as a new live workspace.

    ``ref`` is a full ref, a ref relative to ``refs/workspacefs/<workspace>/``
    (``snapshots/3``), a tag or snapshot number of ``workspace``, or a commit
    id. The returned filesystem holds the snapshot (``current_snapshot_id``
    is its id, so it can be restored again) and persisting it back to the
    same repository is incremental.

    Raises:
        NotFoundError: No repository at ``repo``.
        SnapshotNotFoundError: ``ref`` names no snapshot.
        SnapshotError: The commit or its metadata is damaged.
    """
    repository = open_repository(repo)
    git_dir = os.path.realpath(repository.path)
    commit = resolve_commit(repository, workspace, ref)
    record = snapshot_record(commit, git_dir)
    odb = repository.odb
    try:
        meta_commit = repository[trailers(commit.message)["Workspacefs-Meta"]]
        if not isinstance(meta_commit, pygit2.Commit):
            raise SnapshotError(f"{commit.id}: its metadata is not a commit", git_dir)
        history = GitHistory(repository, commit, record)
        recorded = history if history.present() else None
        fs = InMemoryFilesystem(workspace_id=record.workspace_id, mount_point=mount_point)
        with fs.transaction() as tree:
            dirs = _populate(tree, odb, commit.tree_id, meta_commit.tree_id, progress)
        version = fs.adopt_snapshot(record, history=recorded)
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
    """

    def __init__(
        self, repository: pygit2.Repository, commit: pygit2.Commit, record: FilesystemSnapshot
    ) -> None:
        self._repository = repository
        self._record = record
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
        return recorded_changes(self._repository, commit)


def recorded_changes(
    repository: pygit2.Repository, commit: pygit2.Commit
) -> list[SnapshotChanges] | None:
    """The changes a snapshot commit records with their causes: its snapshot's, then
    each earlier one's back to its parent commit's snapshot (newest first); None if
    it records none (written before attribution existed).

    Raises:
        SnapshotError: The commit or its record is damaged.
    """
    try:
        meta = repository[trailers(commit.message)["Workspacefs-Meta"]]
        if not isinstance(meta, pygit2.Commit):
            raise TypeError(f"{meta.id} is not a commit")
        return recorded_history(repository.odb, meta)
    except (KeyError, ValueError, TypeError, pygit2.GitError) as exc:
        raise SnapshotError(
            f"the history recorded with {commit.id} is damaged: {exc}", repository.path
        ) from exc


def _populate(
    tree: Tree,
    odb: pygit2.Odb,
    root_tree: pygit2.Oid,
    root_meta: pygit2.Oid,
    progress: ProgressHook | None,
) -> tuple[dict[int, pygit2.Oid], dict[int, pygit2.Oid]]:
    """Create every node; return each directory's workspace and metadata tree ids."""
    lock = threading.Lock()
    dir_trees: dict[int, pygit2.Oid] = {}
    meta_trees: dict[int, pygit2.Oid] = {}
    attributes: list[tuple[int, dict[str, Any]]] = []
    groups: dict[int, int] = {}
    stack: list[tuple[int, pygit2.Oid, pygit2.Oid]] = [(ROOT_INO, root_tree, root_meta)]
    while stack:
        directory, tree_oid, meta_oid = stack.pop()
        dir_trees[directory] = tree_oid
        meta_trees[directory] = meta_oid
        blobs = (
            {name: oid for name, _, oid in read_tree(odb, tree_oid)}
            if tree_oid != EMPTY_TREE
            else {}
        )
        subtrees = {name: oid for name, _, oid in read_tree(odb, meta_oid)}
        meta: dict[str, dict[str, Any]] = json.loads(
            read_blob(odb, subtrees[META_BLOB]).decode("utf-8", "surrogateescape")
        )
        if not isinstance(meta, dict):
            raise ValueError(f"metadata of directory {directory} is not an object")
        if "." in meta:
            attributes.append((ROOT_INO, meta.pop(".")))
        for name, entry in meta.items():
            raw = encode_name(entry.get("stored_as", name))  # the name in the git tree
            mode = entry["mode"]
            kind = _stat.S_IFMT(mode)
            group = entry.get("link")
            if group is not None and group in groups:
                tree.link(groups[group], directory, name)
                continue
            if kind == _stat.S_IFDIR:
                child = tree.mkdir(directory, name, mode)
                meta_tree = subtrees[DIR_PREFIX + encode_name(name)]
                stack.append((child, blobs.get(raw, EMPTY_TREE), meta_tree))
            elif kind == _stat.S_IFREG:
                content = BlobContent(odb, blobs[raw], lock)
                child = tree.create_deferred(directory, name, content, entry["size"], mode)
            elif kind == _stat.S_IFLNK:
                child = tree.symlink(directory, name, decode_name(read_blob(odb, blobs[raw])))
            else:
                child = tree.mknod(directory, name, mode, entry.get("rdev", 0))
            if group is not None:
                groups[group] = child
            attributes.append((child, entry))
        if progress is not None and len(dir_trees) % 256 == 0:
            progress(Progress("directories", len(dir_trees), len(dir_trees) + len(stack)))
    # Attributes last: creating entries touches their directories' times.
    for ino, entry in attributes:
        for name, value in entry.get("xattrs", {}).items():
            tree.setxattr(ino, base64.b64decode(name), base64.b64decode(value))
        tree.setattr(
            ino,
            mode=entry["mode"],
            uid=entry["uid"],
            gid=entry["gid"],
            atime_ns=entry["atime"],
            mtime_ns=entry["mtime"],
            ctime_ns=entry["ctime"],
        )
    return dir_trees, meta_trees
