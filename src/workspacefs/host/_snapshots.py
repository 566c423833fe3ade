"""Snapshots of a host directory as commits in an external bare git repository.

The repository lives outside the root (agents cannot touch it). Nothing here
hands libgit2 a path inside the root: capture walks the root through
descriptors and hashes each file's bytes as they are (no ``.gitattributes``
filter, no line-ending conversion, no ``$Id$`` expansion), and restore
writes each file from the commit's tree through descriptors, replacing
whatever stands in the way (a planted symlink is replaced, never followed).

* The repository's index file is the stat cache: a file whose stat still
  matches its entry is not read again, so capture costs a walk of ``lstat``
  calls plus the files that changed, and restore rewrites only what differs
  from the commit (subtrees whose tree ids match are not even listed).
* Everything is captured, ignored files too, and the exec bit. A nested
  repository is a directory like any other: its ``.git`` is captured too,
  under an escaped name git accepts (``git.tree_name``), so a snapshot
  restores it exactly. Empty directories, fifos and sockets are not
  captured; restore removes them, as ``git clean -dfx`` would.
* The repository records which directory it belongs to (``workspacefs.root``
  in its config), and a snapshot record is honoured only for a commit one of
  its snapshot refs names: a record is data, never a path to follow.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat as _stat
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pygit2
from pygit2.enums import ObjectType

from .._errors import (
    InvalidArgumentError,
    SnapshotCreationError,
    SnapshotNotFoundError,
    SnapshotRestoreError,
)
from ..fs import FilesystemDiff, FilesystemSnapshot, SnapshotRef
from ..git import (
    EMPTY_TREE,
    MODE_EXECUTABLE,
    MODE_FILE,
    MODE_LINK,
    MODE_TREE,
    Identity,
    RefNamespace,
    create_repository,
    decode_name,
    encode_name,
    read_blob,
    read_tree,
    tree_name,
    workspace_name,
    write_trees,
)
from ..posix import (
    Walked,
    make_directories,
    open_regular,
    read_blocks,
    remove_entry,
    replace_directory,
    replace_file,
    replace_symlink,
    scan_directory,
    walk_directory,
)
from ._index import IndexEntry, index_entry, matches, read_index, write_index

_REFS = RefNamespace.for_workspace("host")  # the directory's snapshots, one workspace
_OWNER_KEY = "workspacefs.root"
_COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
_META_TRAILER = "Workspacefs-Meta: "
_EMPTY_DIRECTORIES = "empty-directories"
_STREAM_ABOVE = 16 << 20
"""Files larger than this are hashed as a stream rather than read whole."""


def git_mode(mode: int) -> int | None:
    """The git mode of an ``lstat`` mode; None for what git does not hold."""
    if _stat.S_ISLNK(mode):
        return MODE_LINK
    if _stat.S_ISREG(mode):
        return MODE_EXECUTABLE if mode & 0o100 else MODE_FILE
    if _stat.S_ISDIR(mode):
        return MODE_TREE
    return None


@dataclass
class Captured:
    """The directory as git sees it, as of one capture."""

    files: dict[str, tuple[int, pygit2.Oid]] = field(default_factory=dict)
    """Tree path (escaped names) -> (mode, blob id) of every file and symlink."""
    trees: dict[str, pygit2.Oid] = field(default_factory=dict)
    """Tree path of every directory holding files -> its tree id ("" is the root)."""
    untracked: set[str] = field(default_factory=set)
    """Tree paths of directories holding what a tree cannot (empty directories,
    fifos, sockets), and their ancestors: restore must look inside them."""
    empty: set[str] = field(default_factory=set)
    """Tree paths of directories with no file below them (a git tree cannot hold them:
    a snapshot records them beside its commit)."""
    index: dict[str, IndexEntry] = field(default_factory=dict)
    total_bytes: int = 0
    hashed: bool = False
    """True if anything was read (or is gone) since the cache: the index needs writing."""


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def hash_file(repo: pygit2.Repository, fd: int, size: int) -> pygit2.Oid:
    """Write the open file's bytes as a blob (streamed when large); closes ``fd``."""
    if size > _STREAM_ABOVE:
        with io.FileIO(fd, "rb") as stream:
            return repo.create_blob_fromiobase(stream)
    return repo.odb.write(ObjectType.BLOB, b"".join(read_blocks(fd)))


