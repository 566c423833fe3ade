"""Persist snapshots as git commits, incrementally.

A persisted snapshot is two commits (see docs/git.md):

* the **snapshot commit**, whose tree is exactly the workspace (files
  100644/100755, symlinks 120000, directories as trees), so ``git log``,
  ``git diff`` and ``git worktree add`` work on it; a name git refuses in a
  tree (a nested ``.git``) is stored escaped (``tree_name``) and its entry in
  the metadata records ``stored_as``, so ``git fsck --strict`` accepts it and
  ``load`` restores the real name;
* the **metadata commit**, whose tree mirrors the directories, each holding
  a ``meta`` blob (JSON) with what git trees cannot hold: full modes,
  owners, times, xattrs, hard links, empty directories, fifos and devices.
  The snapshot commit names it in its ``Workspacefs-Meta:`` trailer. Its
  message (or, when long, a ``history`` blob in its root) holds the changes
  since the last snapshot in the repository and who made them (``_history``).

Incremental: the tree's change sets say which inodes changed since the last
persisted version; only their directories and the directories above them
are rewritten, every other subtree keeps its id, and unchanged files keep
their blob ids without being read or hashed.

Bounded memory: a file larger than ``STREAM_ABOVE`` goes into a pack in
pieces (``PackWriter.add_stream``), never as one ``bytes``. A git blob holds
no holes, so a file is written (and read back, and checked out) at its full
size whatever the tree holds of it: one larger than ``max_file_bytes`` (by
default the workspace's memory budget, see ``persist``) is refused before
anything is written.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import pygit2
from pygit2.enums import ObjectType

from .._errors import (
    InvalidArgumentError,
    LimitExceededError,
    SnapshotCreationError,
    SnapshotError,
    SnapshotNotFoundError,
)
from ..fs import FilesystemSnapshot, InMemoryFilesystem, PersistedSnapshot
from ..tree import ROOT_INO, Directory, File, Node, Special, Symlink, Tree, Version, make_way
from ._directories import default_repository
from ._history import (
    INLINE_HISTORY,
    encode_history,
    history_to_persist,
    with_history,
    without_history,
)
from ._objects import (
    EMPTY_TREE,
    MODE_EXECUTABLE,
    MODE_FILE,
    MODE_LINK,
    MODE_TREE,
    TreeEntry,
    encode_name,
    encode_tree,
    read_tree,
    tree_name,
)
from ._pack import DEFAULT_COMPRESSION, PackWriter
from ._refs import RefNamespace
from ._repo import Identity, open_repository
from ._state import PersistState, state_for

META_BLOB = b"meta"
DIR_PREFIX = b"d:"
PACK_THRESHOLD = 1000
"""Persists touching more inodes than this write one pack instead of loose objects."""
STREAM_ABOVE = 1 << 20
"""Files larger than this go to git in pieces of this size, through a pack (pygit2
offers no streamed write of loose objects but ``create_blob_fromiobase``, which
copies the whole file to a temporary file first)."""

ObjectSink = Callable[[int, bytes], pygit2.Oid]
"""Writes one object (kind, raw data) and returns its id."""


@dataclass(frozen=True, slots=True)
class Progress:
    """Reported while persisting or loading: ``done`` of ``total`` items in ``phase``."""

    phase: str
    done: int
    total: int


ProgressHook = Callable[[Progress], None]


def entry_metadata(node: Node, link_group: int | None) -> dict[str, Any]:
    """What git cannot hold about one entry, as JSON-ready values."""
    meta: dict[str, Any] = {
        "mode": node.mode,
        "uid": node.uid,
        "gid": node.gid,
        "atime": node.atime_ns,
        "mtime": node.mtime_ns,
        "ctime": node.ctime_ns,
    }
    if isinstance(node, File):
        meta["size"] = node.size
    if isinstance(node, Special):
        meta["rdev"] = node.rdev
    if node.xattrs:
        meta["xattrs"] = {
            base64.b64encode(k).decode(): base64.b64encode(v).decode()
            for k, v in sorted(node.xattrs.items())
        }
    if link_group is not None:
        meta["link"] = link_group
    return meta


class _Writer:
    """Builds the trees of one version, reusing what the state already has."""

    def __init__(
        self,
        repository: pygit2.Repository,
        compression: int,
        big: bool,
        version: Version,
        state: PersistState,
        changed: set[int] | None,
        progress: ProgressHook | None,
    ) -> None:
        self.repository = repository
        self.compression = compression
        self.odb = repository.odb
        self.pack = PackWriter(repository, compression=compression) if big else None
        self.sink: ObjectSink = self.pack.add if self.pack is not None else self.odb.write
        self.version = version
        self.state = state
        self.changed = changed  # None: everything is new
        self.progress = progress
        self.objects = 0
        self.dir_trees: dict[int, pygit2.Oid] = {}
        self.meta_trees: dict[int, pygit2.Oid] = {}
        self.blobs: dict[int, tuple[Hashable, pygit2.Oid]] = {}
        self.root_meta: list[TreeEntry] | None = None  # the root's entries, if rewritten

    def dirty_directories(self) -> list[int]:
        """Directories to rewrite, deepest first."""
        version = self.version
        if self.changed is None:
            dirs = [ROOT_INO] + [ino for _, ino, n in version.walk() if isinstance(n, Directory)]
        else:
            marked: set[int] = set()
            for ino in self.changed:
                node = version.get(ino)
                if node is None:
                    continue  # gone: its directory's entry changed, so it is listed too
                starts = [ino] if isinstance(node, Directory) else [p for p, _ in node.links]
                for current in starts:
                    while current not in marked:
                        marked.add(current)
                        if current == ROOT_INO:
                            break
                        current = version.node(current).links[0][0]
            dirs = list(marked)
        depth: dict[int, int] = {ROOT_INO: 0}

        def depth_of(ino: int) -> int:
            chain = []
            while ino not in depth:
                chain.append(ino)
                ino = version.node(ino).links[0][0]
            base = depth[ino]
            for offset, item in enumerate(reversed(chain), start=1):
                depth[item] = base + offset
            return depth[chain[0]] if chain else base

        return sorted(dirs, key=depth_of, reverse=True)

    def blob_for(self, ino: int, node: File | Symlink) -> pygit2.Oid:
        if ino in self.blobs:  # written ahead, in parallel
            return self.blobs[ino][1]
        make_way()
        key = content_key(node)
        found = reusable_blob(self.state, self.changed, self.odb, ino, node)
        if found is not None:
            self.blobs[ino] = found
            return found[1]
        if isinstance(node, File) and node.size > STREAM_ABOVE:
            oid = self.streaming_pack().add_stream(ObjectType.BLOB, node.size, blob_pieces(node))
        else:
            oid = self.sink(ObjectType.BLOB, blob_bytes(node))
        self.objects += 1
        self.blobs[ino] = (key, oid)
        return oid

    def streaming_pack(self) -> PackWriter:
        """The pack large files stream into: this persist's pack, made on first use
        by a persist that writes loose objects otherwise."""
        if self.pack is None:
            self.pack = PackWriter(self.repository, compression=self.compression)
        return self.pack

    def write_all_blobs(self, pack: PackWriter) -> None:
        """A first persist: hash and compress every small file in parallel into the
        pack; each large one is streamed there after them."""
        nodes = [
            (ino, node)
            for _, ino, node in self.version.walk()
            if isinstance(node, File | Symlink) and stored_blob(node, self.odb) is None
        ]
        unique = list(dict(nodes).items())  # hard links: one blob per inode
        small = [(i, n) for i, n in unique if not (isinstance(n, File) and n.size > STREAM_ABOVE)]
        data = ((ObjectType.BLOB, _made_way(blob_bytes(node))) for _, node in small)
        for (ino, node), oid in zip(small, pack.add_many(data), strict=True):
            self.blobs[ino] = (content_key(node), oid)
            self.objects += 1
        for ino, node in unique:
            if ino not in self.blobs:
                self.blob_for(ino, node)

    def build(self) -> pygit2.Oid:
        """Write the workspace tree and the metadata trees below the root; return the
        workspace tree's id (``meta_root`` writes the metadata root)."""
        version = self.version
        if self.changed is None and self.pack is not None:
            self.write_all_blobs(self.pack)
        dirty = self.dirty_directories()
        hard_links: dict[int, int] = {}
        for count, ino in enumerate(dirty, start=1):
            make_way()  # to a mount of this process (``tree._turns``)
            directory = version.node(ino)
            assert isinstance(directory, Directory)
            entries, meta_entries, meta = self.list_directory(directory, hard_links)
            if ino == ROOT_INO:
                meta["."] = entry_metadata(directory, None)
            self.dir_trees[ino] = (
                self.sink(ObjectType.TREE, encode_tree(entries)) if entries else EMPTY_TREE
            )
            record = json.dumps(meta, sort_keys=True).encode("utf-8", "surrogateescape")
            meta_entries.append((META_BLOB, MODE_FILE, self.sink(ObjectType.BLOB, record)))
            self.objects += 3
            if ino == ROOT_INO:  # written with the history, by ``meta_root``
                self.root_meta = meta_entries
                continue
            self.meta_trees[ino] = self.sink(ObjectType.TREE, encode_tree(meta_entries))
            if self.progress is not None and count % 256 == 0:
                self.progress(Progress("trees", count, len(dirty)))
        root = self.dir_trees.get(ROOT_INO) or self.state.dir_trees[ROOT_INO]
        if root == EMPTY_TREE:
            root = self.sink(ObjectType.TREE, b"")
        return root

    def list_directory(
        self, directory: Directory, hard_links: dict[int, int]
    ) -> tuple[list[TreeEntry], list[TreeEntry], dict[str, Any]]:
        """The entries of ``directory``'s workspace tree, those of its metadata tree but
        the record, and the record's content; the blobs of its files are written.

        ``hard_links`` maps each inode with several links met so far to its group.
        """
        version = self.version
        entries: list[TreeEntry] = []
        meta_entries: list[TreeEntry] = []
        meta: dict[str, Any] = {}
        for name, child in directory.entries.items():
            node = version.node(child)
            group = None
            if not isinstance(node, Directory) and node.nlink > 1:
                group = hard_links.setdefault(child, child)
            meta[name] = entry_metadata(node, group)
            mode = git_mode(node)
            stored = name if mode is None else tree_name(name, mode)
            if stored != name:  # a name git refuses (a nested .git): kept escaped
                meta[name]["stored_as"] = stored
            raw = encode_name(stored)
            if isinstance(node, Directory):
                tree = self.dir_trees.get(child) or self.state.dir_trees[child]
                if tree != EMPTY_TREE:
                    entries.append((raw, MODE_TREE, tree))
                sub = self.meta_trees.get(child) or self.state.meta_trees[child]
                meta_entries.append((DIR_PREFIX + encode_name(name), MODE_TREE, sub))
            elif isinstance(node, File | Symlink):
                assert mode is not None
                entries.append((raw, mode, self.blob_for(child, node)))
        return entries, meta_entries, meta

    def meta_root(self, history: bytes) -> tuple[pygit2.Oid, str]:
        """Write the metadata commit's tree (the root's metadata tree) and return its
        id with the history text its message carries ("" if a blob in the tree does,
        see ``_history``)."""
        entries = self.root_meta
        rewritten = entries is not None
        if entries is None:  # the root was not rewritten: its tree is in the repository
            entries = read_tree(self.odb, self.state.meta_trees[ROOT_INO])
        kept = without_history(entries)
        text = ""
        if len(history) <= INLINE_HISTORY:
            text = history.decode("ascii")
            if rewritten or len(kept) != len(entries):
                tree = self.sink(ObjectType.TREE, encode_tree(kept))
                self.objects += 0 if rewritten else 1  # a rewritten root counted its tree
            else:
                tree = self.state.meta_trees[ROOT_INO]
        else:
            blob = self.sink(ObjectType.BLOB, history)
            tree = self.sink(ObjectType.TREE, encode_tree(with_history(kept, blob)))
            self.objects += 1 if rewritten else 2
        self.meta_trees[ROOT_INO] = tree
        return tree, text

    def commit_state(self, version: Version) -> None:
        """Adopt what was written as the state for the next persist."""
        state = self.state
        if self.changed is None:
            state.dir_trees, state.meta_trees, state.blobs = {}, {}, {}
        else:
            for ino in self.changed:
                if version.get(ino) is None:
                    state.dir_trees.pop(ino, None)
                    state.meta_trees.pop(ino, None)
                    state.blobs.pop(ino, None)
        state.dir_trees.update(self.dir_trees)
        state.meta_trees.update(self.meta_trees)
        state.blobs.update(self.blobs)
        state.version = version.alias()  # held apart from the snapshot's, for space accounting


