"""A git repository of persisted workspaces as a debug target.

Snapshots are the commits under ``refs/workspacefs/<workspace>/snapshots/``
(docs/git.md); their records come from the commit trailers. Trees and files
are read straight from the commit's git tree, one directory or one blob at a
time, rather than by loading the whole snapshot (``git.load`` builds every
node first: seconds for 50,000 files, where a directory listing here takes
milliseconds). Diffs are git's own tree diff, which skips every subtree whose
id did not change, so they cost O(changes).

What the commit tree holds is what is shown: files with git's modes
(100644, 100755), symlinks and directories. Empty directories, fifos,
devices and full modes live only in the metadata commit and are not listed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pygit2

from .. import git
from .._errors import (
    InvalidArgumentError,
    IsADirectoryFsError,
    NotADirectoryFsError,
    NotFoundError,
    SnapshotError,
    SnapshotNotFoundError,
)
from ._model import (
    Attribution,
    Changes,
    SnapshotSummary,
    TargetInfo,
    TreeEntry,
    depth_first,
    merged,
    origin_from_tag,
)
from ._reader import BLOCK

_PREFIX = "refs/workspacefs/"


def persisted_workspaces(repository: pygit2.Repository) -> list[str]:
    """The workspace ids with persisted snapshots in ``repository``, sorted."""
    found = set()
    for name in repository.references:
        if not name.startswith(_PREFIX):
            continue
        parts = name[len(_PREFIX) :].split("/")
        # <workspace>/snapshots/<n>; shadow sessions and branches nest one level deeper
        if len(parts) == 3 and parts[1] == "snapshots" and parts[2].isdigit():
            found.add(parts[0])
    return sorted(found)


def _kind(mode: int) -> str:
    if mode == git.MODE_TREE:
        return "directory"
    if mode == git.MODE_LINK:
        return "symlink"
    if mode in (git.MODE_FILE, git.MODE_EXECUTABLE):
        return "file"
    return "other"  # a gitlink (submodule): not something workspacefs writes


def _name(raw: bytes | None) -> str:
    # Tree names are bytes; the workspace holds the non-UTF-8 ones as surrogates.
    return (raw or b"").decode("utf-8", "surrogateescape")


class GitTarget:
    """The persisted snapshots of one workspace in a bare repository.

    Args:
        repository: The git directory (``git.persist``'s ``repo``).
        workspace: Whose snapshots; may be left out when the repository holds
            one workspace only.

    Raises:
        NotFoundError: No repository there, or no persisted workspace in it.
        InvalidArgumentError: Not a bare repository, or several workspaces and
            none chosen.
        SnapshotNotFoundError: ``workspace`` has no snapshots there.
    """

    def __init__(self, repository: str | os.PathLike[str], *, workspace: str | None = None) -> None:
        self._path = os.fspath(repository)
        self._repo = git.open_repository(self._path)
        self._lock = threading.RLock()  # one libgit2 repository object, many request threads
        spaces = persisted_workspaces(self._repo)
        if workspace is None:
            if not spaces:
                raise NotFoundError("no persisted workspace in this repository", self._path)
            if len(spaces) > 1:
                raise InvalidArgumentError(
                    f"the repository holds {len(spaces)} workspaces ({', '.join(spaces)}); "
                    "choose one",
                    self._path,
                )
            workspace = spaces[0]
        elif workspace not in spaces:
            raise SnapshotNotFoundError("no persisted snapshots of this workspace", workspace)
        self._workspace = workspace
        self._spaces = spaces
        self._stored: dict[str, git.StoredSnapshot] = {}

    def info(self) -> TargetInfo:
        return TargetInfo(
            "git",
            self._workspace,
            self._path,
            {"workspace_id": self._workspace, "workspaces": self._spaces},
        )

    def _list(self) -> Sequence[git.StoredSnapshot]:
        stored = git.list_snapshots(self._path, self._workspace)
        with self._lock:
            self._stored = {str(item.record.snapshot_id): item for item in stored}
        return stored

    def _find(self, snapshot: str) -> git.StoredSnapshot:
        found = self._stored.get(snapshot)
        if found is None:  # persisted since the last listing, perhaps
            found = {str(s.record.snapshot_id): s for s in self._list()}.get(snapshot)
        if found is None:
            raise SnapshotNotFoundError("no such snapshot", snapshot)
        return found

    def snapshots(self, *, space: bool = True) -> Sequence[SnapshotSummary]:
        stored = self._list()
        by_commit = {item.commit: str(item.record.snapshot_id) for item in stored}
        summaries = []
        with self._lock:
            for number, item in enumerate(stored, 1):
                commit = self._repo[item.commit]
                parents: list[str] = (
                    [str(p) for p in commit.parent_ids] if isinstance(commit, pygit2.Commit) else []
                )
                parent = next((by_commit[p] for p in parents if p in by_commit), None)
                record = item.record
                summaries.append(
                    SnapshotSummary(
                        id=str(record.snapshot_id),
                        number=number,
                        created_at=record.created_at,
                        tag=record.tag,
                        parent=parent,
                        file_count=record.file_count,
                        total_bytes=record.total_bytes,
                        origin=origin_from_tag(record.tag),
                        source=f"commit {item.commit[:12]}",
                    )
                )
        return summaries

    def details(self, snapshot: str) -> Mapping[str, Any]:
        item = self._find(snapshot)
        return {"record": item.record.to_dict(), "commit": item.commit, "ref": item.ref}

    # -- reading one commit's tree -------------------------------------------------

    def _resolve(self, snapshot: str, path: str) -> tuple[int, pygit2.Object]:
        """(mode, object) at ``path`` in the snapshot's tree; call with the lock held."""
        item = self._find(snapshot)
        try:
            commit = self._repo[item.commit]
            if not isinstance(commit, pygit2.Commit):
                raise SnapshotError(f"{item.commit} is not a commit", self._path)
            current: pygit2.Object = commit.tree
            mode = git.MODE_TREE
            for segment in path.split("/") if path else ():
                if not isinstance(current, pygit2.Tree):  # a path through a file
                    raise NotFoundError("no such file or directory", path)
                raw = segment.encode("utf-8", "surrogateescape")
                found = next((entry for entry in current if entry.raw_name == raw), None)
                if found is None:
                    raise NotFoundError("no such file or directory", path)
                mode = int(found.filemode)
                current = self._repo[found.id]
            return mode, current
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise SnapshotError(f"damaged snapshot {snapshot}: {exc}", self._path) from exc

    def _entry(self, path: str, mode: int, oid: pygit2.Oid) -> TreeEntry:
        kind = _kind(mode)
        if kind == "file":
            return TreeEntry(path, "file", self._repo.odb.read_header(oid)[1], mode)
        if kind == "symlink":
            target = _name(bytes(self._repo.odb.read(oid)[1]))
            return TreeEntry(path, "symlink", len(target), mode, target)
        return TreeEntry(path, "directory" if kind == "directory" else "other", 0, mode)

    def list(self, snapshot: str, path: str) -> Sequence[TreeEntry]:
        with self._lock:
            _, tree = self._resolve(snapshot, path)
            if not isinstance(tree, pygit2.Tree):
                raise NotADirectoryFsError("not a directory", path)
            try:
                entries = [
                    self._entry(
                        f"{path}/{_name(e.raw_name)}" if path else _name(e.raw_name),
                        int(e.filemode),
                        e.id,
                    )
                    for e in tree
                ]
            except (KeyError, ValueError, pygit2.GitError) as exc:
                raise SnapshotError(f"damaged snapshot {snapshot}: {exc}", self._path) from exc
        return sorted(entries, key=lambda entry: entry.path)

    def walk(self, snapshot: str, *, after: str = "") -> Iterator[TreeEntry]:
        with self._lock:
            _, root = self._resolve(snapshot, "")  # an unknown snapshot raises now
        trees: dict[str, pygit2.Oid] = {}

        def children(entry: TreeEntry | None) -> list[TreeEntry]:
            # One directory per lock hold: the stream is read from several threads.
            with self._lock:
                prefix = "" if entry is None else entry.path + "/"
                try:
                    tree = root if entry is None else self._repo[trees.pop(entry.path)]
                    if not isinstance(tree, pygit2.Tree):
                        raise SnapshotError(f"{prefix} is no tree", self._path)
                    found = []
                    for item in tree:
                        path, mode = prefix + _name(item.raw_name), int(item.filemode)
                        if mode == git.MODE_TREE:
                            trees[path] = item.id
                        found.append(self._entry(path, mode, item.id))
                    return found
                except (KeyError, ValueError, pygit2.GitError) as exc:
                    raise SnapshotError(f"damaged snapshot {snapshot}: {exc}", self._path) from exc

        return depth_first(children, after=after)

    def stat(self, snapshot: str, path: str) -> TreeEntry:
        with self._lock:
            mode, found = self._resolve(snapshot, path)
            return self._entry(path, mode, found.id)

    def _blob(self, snapshot: str, path: str) -> pygit2.Blob:
        with self._lock:
            mode, found = self._resolve(snapshot, path)
            if isinstance(found, pygit2.Tree):
                raise IsADirectoryFsError("is a directory", path)
            if _kind(mode) != "file" or not isinstance(found, pygit2.Blob):
                raise NotFoundError("not a regular file", path)
            return found

    # libgit2 inflates a blob whole: the views below copy only what they hand out.

    def read(self, snapshot: str, path: str, limit: int) -> bytes:
        return bytes(memoryview(self._blob(snapshot, path))[:limit])

    def blocks(self, snapshot: str, path: str) -> Iterator[bytes]:
        data = memoryview(self._blob(snapshot, path))
        return (bytes(data[start : start + BLOCK]) for start in range(0, len(data), BLOCK))

    def diff(self, base: str, target: str) -> Changes:
        before, after = self._find(base), self._find(target)
        added: list[str] = []
        modified: list[str] = []
        deleted: list[str] = []
        with self._lock:
            try:
                old, new = self._repo[before.commit], self._repo[after.commit]
                if not isinstance(old, pygit2.Commit) or not isinstance(new, pygit2.Commit):
                    raise SnapshotError("a snapshot ref names no commit", self._path)
                for delta in self._repo.diff(old.tree, new.tree).deltas:
                    status = delta.status_char()
                    if status == "A":
                        added.append(_name(delta.new_file.raw_path))
                    elif status == "D":
                        deleted.append(_name(delta.old_file.raw_path))
                    else:  # M, or T for a file that became a symlink or back
                        modified.append(_name(delta.new_file.raw_path))
            except (KeyError, ValueError, pygit2.GitError) as exc:
                raise SnapshotError(f"cannot diff {base} and {target}: {exc}", self._path) from exc
        unchanged = after.record.file_count - len(added) - len(modified)
        return Changes(
            tuple(sorted(added)), tuple(sorted(modified)), tuple(sorted(deleted)), unchanged
        )

    def attribution(self, snapshot: str) -> Attribution | None:
        item = self._find(snapshot)
        with self._lock:
            commit = self._repo[item.commit]
            if not isinstance(commit, pygit2.Commit):
                raise SnapshotError(f"{item.commit} is not a commit", self._path)
            steps = git.recorded_changes(self._repo, commit)
        if steps is None:
            return None
        # One commit records every kept snapshot since the one persisted before it.
        listed = list(self._stored)
        found = [Attribution.of(step, listed) for step in steps]
        if not found:
            return Attribution(None, {})
        return Attribution(found[-1].base, merged([step.paths for step in found]))

    def warm(self) -> None:
        self._list()

    def close(self) -> None:
        with self._lock:
            self._repo.free()