def capture(
    repo: pygit2.Repository, root: int, cache: dict[str, IndexEntry], written_ns: int
) -> Captured:
    """Hash the directory open as ``root`` into ``repo``, except what ``cache`` vouches for."""
    found = Captured()
    tree_dirs: dict[str, str] = {"": ""}  # workspace path -> tree path, of each directory
    holding: set[str] = {""}  # tree paths of directories with a file somewhere below
    odb = repo.odb
    for walked in walk_directory(root):
        parent = tree_dirs.get(_parent(walked.path))
        if parent is None:
            continue  # below a directory that was not entered
        info = walked.info
        mode = git_mode(info.st_mode)
        if mode is None:  # a fifo, socket or device
            found.untracked.add(parent)
            continue
        path = _join(parent, tree_name(walked.name, mode))
        if mode == MODE_TREE:
            tree_dirs[walked.path] = path
            continue
        cached = cache.get(path)
        if cached is not None and cached.mode == mode and matches(cached, info, written_ns):
            found.files[path] = (mode, cached.oid)
            found.index[path] = cached
            found.total_bytes += info.st_size
            if parent not in holding:
                _mark(holding, parent)
            continue
        found.hashed = True
        hashed = _hash_entry(repo, walked, mode)
        if hashed is None:
            continue  # gone, or replaced by something else since listed
        mode, oid, info = hashed
        found.files[path] = (mode, oid)
        found.index[path] = index_entry(path, mode, oid, info)
        found.total_bytes += info.st_size
        _mark(holding, parent)
    if len(found.index) != len(cache):
        found.hashed = True
    found.empty = set(tree_dirs.values()) - holding
    found.untracked.update(_parent(path) for path in found.empty)
    _add_ancestors(found.untracked)
    found.trees = write_trees(odb, found.files)
    return found


def _hash_entry(
    repo: pygit2.Repository, walked: Walked, mode: int
) -> tuple[int, pygit2.Oid, os.stat_result] | None:
    """Write the file or symlink ``walked`` as a blob: its git mode, blob id and the stat
    of what was read; None if it is gone, or no longer what was listed."""
    if mode == MODE_LINK:
        try:
            target = os.readlink(walked.name, dir_fd=walked.parent)
        except OSError:
            return None
        return mode, repo.odb.write(ObjectType.BLOB, encode_name(target)), walked.info
    try:
        fd = open_regular(walked.parent, walked.name)
    except OSError:
        return None
    info = os.fstat(fd)  # the stat of what is read, taken before reading it
    return git_mode(info.st_mode) or MODE_FILE, hash_file(repo, fd, info.st_size), info


def _add_ancestors(paths: set[str]) -> None:
    """Add to ``paths`` every ancestor of the tree paths it holds."""
    for path in list(paths):
        while path:
            path = _parent(path)
            paths.add(path)


def _mark(marked: set[str], directory: str) -> None:
    """Add ``directory`` and its ancestors to ``marked``, which holds the ancestors of
    every directory it holds."""
    while directory not in marked:
        marked.add(directory)
        directory = _parent(directory)


def tree_files(odb: pygit2.Odb, tree: pygit2.Oid) -> dict[str, tuple[int, pygit2.Oid]]:
    """Tree path -> (mode, id) of every file and symlink below ``tree``."""
    files: dict[str, tuple[int, pygit2.Oid]] = {}
    stack = [("", tree)]
    while stack:
        prefix, oid = stack.pop()
        for raw, mode, child in read_tree(odb, oid):
            path = _join(prefix, decode_name(raw))
            if mode == MODE_TREE:
                stack.append((path, child))
            else:
                files[path] = (mode, child)
    return files