def git_mode(node: Node) -> int | None:
    """The mode of ``node`` in the workspace tree; None for what only the metadata holds."""
    if isinstance(node, Directory):
        return MODE_TREE
    if isinstance(node, File):
        return MODE_EXECUTABLE if node.mode & 0o111 else MODE_FILE
    if isinstance(node, Symlink):
        return MODE_LINK
    return None


def content_key(node: File | Symlink) -> Hashable:
    """What names the blob of a file or symlink in the state's cache (see
    ``File.content_key``: the state keeps the keys of its last persisted version)."""
    return ("link", node.target) if isinstance(node, Symlink) else node.content_key


def stored_blob(node: File | Symlink, odb: pygit2.Odb | None) -> pygit2.Oid | None:
    """The blob id of a file not loaded yet whose blob this repository already has."""
    key = node.deferred_key if isinstance(node, File) else None
    return key if isinstance(key, pygit2.Oid) and odb is not None and key in odb else None


def reusable_blob(
    state: PersistState,
    changed: set[int] | None,
    odb: pygit2.Odb | None,
    ino: int,
    node: File | Symlink,
) -> tuple[Hashable, pygit2.Oid] | None:
    """(content key, blob id) of a file or symlink the repository already holds
    (``odb``; None: a repository yet to be made), or None if it must be written."""
    cached = state.blobs.get(ino)
    unchanged = changed is not None and ino not in changed
    if cached is not None and (unchanged or cached[0] == content_key(node)):
        return cached
    oid = stored_blob(node, odb)
    return None if oid is None else (content_key(node), oid)


