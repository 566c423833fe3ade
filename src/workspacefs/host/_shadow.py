"""Snapshots of a user's own git working copy, without touching it.

A snapshot is a commit of the working state (staged and unstaged changes to
tracked files; untracked files if asked; ignored files never) parented to
HEAD. It is built from a private stat cache, never from the user's index
file: the user's index, HEAD, branches and files are left byte-identical.
Blobs go through ``create_blob_fromworkdir``, so ``.gitattributes`` filters
apply as in a real commit. Only files whose stat changed since the session's
previous snapshot are read and hashed.

Objects and refs live in the shadow repository: the user's ``.git`` by
default (refs only under ``refs/workspacefs/``), or a separate bare
repository that borrows the user's objects through ``objects/info/alternates``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat as _stat
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2
from pygit2.enums import CheckoutStrategy, ObjectType

from .._errors import (
    AlreadyExistsError,
    BusyError,
    InvalidArgumentError,
    NotFoundError,
    SnapshotCreationError,
    SnapshotNotFoundError,
)
from ..git import (
    MODE_EXECUTABLE,
    MODE_FILE,
    MODE_LINK,
    MODE_TREE,
    Identity,
    RefNamespace,
    branch_prefix,
    branch_ref,
    encode_tree,
    walk_tree,
)
from ._index import IndexEntry, read_index

GITLINK = 0o160000
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
        if not os.path.exists(os.path.join(path, "HEAD")):
            pygit2.init_repository(path, bare=True)
        alternates = os.path.join(path, "objects", "info", "alternates")
        os.makedirs(os.path.dirname(alternates), exist_ok=True)
        user_objects = os.path.join(os.path.realpath(self._user.path), "objects")
        with open(alternates, "w", encoding="utf-8") as handle:
            handle.write(user_objects + "\n")
        shadow = pygit2.Repository(path)
        shadow.config["gc.auto"] = "0"
        return shadow

    # -- information -----------------------------------------------------------

    @property
    def prefix(self) -> str:
        """The ref namespace of this session."""
        return self._refs.base

    def capabilities(self) -> dict[str, Any]:
        """What works here: for ``doctor``."""
        git_dir = self._store.path
        return {
            "libgit2": pygit2.LIBGIT2_VERSION,
            "worktrees": hasattr(self._store, "add_worktree"),
            "writable": os.access(git_dir, os.W_OK),
            "shadow": "separate" if self._store is not self._user else "main",
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
            tag = commit.message.split("\n", 1)[0].partition(": ")[2] or None
            found.append(ShadowSnapshot(number, str(commit.id), ref, moment, tag))
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
        root = self._workdir + os.sep
        for entry, index_mtime in self._index_entries():
            if entry.mode == GITLINK:  # submodules stay gitlinks
                entries[entry.path] = (GITLINK, entry.oid)
                continue
            try:
                info = os.lstat(root + entry.path)  # not os.path.join: this loop is hot
            except FileNotFoundError:
                continue  # deleted in the working copy
            if (
                info.st_mtime_ns == entry.mtime_ns
                and info.st_size == entry.size
                and info.st_ino == entry.ino
                and entry.mtime_ns < index_mtime
                and _mode_of(info) == entry.mode
            ):
                entries[entry.path] = (entry.mode, entry.oid)
                continue
            captured = self._capture(entry.path, info, cache, fresh)
            if captured is not None:
                entries[entry.path] = captured
        if self._with_untracked:
            for path in self._untracked(entries):
                captured = self._capture(
                    path, os.lstat(os.path.join(self._workdir, path)), cache, fresh
                )
                if captured is not None:
                    entries[path] = captured
        return entries, fresh

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
        """Commit the working state to ``refs/workspacefs/sessions/<sid>/snapshots/<n>``."""
        self._refuse_if_busy()
        entries, fresh = self._working_state()
        try:
            tree = self._write_tree(entries)
            head = [] if self._user.head_is_unborn else [self._user.head.target]
            now = datetime.now(UTC)
            signature = Identity().signature(now)
            number = self._refs.next_number(self._store)
            title = f"workspacefs session {self.session_id} snapshot {number}"
            message = title + (f": {tag}" if tag else "") + "\n"
            commit = self._store.create_commit(None, signature, signature, message, tree, head)
            ref = self._refs.snapshot(number)
            self._store.references.create(ref, commit)
        except (pygit2.GitError, OSError) as exc:
            raise SnapshotCreationError(f"shadow snapshot failed: {exc}", self._workdir) from exc
        self._save_cache(fresh)
        return ShadowSnapshot(number, str(commit), ref, now, tag)

    def _capture(
        self,
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
            oid = self._store.create_blob_fromworkdir(path)
        fresh[path] = [*key, str(oid)]
        return mode, oid

    def _untracked(self, tracked: dict[str, tuple[int, pygit2.Oid]]) -> list[str]:
        found = []
        for top, dirs, files in os.walk(self._workdir):
            dirs[:] = [d for d in dirs if d != ".git"]
            base = os.path.relpath(top, self._workdir)
            for name in files:
                path = name if base == "." else f"{base}/{name}"
                if path not in tracked and not self._user.path_is_ignored(path):
                    found.append(path)
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
        target = {
            path: (mode, oid)
            for path, mode, oid in walk_tree(self._store, commit.tree)
            if mode != MODE_TREE
        }
        current, _ = self._working_state()
        for path in current.keys() - target.keys():
            if current[path][0] != GITLINK:
                os.unlink(os.path.join(self._workdir, path))
        for path, (mode, oid) in target.items():
            if mode == GITLINK or current.get(path) == (mode, oid):
                continue
            full = os.path.join(self._workdir, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            if os.path.lexists(full):
                os.unlink(full)
            data = self._store.odb.read(oid)[1]
            if mode == MODE_LINK:
                os.symlink(bytes(data).decode("utf-8", "surrogateescape"), full)
            else:
                with open(full, "wb") as handle:
                    handle.write(data)
                os.chmod(full, 0o755 if mode == MODE_EXECUTABLE else 0o644)

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
        try:
            commit = self._store[snapshot.commit]
        except (KeyError, ValueError):
            raise SnapshotNotFoundError("no such snapshot", snapshot.commit) from None
        if not isinstance(commit, pygit2.Commit):
            raise SnapshotNotFoundError("not a snapshot commit", snapshot.commit)
        return commit

    def _add_worktree(self, name: str, path: str, head: str, commit: pygit2.Commit) -> str:
        """A linked worktree whose HEAD is ``head`` (a ref or a commit id).

        Written by hand: libgit2 only attaches worktrees to ``refs/heads``
        branches, and the user's branches are not ours to create.
        """
        admin = os.path.join(self._store.path, "worktrees", name)
        if os.path.exists(admin) or os.path.exists(path):
            raise AlreadyExistsError("worktree already exists", path)
        os.makedirs(admin)
        os.makedirs(path)
        files = {
            "gitdir": os.path.join(os.path.abspath(path), ".git"),
            "commondir": "../..",
            "HEAD": head,
        }
        for file, content in files.items():
            with open(os.path.join(admin, file), "w", encoding="utf-8") as handle:
                handle.write(content + "\n")
        with open(os.path.join(path, ".git"), "w", encoding="utf-8") as handle:
            handle.write(f"gitdir: {admin}\n")
        worktree = pygit2.Repository(path)
        tree = worktree[commit.id].peel(pygit2.Tree)  # objects of this repository handle
        worktree.checkout_tree(tree, strategy=CheckoutStrategy.FORCE)  # type: ignore[no-untyped-call]
        worktree.index.read_tree(tree)
        worktree.index.write()
        return path

    def branch(self, snapshot: ShadowSnapshot, name: str, path: str | os.PathLike[str]) -> str:
        """A writable worktree of ``snapshot`` on ``refs/workspacefs/branches/<sid>/<name>``."""
        if not name.replace("-", "").isalnum():
            raise InvalidArgumentError("branch name must be letters, digits and '-'", name)
        commit = self._commit(snapshot)
        ref = branch_ref(self.session_id, name)
        self._store.references.create(ref, commit.id, force=True)
        return self._add_worktree(
            f"wsfs-{self.session_id}-{name}", os.fspath(path), f"ref: {ref}", commit
        )

    def seek(self, snapshot: ShadowSnapshot, path: str | os.PathLike[str]) -> str:
        """A locked, detached, read-only worktree of ``snapshot``."""
        commit = self._commit(snapshot)
        name = f"wsfs-{self.session_id}-seek-{snapshot.number}"
        location = self._add_worktree(name, os.fspath(path), str(commit.id), commit)
        with open(
            os.path.join(self._store.path, "worktrees", name, "locked"), "w", encoding="utf-8"
        ) as handle:
            handle.write("workspacefs read-only seek\n")
        for top, dirs, files in os.walk(location):
            dirs[:] = [d for d in dirs if d != ".git"]
            for file in files:
                full = os.path.join(top, file)
                if file != ".git" and not os.path.islink(full):
                    os.chmod(full, os.stat(full).st_mode & ~0o222)
        return location

    def cleanup(self) -> None:
        """Remove this session's worktrees, refs and cache."""
        admin_root = os.path.join(self._store.path, "worktrees")
        names = os.listdir(admin_root) if os.path.isdir(admin_root) else []
        for name in names:
            if name.startswith(f"wsfs-{self.session_id}-"):
                admin = os.path.join(admin_root, name)
                with open(os.path.join(admin, "gitdir"), encoding="utf-8") as handle:
                    path = os.path.dirname(handle.read().strip())
                if os.path.isdir(path):
                    _force_rmtree(path)
                shutil.rmtree(admin, ignore_errors=True)
        for name in list(self._store.references):
            ours = (self.prefix + "/", branch_prefix(self.session_id))
            if name.startswith(ours):
                self._store.references.delete(name)
        shutil.rmtree(os.path.dirname(self._cache_path), ignore_errors=True)


def _mode_of(info: os.stat_result) -> int | None:
    """The git mode of a working file, or None for what git does not track."""
    if _stat.S_ISLNK(info.st_mode):
        return MODE_LINK
    if _stat.S_ISREG(info.st_mode):
        return MODE_EXECUTABLE if info.st_mode & 0o100 else MODE_FILE
    return None


def _force_rmtree(path: str) -> None:
    """Remove a worktree, read-only files included."""

    def make_writable(function: Any, target: str, _: Any) -> None:
        os.chmod(os.path.dirname(target), 0o755)
        if not os.path.islink(target):
            os.chmod(target, 0o644)
        function(target)

    # `onerror` is deprecated from 3.12 on, and `onexc` does not exist before it.
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable)
    else:
        shutil.rmtree(path, onerror=make_writable)