def restore_tree(
    repo: pygit2.Repository,
    root: int,
    target: pygit2.Oid,
    empty: set[str],
    current: Captured,
) -> dict[str, IndexEntry]:
    """Make the directory open as ``root`` hold exactly the tree ``target`` and the
    empty directories ``empty`` (tree paths).

    ``current`` is a capture taken just before. Only directories whose tree
    differs, or that hold (or must hold) what trees cannot, are listed; only
    files whose (mode, blob) differ are written. Returns the index entries of
    what was written.
    """
    odb = repo.odb
    written: dict[str, IndexEntry] = {}
    empty_below: dict[str, list[str]] = {}  # tree path -> names of the empty directories in it
    visit = set(current.untracked)  # tree paths listed whatever their tree ids
    for path in empty:
        parent, _, name = path.rpartition("/")
        empty_below.setdefault(parent, []).append(name)
        _mark(visit, parent)
    pending = [("", "", target)]  # (workspace path, tree path, tree id)
    while pending:
        path, tree_path, tree = pending.pop()
        if current.trees.get(tree_path) == tree and tree_path not in visit:
            continue
        directory = make_directories(root, path, replace=True)
        try:
            wanted = _wanted(odb, tree, empty_below.get(tree_path, ()))
            present = dict(scan_directory(directory))
            for name in present.keys() - wanted.keys():
                remove_entry(directory, name)
            for name, (stored, mode, oid) in wanted.items():
                child = _join(tree_path, stored)
                kind = present.get(name)
                if mode == MODE_TREE:
                    if kind != _stat.S_IFDIR:
                        os.close(replace_directory(directory, name))
                    pending.append((_join(path, name), child, oid))
                    continue
                wanted_kind = _stat.S_IFLNK if mode == MODE_LINK else _stat.S_IFREG
                if current.files.get(child) == (mode, oid) and kind == wanted_kind:
                    continue
                info = _write_blob(odb, directory, name, mode, oid)
                written[child] = index_entry(child, mode, oid, info)
        finally:
            os.close(directory)
    return written


def _wanted(
    odb: pygit2.Odb, tree: pygit2.Oid, empty_names: Iterable[str]
) -> dict[str, tuple[str, int, pygit2.Oid]]:
    """Workspace name -> (tree name, git mode, id) of what a directory must hold: the
    entries of its ``tree``, and the empty directories named ``empty_names``."""
    wanted = {workspace_name(stored): (stored, MODE_TREE, EMPTY_TREE) for stored in empty_names}
    if tree != EMPTY_TREE:
        for raw, mode, oid in read_tree(odb, tree):
            stored = decode_name(raw)
            wanted[workspace_name(stored)] = (stored, mode, oid)
    return wanted


def _write_blob(
    odb: pygit2.Odb, directory: int, name: str, mode: int, oid: pygit2.Oid
) -> os.stat_result:
    """Make ``name`` in ``directory`` the file or symlink of git ``mode`` holding the
    blob ``oid``; return its ``lstat``."""
    data = read_blob(odb, oid)
    if mode == MODE_LINK:
        return replace_symlink(directory, name, decode_name(data))
    permissions = 0o755 if mode == MODE_EXECUTABLE else 0o644
    return replace_file(directory, name, data, mode=permissions)