def refuse_oversized(
    version: Version,
    changed: set[int] | None,
    state: PersistState,
    odb: pygit2.Odb | None,
    limit: int,
) -> None:
    """Raise ``LimitExceededError`` if persisting ``version`` would write a blob of a
    file larger than ``limit``: O(changes), like the persist it guards.

    Raises:
        LimitExceededError: Names the first such file, its size and the limit.
    """
    if changed is None:
        candidates: Iterator[tuple[int, Node]] = ((ino, n) for _, ino, n in version.walk())
    else:
        candidates = ((ino, n) for ino in changed if (n := version.get(ino)) is not None)
    for ino, node in candidates:
        if not isinstance(node, File) or node.size <= limit:
            continue
        if reusable_blob(state, changed, odb, ino, node) is not None:
            continue
        paths = version.paths(ino)
        if not paths:
            continue  # not reachable from the root: not persisted
        raise LimitExceededError(
            f"{paths[0]} is {node.size:,} bytes, over the limit of {limit:,} for one file "
            "in git (by default the workspace's memory budget): a git blob holds no holes, "
            "so the file would be written, and loaded back, at its full size. Delete or "
            "shrink it, or raise the limit (max_file_bytes=..., "
            "workspacefs persist --max-file-size SIZE)",
            paths[0],
        )


