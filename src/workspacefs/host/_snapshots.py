"""Snapshots of a host directory as commits in an external bare git repository.

The repository lives outside the root (agents cannot touch it); its index
is the stat cache, so a snapshot rehashes only files whose stat changed.
Everything is captured: untracked and ignored files too, and the exec bit.
Restore is a forced checkout that also removes what was created since.
A nested ``.git`` directory in the workspace is not captured (git never
tracks one).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from datetime import UTC, datetime

import pygit2
from pygit2.enums import CheckoutStrategy, DeltaStatus
from pygit2.ffi import C, ffi
from pygit2.utils import StrArray

from .._errors import (
    InvalidArgumentError,
    SnapshotCreationError,
    SnapshotError,
    SnapshotIncompatibleError,
    SnapshotNotFoundError,
    SnapshotRestoreError,
)
from ..fs import FilesystemDiff, FilesystemSnapshot, SnapshotRef
from ..git import MODE_TREE, Identity, RefNamespace, walk_tree

_ADD_FORCE = 1  # GIT_INDEX_ADD_FORCE: ignored files are part of the workspace too
_REFS = RefNamespace.for_workspace("host")  # the directory's snapshots, one workspace


class GitSnapshots:
    """The ``git`` snapshot strategy of ``HostFilesystem``."""

    name = "git"

    def __init__(self, root: str, git_dir: str | None) -> None:
        self._root = root
        self._git_dir = git_dir
        self._repo: pygit2.Repository | None = None

    @property
    def git_dir(self) -> str | None:
        """The external git directory, once there is one."""
        return self._git_dir

    def _repository(self) -> pygit2.Repository:
        if self._repo is not None:
            return self._repo
        if self._git_dir is None:
            self._git_dir = tempfile.mkdtemp(prefix="workspacefs-git-")
        git_dir = os.path.realpath(self._git_dir)
        if git_dir == self._root or git_dir.startswith(self._root + os.sep):
            raise InvalidArgumentError("the git dir must be outside the workspace root", git_dir)
        if not os.path.exists(os.path.join(git_dir, "HEAD")):
            pygit2.init_repository(git_dir, bare=True)
        repo = pygit2.Repository(git_dir)
        repo.config["core.filemode"] = "true"
        repo.config["core.symlinks"] = "true"
        repo.config["gc.auto"] = "0"
        repo.workdir = self._root
        self._repo = repo
        return repo

    def _capture(self) -> tuple[pygit2.Repository, pygit2.Oid, int]:
        """Stage the whole directory into the private index; return its tree."""
        repo = self._repository()
        index = repo.index
        index.read()
        with StrArray([]) as paths:
            error = C.git_index_add_all(index._index, paths.ptr, _ADD_FORCE, ffi.NULL, ffi.NULL)
        if error:
            raise SnapshotCreationError(
                f"cannot stage the workspace (libgit2 error {error})", self._root
            )
        for entry in list(index):  # deletions: add_all only adds and updates
            if not os.path.lexists(os.path.join(self._root, entry.path)):
                index.remove(entry.path)
        index.write()
        return repo, index.write_tree(), len(index)

    def snapshot(self, tag: str | None, parent: uuid.UUID | None) -> FilesystemSnapshot:
        try:
            repo, tree, count = self._capture()
            number = _REFS.next_number(repo)
            parents = [repo.references[_REFS.snapshot(number - 1)].target] if number > 1 else []
            now = datetime.now(UTC)
            signature = Identity().signature(now)
            commit = repo.create_commit(
                None, signature, signature, tag or f"snapshot {now.isoformat()}", tree, parents
            )
            repo.references.create(_REFS.snapshot(number), commit)
        except pygit2.GitError as exc:
            raise SnapshotCreationError(f"snapshot failed: {exc}", self._root) from exc
        return FilesystemSnapshot(
            snapshot_id=uuid.uuid4(),
            created_at=now,
            ref=SnapshotRef("git", str(commit), repository=self._git_dir),
            root_path=self._root,
            tag=tag,
            parent_id=parent,
            file_count=count,
            total_bytes=sum(repo.odb.read_header(e.id)[1] for e in repo.index),
        )

    def _commit(self, snapshot: FilesystemSnapshot) -> pygit2.Commit:
        if snapshot.root_path != self._root:
            raise SnapshotIncompatibleError("snapshot of another directory", snapshot.root_path)
        ref = snapshot.ref
        if self._git_dir is None and ref.repository is not None:
            self._git_dir = ref.repository  # a new process restoring an old snapshot
        if self._git_dir is None or not os.path.isdir(self._git_dir):
            raise SnapshotNotFoundError("the snapshot's git dir is gone", ref.repository)
        repo = self._repository()
        try:
            commit = repo[ref.location]
        except (KeyError, ValueError):
            raise SnapshotNotFoundError("no such snapshot commit", ref.location) from None
        if not isinstance(commit, pygit2.Commit):
            raise SnapshotNotFoundError("not a snapshot commit", ref.location)
        return commit

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        commit = self._commit(snapshot)
        repo = self._repository()
        strategy = (
            CheckoutStrategy.FORCE
            | CheckoutStrategy.REMOVE_UNTRACKED
            | CheckoutStrategy.REMOVE_IGNORED
        )
        try:
            self._capture()  # the index must describe the directory as it is now
            repo.checkout_tree(commit.tree, strategy=strategy)  # type: ignore[no-untyped-call]
            index = repo.index
            index.read_tree(commit.tree)
            index.write()
        except pygit2.GitError as exc:
            raise SnapshotRestoreError(f"restore failed: {exc}", self._root) from exc
        _remove_empty_directories(repo, self._root, commit.tree)

    def diff(self, base: FilesystemSnapshot, target: FilesystemSnapshot | None) -> FilesystemDiff:
        before = self._commit(base).tree
        if target is not None:
            repo, after = self._repository(), self._commit(target).tree
        else:
            repo, tree_id, _ = self._capture()
            current = repo.get(tree_id)
            if not isinstance(current, pygit2.Tree):
                raise SnapshotError(f"the staged tree {tree_id} cannot be read back", self._root)
            after = current
        added, modified, deleted = [], [], []
        for delta in before.diff_to_tree(after).deltas:
            status = delta.status
            if status == DeltaStatus.ADDED:
                added.append(delta.new_file.path)
            elif status == DeltaStatus.DELETED:
                deleted.append(delta.old_file.path)
            else:
                modified.append(delta.new_file.path)
        total = sum(1 for _, mode, _ in walk_tree(repo, after) if mode != MODE_TREE)
        return FilesystemDiff(
            tuple(sorted(added)),
            tuple(sorted(modified)),
            tuple(sorted(deleted)),
            total - len(added) - len(modified),
        )

    def cleanup(self) -> None:
        if self._git_dir is not None and os.path.isdir(self._git_dir):
            shutil.rmtree(self._git_dir)
        self._repo = None


def _remove_empty_directories(repo: pygit2.Repository, root: str, tree: pygit2.Tree) -> None:
    """Directories left empty by the checkout go too, as with ``git clean -d``."""
    kept = {""} | {path for path, mode, _ in walk_tree(repo, tree) if mode == MODE_TREE}
    for top, _, _ in os.walk(root, topdown=False):
        relative = os.path.relpath(top, root)
        relative = "" if relative == "." else relative
        if relative not in kept and not os.listdir(top) and not os.path.islink(top):
            os.rmdir(top)