class GitSnapshots:
    """The ``git`` snapshot strategy of ``HostFilesystem``.

    Args:
        root: The directory's real path (recorded in snapshots).
        descriptor: An open descriptor of the root, owned by the caller.
        git_dir: The repository (default: a new temporary directory).
    """

    name = "git"

    def __init__(self, root: str, descriptor: int, git_dir: str | None) -> None:
        self._root = root
        self._fd = descriptor
        self._git_dir = git_dir
        self._repo: pygit2.Repository | None = None
        # The parsed index, and the (mtime, size, inode) of the file it was parsed from.
        self._cache: tuple[tuple[int, int, int], dict[str, IndexEntry]] | None = None

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
            create_repository(git_dir)  # it holds every file of the root: its owner's only
        repo = pygit2.Repository(git_dir)
        owner = _config(repo, _OWNER_KEY)
        if owner is not None and owner != self._root:
            raise InvalidArgumentError(f"the git dir keeps snapshots of {owner}", git_dir)
        if owner is None:
            repo.config[_OWNER_KEY] = self._root
        repo.config["core.filemode"] = "true"
        repo.config["core.symlinks"] = "true"
        repo.config["gc.auto"] = "0"
        self._repo = repo
        return repo

    def _read_cache(self, index: str) -> tuple[dict[str, IndexEntry], int]:
        """The stat cache and when it was written (parsed again only if the file changed)."""
        try:
            info = os.stat(index)
        except FileNotFoundError:
            return {}, 0
        key = (info.st_mtime_ns, info.st_size, info.st_ino)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, {entry.path: entry for entry in read_index(index) or []})
        return self._cache[1], info.st_mtime_ns

    def _write_cache(self, index: str, entries: dict[str, IndexEntry]) -> None:
        write_index(index, entries.values())
        info = os.stat(index)
        self._cache = ((info.st_mtime_ns, info.st_size, info.st_ino), entries)

    def _capture(self) -> tuple[pygit2.Repository, Captured]:
        repo = self._repository()
        index = os.path.join(repo.path, "index")
        cache, written = self._read_cache(index)
        try:
            found = capture(repo, self._fd, cache, written)
        except OSError as exc:
            raise SnapshotCreationError(f"cannot read the workspace: {exc}", self._root) from exc
        if found.hashed:
            self._write_cache(index, found.index)
        return repo, found

    def snapshot(self, tag: str | None, parent: uuid.UUID | None) -> FilesystemSnapshot:
        try:
            repo, found = self._capture()
            number = _REFS.next_number(repo)
            parents = [repo.references[_REFS.snapshot(number - 1)].target] if number > 1 else []
            now = datetime.now(UTC)
            signature = Identity().signature(now)
            message = tag or f"snapshot {now.isoformat()}"
            if found.empty:  # what the tree cannot hold, in a metadata commit beside it
                listing = b"\0".join(encode_name(path) for path in sorted(found.empty))
                blob = repo.odb.write(ObjectType.BLOB, listing)
                tree = write_trees(repo.odb, {_EMPTY_DIRECTORIES: (MODE_FILE, blob)})[""]
                meta = repo.create_commit(
                    None, signature, signature, f"workspacefs metadata {number}\n", tree, []
                )
                repo.references.create(_REFS.meta(number), meta)
                message += f"\n\n{_META_TRAILER}{meta}\n"
            commit = repo.create_commit(
                None, signature, signature, message, found.trees[""], parents
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
            file_count=len(found.files),
            total_bytes=found.total_bytes,
        )

    def _adopt(self, repository: str | None) -> None:
        """Use the store a record names, if it is one this directory's snapshots made."""
        if self._git_dir is not None:
            if repository is not None and os.path.realpath(repository) != os.path.realpath(
                self._git_dir
            ):
                raise SnapshotNotFoundError("the snapshot is kept in another store", repository)
            return
        if repository is None or not os.path.isfile(os.path.join(repository, "HEAD")):
            raise SnapshotNotFoundError("the snapshot's git dir is gone", repository)
        try:
            owner = _config(pygit2.Repository(repository), _OWNER_KEY)
        except pygit2.GitError:
            owner = None
        if owner != self._root:
            raise SnapshotNotFoundError("not a snapshot store of this directory", repository)
        self._git_dir = repository

    def _commit(self, snapshot: FilesystemSnapshot) -> pygit2.Commit:
        ref = snapshot.ref
        if ref.kind != "git" or not _COMMIT_ID.match(ref.location):
            raise SnapshotNotFoundError("not a git snapshot record", ref.location)
        self._adopt(ref.repository)
        repo = self._repository()
        ours = {repo.references[_REFS.snapshot(n)].target for n in _REFS.numbers(repo)}
        oid = pygit2.Oid(hex=ref.location)
        if oid not in ours:
            raise SnapshotNotFoundError("no such snapshot in this store", ref.location)
        commit = repo.get(oid)
        if not isinstance(commit, pygit2.Commit):
            raise SnapshotNotFoundError("not a snapshot commit", ref.location)
        return commit

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        commit = self._commit(snapshot)
        try:
            repo, current = self._capture()
            empty = _empty_directories(repo, commit)
            written = restore_tree(repo, self._fd, commit.tree_id, empty, current)
            target = tree_files(repo.odb, commit.tree_id)
        except (pygit2.GitError, OSError) as exc:
            raise SnapshotRestoreError(f"restore failed: {exc}", self._root) from exc
        index = {
            path: written.get(path) or current.index[path]
            for path, wanted in target.items()
            if path in written or current.files.get(path) == wanted
        }
        self._write_cache(os.path.join(repo.path, "index"), index)

    def diff(self, base: FilesystemSnapshot, target: FilesystemSnapshot | None) -> FilesystemDiff:
        before_tree = self._commit(base).tree_id
        if target is not None:
            repo, after_tree = self._repository(), self._commit(target).tree_id
        else:
            repo, found = self._capture()
            after_tree = found.trees[""]
        before = _workspace_paths(tree_files(repo.odb, before_tree))
        after = _workspace_paths(tree_files(repo.odb, after_tree))
        added = sorted(after.keys() - before.keys())
        deleted = sorted(before.keys() - after.keys())
        modified = sorted(p for p in after.keys() & before.keys() if after[p] != before[p])
        return FilesystemDiff(
            tuple(added), tuple(modified), tuple(deleted), len(after) - len(added) - len(modified)
        )

    def delete(self, snapshot: FilesystemSnapshot) -> None:
        """Drop a snapshot's refs (its commit stays until git collects it); the newest
        snapshot, which the next one is parented to, is kept."""
        commit = self._commit(snapshot)
        repo = self._repository()
        numbers = _REFS.numbers(repo)
        for number in numbers[:-1]:
            if repo.references[_REFS.snapshot(number)].target == commit.id:
                for ref in (_REFS.snapshot(number), _REFS.meta(number)):
                    if ref in repo.references:
                        repo.references.delete(ref)

    def cleanup(self) -> None:
        if self._git_dir is not None and os.path.isdir(self._git_dir):
            shutil.rmtree(self._git_dir)
        self._repo = None


def _empty_directories(repo: pygit2.Repository, commit: pygit2.Commit) -> set[str]:
    """The empty directories (tree paths) a snapshot commit's metadata records."""
    for line in commit.message.splitlines():
        if line.startswith(_META_TRAILER):
            meta = repo.get(line[len(_META_TRAILER) :].strip())
            if not isinstance(meta, pygit2.Commit):
                raise SnapshotRestoreError("the snapshot's metadata is missing", str(commit.id))
            for raw, _, oid in read_tree(repo.odb, meta.tree_id):
                if raw == _EMPTY_DIRECTORIES.encode():
                    listing = read_blob(repo.odb, oid)
                    return {decode_name(path) for path in listing.split(b"\0") if path}
    return set()


def _workspace_paths(
    files: dict[str, tuple[int, pygit2.Oid]],
) -> dict[str, tuple[int, pygit2.Oid]]:
    return {"/".join(map(workspace_name, p.split("/"))): v for p, v in files.items()}


def _config(repo: pygit2.Repository, key: str) -> str | None:
    try:
        return str(repo.config[key])
    except KeyError:
        return None