def _made_way(data: bytes) -> bytes:
    """``data``, once a mount of this process is not busy (``tree._turns``)."""
    make_way()
    return data


def blob_bytes(node: File | Symlink) -> bytes:
    """What git stores for a symlink or a small file (see ``blob_pieces``)."""
    if isinstance(node, Symlink):
        return encode_name(node.target)
    return node.read(0, node.size)


def blob_pieces(node: File) -> Iterator[bytes]:
    """What git stores for a file, ``STREAM_ABOVE`` bytes at a time (holes as zeros)."""
    for offset in range(0, node.size, STREAM_ABOVE):
        yield node.read(offset, STREAM_ABOVE)


def _message(record: FilesystemSnapshot, number: int, meta_commit: pygit2.Oid) -> str:
    title = f"workspacefs snapshot {number}" + (f": {record.tag}" if record.tag else "")
    trailers = {
        "Snapshot-Id": str(record.snapshot_id),
        "Created-At": record.created_at.isoformat(),
        "Workspace": record.workspace_id or "",
        "Files": str(record.file_count),
        "Bytes": str(record.total_bytes),
        "Workspacefs-Meta": str(meta_commit),
    }
    if record.tag:
        trailers["Tag"] = record.tag
    return title + "\n\n" + "".join(f"{k}: {v}\n" for k, v in trailers.items())


