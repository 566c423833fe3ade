"""Snapshots of a user's own git working copy, without touching it.

A snapshot is a commit of the working state (staged and unstaged changes to
tracked files; untracked files if asked; ignored files never) parented to
HEAD. It is built from a private stat cache, never from the user's index
file: the user's index, HEAD, branches and files are left byte-identical.
``.gitattributes`` filters apply as in a real commit (and in reverse on
restore, as in a checkout). Only files whose stat changed since the
session's previous snapshot are read and hashed.

The working copy is read and written through descriptors only (``fs``'s
primitives): a path through a symlink is a path to nothing, a file is opened
beneath its directory's descriptor, and restore replaces a planted symlink
by what the snapshot holds, never writing through it. The git directory
itself is written by libgit2: when an agent controls the working copy, give
the provider a separate ``shadow`` store it cannot reach.

Objects and refs live in the shadow repository: the user's ``.git`` by
default (refs only under ``refs/workspacefs/``), or a separate bare
repository that borrows the user's objects through ``objects/info/alternates``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat as _stat
import tempfile
import uuid
import weakref
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2
from pygit2.enums import FilterMode, ObjectType, RepositoryInitMode

from .._errors import (
    BusyError,
    InvalidArgumentError,
    NotFoundError,
    SnapshotCreationError,
    SnapshotNotFoundError,
)
from ..fs import check_tag
from ..git import (
    MODE_EXECUTABLE,
    MODE_FILE,
    MODE_LINK,
    MODE_TREE,
    Identity,
    RefNamespace,
    branch_prefix,
    branch_ref,
    encode_name,
    encode_tree,
)
from ..posix import (
    DIRECTORY_FLAGS,
    OpenDirectories,
    open_beneath,
    open_regular,
    read_blocks,
    remove_entry,
    walk_directory,
)
from ._index import IndexEntry, read_index
from ._snapshots import tree_files
from ._worktrees import GITLINK, add_worktree, remove_worktrees, write_file

_SHADOW_SETTINGS = {
    "gc.auto": "0",  # objects the user's repository holds are never repacked from here
    "receive.denyCurrentBranch": "ignore",
    "core.logAllRefUpdates": "true",
}
"""A separate shadow store's settings (seed 004); the user's own ``.git`` gets none."""

WORKTREES_DIR = "worktrees-workspacefs"
"""The default home of branch and seek worktrees, in the user's ``.git``: git never
looks inside it for the working copy's files."""

_IN_PROGRESS = {
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase",
    "MERGE_HEAD": "a merge",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "BISECT_LOG": "a bisect",
}


@dataclass(frozen=True, slots=True)
class ShadowSnapshot:
    """One snapshot of the working copy."""

    number: int
    commit: str
    ref: str
    created_at: datetime
    tag: str | None = None


