"""The daemon's side of the protocol: one workspace and the verbs callers may run on it.

Every verb takes and returns JSON-ready values (see ``_wire``) and runs in a
worker thread of the control server, never on the FUSE loop's thread, so a
long grep, persist or export delays neither the mount nor other callers.
"""

from __future__ import annotations

import base64
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .. import git
from .._errors import InvalidArgumentError, ReadOnlyError, SnapshotNotFoundError
from ..archive import ArchiveLimits, export_archive, import_archive
from ..fs import (
    MAX_ENTRIES,
    FilesystemSnapshot,
    InMemoryFilesystem,
    SnapshotRetentionPolicy,
    TreeFilesystem,
)
from ..fuse import Mount
from ._forks import Forks
from ._wire import (
    API_VERSION,
    Json,
    decode_snapshot,
    encode_diff,
    encode_entries,
    encode_plain,
    encode_read,
    encode_read_bytes,
    encode_stat,
)

VIEW_CACHE = 16
"""Snapshot views kept ready for ``at`` calls (a view is cheap; this spares the lookup)."""


def _rss_bytes() -> int:
    """Resident memory of this process (Linux: /proc/self/statm)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@dataclass(frozen=True, slots=True)
class WorkspaceInfo:
    """Facts about the daemon that do not change while it runs."""

    mountpoint: str
    socket: str
    pid: int
    read_only: bool
    repository: str
    started_at: str
    log: str


class Workspace:
    """One workspace served by a daemon: the live tree and its verbs by name.

    Args:
        fs: The live workspace.
        info: What the daemon publishes about itself.
    """

    def __init__(self, fs: InMemoryFilesystem, info: WorkspaceInfo) -> None:
        self.fs = fs
        self.info = info
        self.forks = Forks(fs, read_only=info.read_only)
        """The forks served beside the workspace (``attach`` them to the mount)."""
        self._views: OrderedDict[uuid.UUID, TreeFilesystem] = OrderedDict()
        self._views_lock = threading.Lock()
        self._started = time.monotonic()
        self._mount: Mount | None = None
        # A read-only workspace serves a frozen view of what it was loaded with:
        # the kernel and every API write then refuse alike (EROFS).
        self.view: TreeFilesystem = fs
        if info.read_only:
            self.view = fs.at(self._current_or_new())
        self.verbs: dict[str, Callable[[Json], Any]] = {
            "read": self._read,
            "read_bytes": self._read_bytes,
            "exists": self._exists,
            "stat": self._stat,
            "readlink": self._readlink,
            "list": self._list,
            "entries": self._entries,
            "glob": self._glob,
            "grep": self._grep,
            "write": self._write,
            "write_bytes": self._write_bytes,
            "delete": self._delete,
            "mkdir": self._mkdir,
        }

    def _current_or_new(self) -> FilesystemSnapshot:
        current = self.fs.current_snapshot_id
        for record in self.fs.snapshots():
            if record.snapshot_id == current:
                return record
        return self.fs.snapshot(tag=None)

    # -- the Filesystem verbs ------------------------------------------------------

    def target(self, at: str | None) -> TreeFilesystem:
        """The live workspace, or a read-only view of the snapshot with id ``at``."""
        if at is None:
            return self.view
        snapshot_id = uuid.UUID(at)
        with self._views_lock:
            view = self._views.get(snapshot_id)
            if view is not None:
                self._views.move_to_end(snapshot_id)
                return view
        # The snapshot's own version, not an alias (``fs.at``): the cache drops a view
        # with its snapshot, so it is no holder of its own for space accounting.
        fs = self.fs
        view = TreeFilesystem(
            fs.version(self.find(snapshot_id)), mount_point=fs.mount_point, limits=fs.limits
        )
        with self._views_lock:
            self._views[snapshot_id] = view
            while len(self._views) > VIEW_CACHE:
                self._views.popitem(last=False)
        return view

    def call(self, verb: str, args: Json) -> Any:
        """Run the protocol verb ``verb`` with ``args``; its JSON-ready result."""
        handler = self.verbs.get(verb)
        if handler is None:
            raise InvalidArgumentError(f"unknown verb {verb!r}", None)
        return handler(args)

    def _read(self, a: Json) -> Json:
        result = self.target(a.get("at")).read(
            a["path"], offset=a.get("offset", 0), limit=a.get("limit"),
            encoding=a.get("encoding", "utf-8"),
        )  # fmt: skip
        return encode_read(result)

    def _read_bytes(self, a: Json) -> Json:
        fs = self.target(a.get("at"))
        return encode_read_bytes(
            fs.read_bytes(a["path"], offset=a.get("offset", 0), limit=a.get("limit"))
        )

    def _exists(self, a: Json) -> bool:
        return self.target(a.get("at")).exists(a["path"])

    def _stat(self, a: Json) -> Json:
        return encode_stat(self.target(a.get("at")).stat(a["path"]))

    def _readlink(self, a: Json) -> str:
        return self.target(a.get("at")).readlink(a["path"])

    def _entries(self, a: Json) -> list[list[Any]]:
        found = self.target(a.get("at")).entries(
            a.get("path", "."), after=a.get("after", ""), limit=a.get("limit", MAX_ENTRIES),
            recursive=a.get("recursive", True),
        )  # fmt: skip
        return encode_entries(found)

    def _list(self, a: Json) -> list[Json]:
        return [encode_plain(e) for e in self.target(a.get("at")).list(a.get("path", "."))]

    def _glob(self, a: Json) -> list[Json]:
        fs = self.target(a.get("at"))
        return [encode_plain(m) for m in fs.glob(a["pattern"], path=a.get("path", "."))]

    def _grep(self, a: Json) -> list[Json]:
        matches = self.target(a.get("at")).grep(
            a["pattern"], path=a.get("path", "."), glob=a.get("glob"),
            max_matches=a.get("max_matches"),
        )  # fmt: skip
        return [encode_plain(m) for m in matches]

    def _write(self, a: Json) -> Json:
        result = self.target(a.get("at")).write(
            a["path"], a["content"], mode=a.get("mode", "overwrite"),
            create_parents=a.get("create_parents", True), if_match=a.get("if_match"),
        )  # fmt: skip
        return encode_plain(result)

    def _write_bytes(self, a: Json) -> Json:
        result = self.target(a.get("at")).write_bytes(
            a["path"], base64.b64decode(a["content"]), mode=a.get("mode", "overwrite"),
            create_parents=a.get("create_parents", True), if_match=a.get("if_match"),
        )  # fmt: skip
        return encode_plain(result)

    def _delete(self, a: Json) -> None:
        self.target(a.get("at")).delete(
            a["path"], recursive=a.get("recursive", False), if_match=a.get("if_match")
        )

    def _mkdir(self, a: Json) -> None:
        self.target(a.get("at")).mkdir(
            a["path"], parents=a.get("parents", True), exist_ok=a.get("exist_ok", True)
        )

    # -- snapshots -----------------------------------------------------------------

    def find(self, snapshot_id: uuid.UUID) -> FilesystemSnapshot:
        """The kept snapshot with this id."""
        for record in self.fs.snapshots():
            if record.snapshot_id == snapshot_id:
                return record
        raise SnapshotNotFoundError(f"no snapshot {snapshot_id}", None)

    def snapshot(self, tag: str | None) -> Json:
        """Take a snapshot of the live tree."""
        return self.fs.snapshot(tag=tag).to_dict()

    def snapshots(self) -> list[Json]:
        """Every kept snapshot, oldest first."""
        return [record.to_dict() for record in self.fs.snapshots()]

    def restore(self, record: Json, unchanged_since: Json | None = None) -> None:
        """Return the live tree to a snapshot (the mount's caches are invalidated);
        with ``unchanged_since``, only if nothing changed since that snapshot."""
        if self.info.read_only:
            raise ReadOnlyError("read-only workspace", "/")
        since = None if unchanged_since is None else decode_snapshot(unchanged_since)
        self.fs.restore(decode_snapshot(record), if_unchanged_since=since)

    def diff(self, base: Json, target: Json | None) -> Json:
        """What changed from ``base`` to ``target`` (None: the live tree)."""
        after = None if target is None else decode_snapshot(target)
        if after is None and self.info.read_only:
            after = self._current_or_new()
        return encode_diff(self.fs.diff(decode_snapshot(base), after))

    def _record_or_live(self, snapshot: str | None) -> FilesystemSnapshot | None:
        if snapshot is None:
            return None
        try:
            return self.find(uuid.UUID(snapshot))
        except ValueError as exc:
            raise InvalidArgumentError(f"not a snapshot id: {snapshot!r}", None) from exc

    def changes(self, snapshot: str | None) -> Json:
        """What the snapshot with this id (None: the live tree) changed, with causes."""
        return self.fs.changes(self._record_or_live(snapshot)).to_dict()

    def blame(self, path: str, snapshot: str | None) -> list[Json]:
        """Every change to ``path`` from the snapshot with this id (None: the live
        tree) back, newest first."""
        entries = self.fs.blame(path, snapshot=self._record_or_live(snapshot))
        return [entry.to_dict() for entry in entries]

    def delete_snapshot(self, record: Json) -> None:
        """Forget a snapshot."""
        snapshot = decode_snapshot(record)
        self.fs.delete_snapshot(snapshot)
        self._drop_views([snapshot.snapshot_id])

    def _drop_views(self, snapshot_ids: list[uuid.UUID]) -> None:
        """Forget the cached views of deleted snapshots: they hold their memory."""
        with self._views_lock:
            for snapshot_id in snapshot_ids:
                self._views.pop(snapshot_id, None)

    def space(self) -> Json:
        """Shared and exclusive bytes of the live tree, each snapshot and each fork."""
        return self.fs.space_usage().to_dict()

    def prune(self, a: Json) -> Json:
        """Delete the snapshots a retention policy expires (``dry_run``: only name
        them); says what the accounting expects that to free, and the budget's
        count before and after."""
        policy = SnapshotRetentionPolicy(
            max_count=a.get("max_count"),
            max_age_hours=a.get("max_age_hours"),
            keep_tagged=a.get("keep_tagged", True),
            max_snapshot_bytes=a.get("max_snapshot_bytes"),
        )
        dry_run = bool(a.get("dry_run", False))
        usage = self.fs.space_usage()
        doomed = self.fs.prune(policy, dry_run=dry_run)
        if not dry_run:
            self._drop_views([record.snapshot_id for record in doomed])
        counted = {space.snapshot_id for space in usage.snapshots}
        return {
            "pruned": [record.to_dict() for record in doomed],
            "dry_run": dry_run,
            "freed_bytes": usage.exclusive_bytes(
                [record for record in doomed if record.snapshot_id in counted]
            ),
            "held_before": usage.held,
            "held_after": self.fs.tree.budget.held,
        }

    def current(self) -> str | None:
        """The id of the snapshot last taken or restored."""
        current = self.fs.current_snapshot_id
        return None if current is None else str(current)

    # -- archives and git ------------------------------------------------------------

    def export(self, path: str, at: str | None) -> Json:
        """Write the workspace (or a snapshot) as a ZIP archive at ``path``."""
        return {"files": export_archive(self.target(at), _absolute(path)), "path": path}

    def import_(self, path: str, limits: Json | None) -> Json:
        """Replace the workspace with the archive at ``path``."""
        if self.info.read_only:
            raise ReadOnlyError("read-only workspace", path)
        archive_limits = ArchiveLimits(**limits) if limits else ArchiveLimits()
        return {"files": import_archive(self.fs, _absolute(path), limits=archive_limits)}

    def persist(
        self,
        record: Json | None,
        tag: str | None,
        remote: str | None,
        max_file_bytes: int | None = None,
    ) -> Json:
        """Persist a snapshot (a new one if ``record`` is None) to the workspace's
        repository, then push it to ``remote`` if given. A file past ``max_file_bytes``
        (``git.persist``) is refused before the new snapshot is even taken."""
        repository = self.info.repository
        if record is None:
            git.check_persistable(self.fs, None, repository, max_file_bytes=max_file_bytes)
            snapshot = self.fs.snapshot(tag=tag)
        else:
            snapshot = decode_snapshot(record)
        persisted = git.persist(self.fs, snapshot, repository, max_file_bytes=max_file_bytes)
        if remote:
            git.push(self.info.repository, remote, workspace=self.fs.workspace_id)
        return {
            "snapshot": snapshot.to_dict(),
            "repository": self.info.repository,
            "commit": persisted.commit,
            "ref": persisted.ref,
            "number": persisted.number,
            "objects_written": persisted.objects_written,
            "pushed_to": remote,
        }

    def push(self, url: str) -> Json:
        """Push this workspace's persisted snapshots to a git remote."""
        git.push(self.info.repository, url, workspace=self.fs.workspace_id)
        return {"repository": self.info.repository, "url": url}

    def fetch(self, url: str) -> Json:
        """Fetch this workspace's persisted snapshots from a git remote."""
        git.fetch(self.info.repository, url, workspace=self.fs.workspace_id)
        return {"repository": self.info.repository, "url": url}

    # -- about the daemon --------------------------------------------------------------

    def describe(self) -> Json:
        """The fixed facts: version, pid, paths, what the Filesystem properties answer."""
        return {
            "api_version": API_VERSION,
            "pid": self.info.pid,
            "mountpoint": self.info.mountpoint,
            "socket": self.info.socket,
            "workspace_id": self.fs.workspace_id,
            "read_only": self.view.read_only,
            "root": self.view.root,
            "mount_point": self.view.mount_point,
            "repository": self.info.repository,
            "started_at": self.info.started_at,
            "log": self.info.log,
        }

    def attach(self, mount: Mount) -> None:
        """The daemon's mount: ``status`` reports the kernel requests it serves, and
        forks are served on it from now on."""
        self._mount = mount
        self.forks.attach(mount)

    # -- forks -------------------------------------------------------------------------

    def fork(self, name: str | None, record: Json | None) -> Json:
        """Fork the workspace (or the snapshot ``record``) and serve it on the mount."""
        snapshot = None if record is None else decode_snapshot(record)
        return self.forks.add(name, snapshot).to_dict()

    def list_forks(self) -> list[Json]:
        """Every fork served beside the workspace."""
        return [info.to_dict() for info in self.forks.list()]

    def drop_fork(self, name: str) -> None:
        """Stop serving a fork."""
        self.forks.drop(name)

    def merge_fork(self, name: str, dry_run: bool, markers: bool) -> Json:
        """Merge a fork into the workspace."""
        if self.info.read_only and not dry_run:
            raise ReadOnlyError("read-only workspace", "/")
        return self.forks.merge(name, dry_run=dry_run, markers=markers).to_dict()

    def status(self) -> Json:
        """``describe`` plus what changes: size, memory, snapshots, uptime, requests."""
        tree = self.fs.tree
        return {
            **self.describe(),
            "files": tree.file_count,
            "bytes": tree.total_bytes,
            "memory_bytes": _rss_bytes(),
            "memory_budget": self.fs.memory_budget,
            "memory_held": tree.budget.held,
            "snapshots": len(self.fs.snapshots()),
            "forks": len(self.forks),  # not list(): that diffs every fork
            "current_snapshot": self.current(),
            "uptime_seconds": round(time.monotonic() - self._started, 3),
            "requests": self._requests(),
        }

    def _requests(self) -> Json | None:
        """The mount's requests since it started, by type (None before ``attach``)."""
        if self._mount is None:
            return None
        stats = self._mount.stats()
        return {
            "total": stats.total,
            "handler_seconds": round(stats.total_seconds, 6),
            "open_free": self._mount.open_free,
            "latency_hint": self._mount.latency_hint,
            "counts": dict(stats.counts),
            "seconds": {name: round(value, 6) for name, value in stats.seconds.items()},
        }


def _absolute(path: str) -> str:
    """Archive paths come from the caller's side; a relative one has no meaning here."""
    if not os.path.isabs(path):
        raise InvalidArgumentError("archive paths must be absolute", path)
    return path


def now_iso() -> str:
    """The current time as the records write it."""
    return datetime.now(UTC).isoformat(timespec="seconds")