def persist(
    fs: InMemoryFilesystem,
    snapshot: FilesystemSnapshot,
    repo: str | os.PathLike[str] | None = None,
    *,
    identity: Identity | None = None,
    progress: ProgressHook | None = None,
    compression: int = DEFAULT_COMPRESSION,
    max_file_bytes: int | None = None,
) -> PersistedSnapshot:
    """Write ``snapshot`` of ``fs`` as a commit in the bare repository ``repo``.

    ``repo`` defaults to ``default_repository(fs.workspace_id)``, under the
    user's data directory. A first persist writes one pack at deflate level ``compression`` (2 by
    default, zlib-ng's: fast; 0 stores uncompressed, fastest, larger; ``git gc`` may
    recompress later). The repository is created if missing. Only what changed since the last
    snapshot persisted there from this tree is written; refs are updated
    last, so a failure leaves no ref to a half-written snapshot. File content
    goes to git in pieces, so memory never holds a whole file.

    ``max_file_bytes`` bounds the size of one file (default: the workspace's
    memory budget). A git blob cannot hold holes: a sparse file is written,
    and read back and checked out, at its full size, so a 64 GiB sparse file
    (free in the tree: ``truncate -s 64G``) would cost 64 GiB of work and disk
    to every reader of the repository. The budget is the natural bound: it is
    the most the workspace could hold of the file written out, and so the most
    a load of the snapshot can be asked to take back.

    Raises:
        SnapshotNotFoundError: The snapshot is not (or no longer) in ``fs``.
        LimitExceededError: A file to write is larger than ``max_file_bytes``;
            checked before anything is written (the repository is not even made).
        SnapshotCreationError: The repository cannot be written.
    """
    version = fs.version(snapshot)
    workspace = fs.workspace_id
    refs = RefNamespace.for_workspace(workspace)  # refuse names git cannot hold first
    if snapshot.tag:
        refs.tag(snapshot.tag)
    repo = repo if repo is not None else default_repository(workspace)
    existing, state, changed = _incremental(fs, version, repo)
    limit = fs.memory_budget if max_file_bytes is None else max_file_bytes
    refuse_oversized(version, changed, state, None if existing is None else existing.odb, limit)
    repository = existing or open_repository(repo, create=True)
    identity = identity or Identity()
    history = encode_history(history_to_persist(fs, snapshot, state))
    big = changed is None or len(changed) > PACK_THRESHOLD
    try:
        writer = _Writer(repository, compression, big, version, state, changed, progress)
        try:
            tree = writer.build()
            meta_tree, history_text = writer.meta_root(history)
        except BaseException:
            if writer.pack is not None:
                writer.pack.abort()
            raise
        if writer.pack is not None:
            writer.pack.finish()  # objects must be visible before commits name them
        parents, meta_parents = _parents(state, version)
        number = refs.next_number(repository)
        signature = identity.signature(snapshot.created_at)
        message = f"workspacefs metadata {number}\n" + (
            f"\n{history_text}\n" if history_text else ""
        )
        meta_commit = repository.create_commit(
            None, signature, signature, message, meta_tree, meta_parents
        )
        commit = repository.create_commit(
            None, signature, signature, _message(snapshot, number, meta_commit), tree, parents
        )
        # Refs last: the snapshot ref publishes a complete snapshot.
        references = repository.references
        references.create(refs.meta(number), meta_commit, force=True)
        references.create(refs.snapshot(number), commit, force=True)
        if snapshot.tag:
            references.create(refs.tag(snapshot.tag), commit, force=True)
    except (pygit2.GitError, OSError) as exc:
        raise SnapshotCreationError(f"cannot persist to {repo}: {exc}", str(repo)) from exc
    writer.commit_state(version)
    state.record = snapshot
    state.persisted.add(snapshot.snapshot_id)
    state.commits[version.history_key] = (commit, meta_commit)
    if progress is not None:
        progress(Progress("done", writer.objects, writer.objects))
    return PersistedSnapshot(
        str(commit),
        str(meta_commit),
        refs.snapshot(number),
        number,
        writer.objects + 2,
        snapshot,
        str(tree),
    )