class GitShadowProvider:
    """Snapshot a user's repository working copy into a shadow repository.

    Args:
        repository: The user's working copy (any directory inside it).
        session_id: Names this session's refs (default: random).
        shadow: A bare repository for objects and refs, created with
            alternates to the user's objects; None uses the user's ``.git``.
        include_untracked: Capture untracked (not ignored) files too.
    """

    def __init__(
        self,
        repository: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        shadow: str | os.PathLike[str] | None = None,
        include_untracked: bool = False,
    ) -> None:
        found = pygit2.discover_repository(os.fspath(repository))
        if found is None:
            raise NotFoundError("not inside a git repository", os.fspath(repository))
        self._user = pygit2.Repository(found)
        if self._user.is_bare or self._user.workdir is None:
            raise InvalidArgumentError("a working copy is needed, not a bare repository", found)
        self._workdir = os.path.realpath(self._user.workdir)
        self._fd = os.open(self._workdir, DIRECTORY_FLAGS)  # every working file goes through it
        weakref.finalize(self, os.close, self._fd)
        self._with_untracked = include_untracked
        self.session_id = session_id or uuid.uuid4().hex[:12]
        if not self.session_id.replace("-", "").isalnum():
            raise InvalidArgumentError("session id must be letters, digits and '-'", session_id)
        self._refs = RefNamespace.for_session(self.session_id)
        self._store = self._open_shadow(os.fspath(shadow)) if shadow is not None else self._user
        self._store.workdir = self._workdir  # in memory only: filters and attributes
        self._cache_path = os.path.join(
            self._store.path, "workspacefs", "sessions", self.session_id, "stat-cache.json"
        )

    def _open_shadow(self, path: str) -> pygit2.Repository:
        """The separate shadow store, made if missing (``git init --bare --shared=group``)
        and set up every time (idempotent): alternates to the user's objects, and the
        seed's settings."""
        if not os.path.exists(os.path.join(path, "HEAD")):
            # The seed's ``--shared=group``, in a directory that stays its owner's: the
            # working copy's untracked files are in there too (docs/security.md).
            pygit2.init_repository(path, bare=True, mode=RepositoryInitMode.SHARED_GROUP)
            os.chmod(path, 0o2700)
        alternates = os.path.join(path, "objects", "info", "alternates")
        os.makedirs(os.path.dirname(alternates), exist_ok=True)
        user_objects = os.path.join(os.path.realpath(self._user.path), "objects")
        with open(alternates, "w", encoding="utf-8") as handle:
            handle.write(user_objects + "\n")
        shadow = pygit2.Repository(path)
        for key, value in _SHADOW_SETTINGS.items():
            shadow.config[key] = value
        return shadow

    # -- information -----------------------------------------------------------

    @property
    def prefix(self) -> str:
        """The ref namespace of this session."""
        return self._refs.base

    def capabilities(self) -> dict[str, Any]:
        """What works here (seed 004's ``detect_capabilities``, ``workspacefs doctor``):
        the ``git`` binary (its path, None if missing), worktrees, whether the store is
        writable; never path-preserving (a worktree is another directory)."""
        git_dir = self._store.path
        return {
            "kind": "git",
            "git": shutil.which("git"),
            "libgit2": pygit2.LIBGIT2_VERSION,
            "worktrees": hasattr(self._store, "add_worktree"),
            "writable": os.access(git_dir, os.W_OK),
            "path_preserving": False,
            "shadow": "separate" if self._store is not self._user else "main",
            "store": git_dir,
        }

    def info(self) -> dict[str, Any]:
        """The provider, its session and the snapshot refs."""
        return {
            "provider": "git-shadow",
            "session": self.session_id,
            "repository": self._workdir,
            "shadow": self._store.path,
            "snapshots": [s.ref for s in self.snapshots()],
        }

    def snapshots(self) -> list[ShadowSnapshot]:
        """This session's snapshots, oldest first."""
        found = []
        for number in self._refs.numbers(self._store):
            ref = self._refs.snapshot(number)
            commit = self._store.references[ref].peel(pygit2.Commit)
            moment = datetime.fromtimestamp(commit.commit_time, UTC)
            found.append(ShadowSnapshot(number, str(commit.id), ref, moment, _tag_of(commit)))
        return found

    # -- snapshots -------------------------------------------------------------

    def _refuse_if_busy(self) -> None:
        for marker, what in _IN_PROGRESS.items():
            if os.path.exists(os.path.join(self._user.path, marker)):
                raise BusyError(f"cannot snapshot during {what}", self._workdir)
        if self._user.index.conflicts is not None:
            raise BusyError("cannot snapshot with unmerged index entries", self._workdir)

    def _working_state(self) -> tuple[dict[str, tuple[int, pygit2.Oid]], dict[str, list[Any]]]:
        """Path -> (mode, blob id) of the working copy, and the refreshed stat cache.

        A file whose stat matches its index entry is the indexed blob (git's
        own shortcut, with its guard for files changed in the second the
        index was written); other files are looked up in this session's stat
        cache, and hashed only if that misses too.
        """
        cache = self._load_cache()
        fresh: dict[str, list[Any]] = {}
        entries: dict[str, tuple[int, pygit2.Oid]] = {}
        with OpenDirectories(self._fd) as dirs:
            for entry, index_mtime in self._index_entries():
                if entry.mode == GITLINK:  # submodules stay gitlinks
                    entries[entry.path] = (GITLINK, entry.oid)
                    continue
                info = dirs.lstat(entry.path)
                if info is None:
                    continue  # deleted in the working copy (or behind a symlink now)
                if self._unchanged(entry, info, index_mtime):
                    entries[entry.path] = (entry.mode, entry.oid)
                    continue
                captured = self._capture(dirs, entry.path, info, cache, fresh)
                if captured is not None:
                    entries[entry.path] = captured
            if self._with_untracked:
                for path, info in self._untracked(entries):
                    captured = self._capture(dirs, path, info, cache, fresh)
                    if captured is not None:
                        entries[path] = captured
        return entries, fresh

    @staticmethod
    def _unchanged(entry: IndexEntry, info: os.stat_result, index_mtime: int) -> bool:
        """True if the user's index vouches for the file (git's own shortcut and guard)."""
        return (
            info.st_mtime_ns == entry.mtime_ns
            and info.st_size == entry.size
            and info.st_ino == entry.ino
            and entry.mtime_ns < index_mtime
            and _mode_of(info) == entry.mode
        )

    def _index_entries(self) -> list[tuple[IndexEntry, int]]:
        """The user's index entries (read, never written) with the index's mtime."""
        path = os.path.join(self._user.path, "index")
        if not os.path.exists(path):
            return []
        written = os.stat(path).st_mtime_ns
        parsed = read_index(path)
        if parsed is None:  # index version 4: let libgit2 read it, without stat shortcuts
            parsed = [IndexEntry(e.path, e.mode, e.id, -1, -1, -1, 0) for e in pygit2.Index(path)]
        return [(entry, written) for entry in parsed]

    def snapshot(self, *, tag: str | None = None) -> ShadowSnapshot:
        """Commit the working state to ``refs/workspacefs/sessions/<sid>/snapshots/<n>``.

        Raises:
            InvalidArgumentError: ``tag`` breaks the rule of tags (``check_tag``; a
                newline would end the commit's title, where the tag is kept).
        """
        if tag is not None:
            check_tag(tag)
        self._refuse_if_busy()
        entries, fresh = self._working_state()
        try:
            tree = self._write_tree(entries)
            now = datetime.now(UTC)
            signature = Identity().signature(now)
            number = self._refs.next_number(self._store)
            # The session's snapshots form a chain: the first is parented to HEAD, each
            # later one to the session's previous snapshot.
            if number > 1:
                parents = [self._store.references[self._refs.snapshot(number - 1)].target]
            else:
                parents = [] if self._user.head_is_unborn else [self._user.head.target]
            title = f"workspacefs: snapshot {self.session_id}/{number}"
            title += (f" {tag}" if tag else "") + f" {now.isoformat(timespec='seconds')}"
            message = title + (f"\n\n{_TAG_TRAILER}{tag}\n" if tag else "\n")
            commit = self._store.create_commit(None, signature, signature, message, tree, parents)
            ref = self._refs.snapshot(number)
            self._create_logged(ref, commit, title)
        except (pygit2.GitError, OSError) as exc:
            raise SnapshotCreationError(f"shadow snapshot failed: {exc}", self._workdir) from exc
        self._save_cache(fresh)
        return ShadowSnapshot(number, str(commit), ref, now, tag)

    def _create_logged(self, ref: str, target: pygit2.Oid, message: str) -> None:
        """Create ``ref`` with a reflog (``update-ref --create-reflog``): libgit2 logs a
        ref outside ``refs/heads`` only if its log exists, so the log is made first."""
        log = os.path.join(self._store.path, "logs", *ref.split("/"))
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "ab"):
            pass
        self._store.create_reference_direct(ref, target, False, message=message)

    def _capture(
        self,
        dirs: OpenDirectories,
        path: str,
        info: os.stat_result,
        cache: dict[str, list[Any]],
        fresh: dict[str, list[Any]],
    ) -> tuple[int, pygit2.Oid] | None:
        mode = _mode_of(info)
        if mode is None:
            return None
        key = [info.st_mtime_ns, info.st_size, info.st_ino, mode]
        known = cache.get(path)
        if known is not None and known[:4] == key:
            oid = pygit2.Oid(hex=known[4])
        else:
            blob = self._read_working_file(dirs, path, mode)
            if blob is None:
                return None
            oid = self._store.odb.write(ObjectType.BLOB, blob)
        fresh[path] = [*key, str(oid)]
        return mode, oid

    def _read_working_file(self, dirs: OpenDirectories, path: str, mode: int) -> bytes | None:
        """The blob bytes of a working file, read beneath its directory's descriptor and
        cleaned by ``.gitattributes`` filters; None if it is gone or changed kind."""
        parent, _, name = path.rpartition("/")
        directory = dirs.get(parent)
        if directory is None:
            return None
        try:
            if mode == MODE_LINK:
                return encode_name(os.readlink(name, dir_fd=directory))
            data = b"".join(read_blocks(open_regular(directory, name)))
        except OSError:
            return None
        filters = self._store.load_filter_list(path, FilterMode.TO_ODB)
        return data if filters is None else bytes(filters.apply_to_buffer(data))

    def _untracked(
        self, tracked: dict[str, tuple[int, pygit2.Oid]]
    ) -> list[tuple[str, os.stat_result]]:
        found = []
        for walked in walk_directory(self._fd, enter=lambda w: w.name != ".git"):
            if walked.is_dir or walked.path in tracked:
                continue
            if not self._user.path_is_ignored(walked.path):
                found.append((walked.path, walked.info))
        return found

    def _write_tree(self, entries: dict[str, tuple[int, pygit2.Oid]]) -> pygit2.Oid:
        """Write the nested trees of a flat path -> (mode, id) map; return the root."""
        dirs: dict[str, dict[str, tuple[int, pygit2.Oid | None]]] = {"": {}}
        for path, (mode, oid) in entries.items():
            parent, _, name = path.rpartition("/")
            dirs.setdefault(parent, {})[name] = (mode, oid)
            while parent:  # register each ancestor in its own parent, once
                up, _, dirname = parent.rpartition("/")
                siblings = dirs.setdefault(up, {})
                if dirname in siblings:
                    break
                siblings[dirname] = (MODE_TREE, None)
                parent = up
        written: dict[str, pygit2.Oid] = {}
        for directory in sorted(dirs, key=lambda d: d.count("/") + bool(d), reverse=True):
            items = []
            for name, (mode, maybe) in dirs[directory].items():
                oid = (
                    written[f"{directory}/{name}" if directory else name]
                    if maybe is None
                    else maybe
                )
                items.append((name.encode("utf-8", "surrogateescape"), mode, oid))
            written[directory] = self._store.odb.write(ObjectType.TREE, encode_tree(items))
        return written[""]

    def restore(self, snapshot: ShadowSnapshot) -> None:
        """Put the working copy's files back to ``snapshot``; the index and HEAD stay."""
        self._refuse_if_busy()
        commit = self._commit(snapshot)
        target = tree_files(self._store.odb, commit.tree_id)
        current, _ = self._working_state()
        for path in current.keys() - target.keys():
            if current[path][0] != GITLINK:
                self._remove(path)
        for path, (mode, oid) in target.items():
            if mode == GITLINK or current.get(path) == (mode, oid):
                continue
            write_file(self._store, self._fd, path, mode, oid)

    def _remove(self, path: str) -> None:
        """Remove a working file, unless a directory above it is no longer a real one."""
        parent, _, name = path.rpartition("/")
        try:
            directory = open_beneath(self._fd, parent, DIRECTORY_FLAGS)
        except OSError:
            return
        try:
            remove_entry(directory, name)
        finally:
            os.close(directory)

    def _load_cache(self) -> dict[str, list[Any]]:
        try:
            with open(self._cache_path, encoding="utf-8") as handle:
                data: dict[str, list[Any]] = json.load(handle)
                return data
        except (FileNotFoundError, ValueError):
            return {}

    def _save_cache(self, cache: dict[str, list[Any]]) -> None:
        os.makedirs(os.path.dirname(self._cache_path), exist_ok=True)
        temp = self._cache_path + ".tmp"
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(cache))  # dumps: the C encoder; dump would not use it
        os.replace(temp, self._cache_path)

    # -- worktrees and cleanup -------------------------------------------------

    def _commit(self, snapshot: ShadowSnapshot) -> pygit2.Commit:
        """The commit of one of this session's snapshots (a record is data: any other
        commit it names is refused)."""
        ours = {
            str(self._store.references[self._refs.snapshot(number)].target)
            for number in self._refs.numbers(self._store)
        }
        if snapshot.commit not in ours:
            raise SnapshotNotFoundError("no such snapshot in this session", snapshot.commit)
        commit = self._store.get(snapshot.commit)
        if not isinstance(commit, pygit2.Commit):
            raise SnapshotNotFoundError("not a snapshot commit", snapshot.commit)
        return commit

    def worktrees_dir(self) -> str:
        """Where ``branch`` and ``seek`` put worktrees by default: ``WORKTREES_DIR`` in the
        user's ``.git``, or a directory in the system's temp dir if that is not writable."""
        git_dir = os.path.realpath(self._user.path)
        if os.access(git_dir, os.W_OK | os.X_OK):
            return os.path.join(git_dir, WORKTREES_DIR)
        return os.path.join(tempfile.gettempdir(), f"workspacefs-worktrees-{os.getuid()}")

    def _default_path(self, path: str | os.PathLike[str] | None, name: str) -> str:
        if path is not None:
            return os.fspath(path)
        return os.path.join(self.worktrees_dir(), self.session_id, name)

    def branch(
        self, snapshot: ShadowSnapshot, name: str, path: str | os.PathLike[str] | None = None
    ) -> str:
        """A writable worktree of ``snapshot`` on ``refs/workspacefs/branches/<sid>/<name>``,
        at ``path`` (default ``<worktrees_dir>/<sid>/<name>``)."""
        if not name.replace("-", "").isalnum():
            raise InvalidArgumentError("branch name must be letters, digits and '-'", name)
        commit = self._commit(snapshot)
        ref = branch_ref(self.session_id, name)
        self._store.references.create(ref, commit.id, force=True)
        target = self._default_path(path, name)
        return add_worktree(
            self._store, f"wsfs-{self.session_id}-{name}", target, f"ref: {ref}", commit
        )

    def seek(self, snapshot: ShadowSnapshot, path: str | os.PathLike[str] | None = None) -> str:
        """A locked, detached, read-only worktree of ``snapshot`` at ``path`` (default
        ``<worktrees_dir>/<sid>/seek-<n>``)."""
        commit = self._commit(snapshot)
        name = f"wsfs-{self.session_id}-seek-{snapshot.number}"
        target = self._default_path(path, f"seek-{snapshot.number}")
        return add_worktree(self._store, name, target, str(commit.id), commit, read_only=True)

    def cleanup(self) -> None:
        """Remove this session's worktrees, refs and cache.

        A worktree is removed only if it still points back at this session's
        admin directory: a record edited to name another directory removes nothing.
        """
        remove_worktrees(self._store, f"wsfs-{self.session_id}-")
        for name in list(self._store.references):
            ours = (self.prefix + "/", branch_prefix(self.session_id))
            if name.startswith(ours):
                self._store.references.delete(name)
        sessions = os.path.join(self._store.path, "workspacefs", "sessions")
        try:
            fd = os.open(sessions, DIRECTORY_FLAGS)
        except OSError:
            return
        try:
            remove_entry(fd, self.session_id)
        finally:
            os.close(fd)


_TAG_TRAILER = "Workspacefs-Tag: "


def _tag_of(commit: pygit2.Commit) -> str | None:
    """A snapshot commit's tag: its trailer, or (snapshots of earlier releases) the
    subject's part after ": "."""
    for line in commit.message.splitlines()[1:]:
        if line.startswith(_TAG_TRAILER):
            return line[len(_TAG_TRAILER) :] or None
    subject = commit.message.split("\n", 1)[0]
    if subject.startswith("workspacefs session "):
        return subject.partition(": ")[2] or None
    return None


def _mode_of(info: os.stat_result) -> int | None:
    """The git mode of a working file, or None for what git does not track."""
    if _stat.S_ISLNK(info.st_mode):
        return MODE_LINK
    if _stat.S_ISREG(info.st_mode):
        return MODE_EXECUTABLE if info.st_mode & 0o100 else MODE_FILE
    return None