def verify_persisted(repo: str | os.PathLike[str], persisted: PersistedSnapshot) -> None:
    """Check that ``repo`` still holds what ``persist`` answered: the commit under its
    ref, its tree the receipt's, and every object the tree reaches.

    Raises:
        SnapshotError: What is missing or differs.
    """
    repository = open_repository(repo)
    where = os.fspath(repo)
    try:
        commit = repository.get(persisted.commit)
        if not isinstance(commit, pygit2.Commit):
            raise SnapshotError(f"commit {persisted.commit} is missing", where)
        if str(commit.tree_id) != persisted.tree:
            raise SnapshotError(
                f"commit {persisted.commit} holds tree {commit.tree_id}, not {persisted.tree}",
                where,
            )
        reference = repository.references.get(persisted.ref)
        if reference is None or str(reference.target) != persisted.commit:
            raise SnapshotError(f"{persisted.ref} no longer names {persisted.commit}", where)
        odb, pending = repository.odb, [commit.tree_id]
        while pending:
            tree = repository.get(pending.pop())
            assert isinstance(tree, pygit2.Tree)
            for entry in tree:
                if entry.id not in odb:
                    raise SnapshotError(f"object {entry.id} ({entry.name}) is missing", where)
                if entry.type_str == "tree":
                    pending.append(entry.id)
    except (pygit2.GitError, ValueError, KeyError) as exc:
        raise SnapshotError(f"cannot verify {persisted.commit}: {exc}", where) from exc


def check_persistable(
    fs: InMemoryFilesystem,
    snapshot: FilesystemSnapshot | None = None,
    repo: str | os.PathLike[str] | None = None,
    *,
    max_file_bytes: int | None = None,
) -> None:
    """Refuse now what ``persist`` would refuse for its size, changing nothing: for
    a caller that takes a snapshot only to persist it (the daemon's ``persist``).

    Args:
        snapshot: What would be persisted; None: the live tree as it is now.
        repo, max_file_bytes: As for ``persist``.

    Raises:
        LimitExceededError: As ``persist`` would, before writing anything.
    """
    if snapshot is not None:
        version = fs.version(snapshot)
    else:
        with fs.tree.lock:
            version = fs.tree.snapshot()  # O(1), as ``frozen_view`` freezes
    repo = repo if repo is not None else default_repository(fs.workspace_id)
    existing, state, changed = _incremental(fs, version, repo)
    limit = fs.memory_budget if max_file_bytes is None else max_file_bytes
    refuse_oversized(version, changed, state, None if existing is None else existing.odb, limit)


def _incremental(
    fs: InMemoryFilesystem, version: Version, repo: str | os.PathLike[str]
) -> tuple[pygit2.Repository | None, PersistState, set[int] | None]:
    """(the repository if it exists, ``fs``'s state in it, the inodes changed since
    the version persisted there last; None: everything is to be written)."""
    location = os.fspath(repo)
    existing = open_repository(location) if os.path.exists(location) else None
    path = os.path.realpath(existing.path if existing is not None else location)
    state = state_for(fs, path)
    if existing is not None and state.version is None:
        _adopt_persisted(existing, fs, state)
    changed = None
    if state.version is not None and state.version.tree_id == version.tree_id:
        changed = Tree.changes_between(state.version, version)
    return existing, state, changed


def _adopt_persisted(
    repository: pygit2.Repository, fs: InMemoryFilesystem, state: PersistState
) -> None:
    """A first persist of this process to a repository that holds snapshots of the
    workspace already (a workspace resumed from its store, a daemon restarted): take
    over what it holds, so the next commit's parent is the nearest snapshot persisted
    before and its history stops where the repository's covers it, as if one process
    had persisted them all."""
    refs = RefNamespace.for_workspace(fs.workspace_id)
    held: dict[str, tuple[pygit2.Oid, pygit2.Oid]] = {}
    for number in refs.numbers(repository):
        commit = repository.get(repository.references[refs.snapshot(number)].target)
        if not isinstance(commit, pygit2.Commit):
            continue
        trailers = dict(line.split(": ", 1) for line in commit.message.splitlines() if ": " in line)
        with contextlib.suppress(KeyError, ValueError):
            held[trailers["Snapshot-Id"]] = (
                commit.id,
                pygit2.Oid(hex=trailers["Workspacefs-Meta"]),
            )
    for record in fs.snapshots():
        found = held.get(str(record.snapshot_id))
        if found is not None:
            state.commits[fs.version(record).history_key] = found
            state.persisted.add(record.snapshot_id)


def _parents(state: PersistState, version: Version) -> tuple[list[pygit2.Oid], list[pygit2.Oid]]:
    """The commits of the nearest persisted ancestor version, if any."""
    for key in version.ancestor_keys():
        found = state.commits.get(key)
        if found is not None:
            return [found[0]], [found[1]]
    return [], []


def resolve_commit(
    repository: pygit2.Repository, workspace: str | None, name: str
) -> pygit2.Commit:
    """A snapshot commit by workspace-relative ref, number or tag of ``workspace``, else
    by full ref or commit id.

    The workspace's own names come first: a tag such as ``cafe`` or ``main`` names
    the workspace's snapshot, not a commit whose id starts so or a branch.
    """
    candidates = []
    if workspace:
        refs = RefNamespace.for_workspace(workspace)
        candidates.append(refs.relative(name))
        if name.isdigit():
            candidates.append(refs.snapshot(int(name)))
        else:
            with contextlib.suppress(InvalidArgumentError):  # no tag: a ref or an id
                candidates.append(refs.tag(name))
    candidates.append(name)
    for candidate in filter(None, candidates):
        try:
            obj = repository.revparse_single(candidate)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        commit = obj.peel(pygit2.Commit)
        if isinstance(commit, pygit2.Commit):
            return commit
    raise SnapshotNotFoundError(f"no persisted snapshot {name!r}", str(repository.path))
