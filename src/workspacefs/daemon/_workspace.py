"""The daemon's side of the protocol: one workspace and the verbs callers may run on it.

``call`` runs any verb of the table (``_verbs``): it binds the request's
arguments against the verb's contract, runs it on what the table says (a
view, the live workspace, or this class's own methods: the ``Daemon``
verbs and the protocol verbs with more to do here), and writes the result
as the contract's type. Every call runs in a worker thread of the control
server, never on the FUSE loop's thread, so a long grep, persist or export
delays neither the mount nor other callers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .. import git
from .._errors import (
    BackendUnavailableError,
    InvalidArgumentError,
    ReadOnlyError,
    ReadOnlyRestoreError,
    SnapshotNotFoundError,
    StoreDamagedError,
)
from ..archive import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits, export_archive, import_archive
from ..fs import (
    DeclaredRules,
    Denial,
    FilesystemDiff,
    FilesystemSnapshot,
    HeldMerge,
    InMemoryFilesystem,
    MergeReport,
    PersistResult,
    PruneResult,
    RecordedCall,
    RewindResult,
    Rule,
    Side,
    SnapshotRetentionPolicy,
    TransferResult,
    TreeFilesystem,
    Trial,
    call_history,
    from_json,
    rewind,
    to_json,
)
from ..fuse import Mount, refuse_if_mounted_inside
from ..store import DurableWorkspace, Recovery
from ..tools import ToolAnswer  # a plain record (tools._answer): no pydantic
from ._fork_results import ForkInfo
from ._forks import Forks
from ._verbs import VIEW, WORKSPACE, Daemon, Method, Verb
from ._wire import API_VERSION, Json

if TYPE_CHECKING:
    from ..sandbox import MountTrials, SandboxOptions
    from ._tool_calls import ToolCalls
RULES_SETTING = "rules"
"""The store setting that keeps a workspace's access rules (JSON), for its next daemon."""
FORK_RULES_SETTING = "fork-rules"
"""The store setting that keeps its forks' own access rules (JSON: fork name -> rules)."""

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
    name: str | None = None
    store: str | None = None
    durability: str = "none"
    interval: float = 0.0


class Workspace(Daemon):
    """One workspace served by a daemon: the live tree and every verb of the table.

    Args:
        fs: The live workspace.
        facts: What the daemon publishes about itself.
    """

    def __init__(
        self,
        fs: InMemoryFilesystem,
        facts: WorkspaceInfo,
        durable: DurableWorkspace | None = None,
        recovery: Recovery | None = None,
    ) -> None:
        self.fs = fs
        self.facts = facts
        self._durable = durable
        self._recovery = recovery
        # Each fork's own rules by its name, kept in the store: forks are not (docs/forks.md),
        # so a fork made again under its name is bound by them again, as the workspace is.
        self._fork_rules: dict[str, tuple[Rule, ...]] = {}
        self._rules_lock = threading.Lock()  # the settings are written whole
        self._forks = Forks(fs, read_only=facts.read_only, rules_of=self._kept_fork_rules)
        self._views: OrderedDict[uuid.UUID, TreeFilesystem] = OrderedDict()
        self._views_lock = threading.Lock()
        self._rewinding = threading.Lock()
        self._tools: ToolCalls | None = None
        self._tools_lock = threading.Lock()
        self._started = time.monotonic()
        self._mount: Mount | None = None
        self._mount_trials: MountTrials | None = None
        self._trials_lock = threading.Lock()
        # A read-only workspace serves a frozen view of what it was loaded with:
        # the kernel and every API write then refuse alike (EROFS).
        self.view: TreeFilesystem = fs
        if facts.read_only:
            self.view = fs.at(self._current_or_new())

    def _current_or_new(self) -> FilesystemSnapshot:
        current = self.fs.current_snapshot_id
        for record in self.fs.snapshots():
            if record.snapshot_id == current:
                return record
        return self.fs.snapshot(tag=None)

    def call(self, verb: Verb[Any, Any], body: Json) -> Any:
        """Run ``verb`` with the arguments in ``body`` (and ``at``, for a view verb);
        its result as JSON.

        Raises:
            InvalidArgumentError: An argument the verb does not take, or of the wrong type.
            ReadOnlyError: The verb changes the workspace, which is served read-only.
        """
        at = from_json(uuid.UUID | None, body.pop("at", None)) if verb.runs == VIEW else None
        arguments = verb.arguments(body)
        return verb.answer(self.run(verb, (), arguments, at=at))

    def run(
        self,
        verb: Verb[Any, Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        *,
        at: uuid.UUID | None = None,
    ) -> Any:
        """Run ``verb`` on what the table says, with arguments as its contract takes
        them (``args`` and ``kwargs``; for a view verb, of the snapshot ``at``); its
        result. What ``call`` runs for a client, and what the tools run here call.

        Raises:
            ReadOnlyError: The verb changes the workspace, which is served read-only.
        """
        # A view refuses a change itself, naming the path; a dry run changes nothing.
        dry_run = bool(kwargs.get("dry_run"))
        refused = verb.changes and verb.runs != VIEW and not dry_run
        if refused and self.facts.read_only:
            # A refused restore is a failed restore too (what the seeds catch).
            refusal = ReadOnlyRestoreError if verb.name == "restore" else ReadOnlyError
            raise refusal("read-only workspace", "/")
        if verb.changes and not dry_run and self._durable is not None:
            self._durable.check_writable()  # a full store takes no more: refused, unchanged
        subject: object = self
        if verb.runs == VIEW:
            subject = self.target(at)
        elif verb.runs == WORKSPACE:
            subject = self.fs
        value = getattr(subject, verb.name)
        if isinstance(verb, Method):
            value = value(*args, **kwargs)
        return value

    def target(self, snapshot_id: uuid.UUID | None) -> TreeFilesystem:
        """The live workspace, or a read-only view of the snapshot with this id."""
        if snapshot_id is None:
            return self.view
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

    def find(self, snapshot_id: uuid.UUID) -> FilesystemSnapshot:
        """The kept snapshot with this id."""
        for record in self.fs.snapshots():
            if record.snapshot_id == snapshot_id:
                return record
        raise SnapshotNotFoundError(f"no snapshot {snapshot_id}", None)

    # -- protocol verbs with more to do here -----------------------------------------

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
    ) -> FilesystemDiff:
        """What changed from ``base`` to ``target`` (None: the live tree, or for a
        read-only workspace the state it serves)."""
        if target is None and self.facts.read_only:
            target = self._current_or_new()
        return self.fs.diff(base, target)

    def delete_snapshot(self, snapshot: FilesystemSnapshot) -> None:
        """Forget a snapshot, and its cached view."""
        self.fs.delete_snapshot(snapshot)
        self._drop_views([snapshot.snapshot_id])

    def prune(self, policy: SnapshotRetentionPolicy, *, dry_run: bool = False) -> PruneResult:
        """Delete the snapshots a retention policy expires (``dry_run``: only name
        them), and their cached views (``InMemoryFilesystem.prune``); ``held_after``
        counts once the views are gone too (they hold what the snapshots did)."""
        result = self.fs.prune(policy, dry_run=dry_run)
        if dry_run:
            return result
        self._drop_views([record.snapshot_id for record in result.pruned])
        return dataclasses.replace(result, held_after=self.fs.tree.budget.held)

    def _drop_views(self, snapshot_ids: list[uuid.UUID]) -> None:
        """Forget the cached views of deleted snapshots: they hold their memory."""
        with self._views_lock:
            for snapshot_id in snapshot_ids:
                self._views.pop(snapshot_id, None)

    # -- recorded tool calls ----------------------------------------------------------

    def call_history(self) -> list[RecordedCall]:
        """The recorded tool calls, oldest first (``fs.call_history``)."""
        return call_history(self.fs)

    def rewind(self, call_id: str, *, force: bool = False) -> RewindResult:
        """Return the workspace to just before a recorded call (``fs.rewind``), one
        rewind at a time, and forget the cached views of the snapshots it deleted."""
        with self._rewinding:
            kept = {record.snapshot_id for record in self.fs.snapshots()}
            result = rewind(self.fs, call_id, force=force)
            self._drop_views(list(kept - {record.snapshot_id for record in self.fs.snapshots()}))
        return result

    def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        call_id: str | None = None,
        record: bool = False,
    ) -> ToolAnswer:
        """Run a built-in tool here, on this workspace (``ToolHost.call_tool``)."""
        return self.tools().call(tool, arguments, call_id=call_id, record=record)

    def serve_mcp(self, socket: str, *, rewind: bool = True) -> None:
        """Serve an MCP session on the descriptors a process sends on ``socket``."""
        self.tools().serve_session(socket, rewind=rewind)

    def tools(self) -> ToolCalls:
        """The tools this daemon runs, made on first use (they load pydantic)."""
        with self._tools_lock:
            if self._tools is None:
                from ._tool_calls import ToolCalls  # not before: a daemon serves sooner

                self._tools = ToolCalls(self)
            return self._tools

    # -- archives and git ------------------------------------------------------------

    def export_archive(
        self, path: str | os.PathLike[str], *, snapshot: FilesystemSnapshot | None = None
    ) -> int:
        """Write the workspace (or a snapshot) as a ZIP archive at ``path``."""
        view = self.target(None if snapshot is None else snapshot.snapshot_id)
        return export_archive(view, _absolute(path))

    def import_archive(
        self, path: str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS
    ) -> int:
        """Replace the workspace with the archive at ``path``."""
        return import_archive(self.fs, _absolute(path), limits=limits)

    def persist(
        self,
        snapshot: FilesystemSnapshot | None = None,
        *,
        tag: str | None = None,
        remote: str | None = None,
        max_file_bytes: int | None = None,
    ) -> PersistResult:
        """Persist a snapshot (a new one if ``snapshot`` is None) to the workspace's
        repository, then push it to ``remote`` if given. A file past ``max_file_bytes``
        (``git.persist``) is refused before the new snapshot is even taken."""
        repository = self.facts.repository
        if snapshot is None:
            git.check_persistable(self.fs, None, repository, max_file_bytes=max_file_bytes)
            snapshot = self.fs.snapshot(tag=tag)
        persisted = git.persist(self.fs, snapshot, repository, max_file_bytes=max_file_bytes)
        pushed = self.push(remote) if remote else None
        return PersistResult.of(persisted, repository, pushed)

    def push(self, url: str) -> TransferResult:
        """Push this workspace's persisted snapshots to a git remote (``git.push``:
        none of the remote's refs is replaced)."""
        return git.push(self.facts.repository, url, workspace=self.fs.workspace_id)

    def fetch(self, url: str) -> TransferResult:
        """Fetch this workspace's persisted snapshots from a git remote (``git.fetch``:
        none of the repository's refs is replaced)."""
        return git.fetch(self.facts.repository, url, workspace=self.fs.workspace_id)

    # -- forks -------------------------------------------------------------------------

    def fork(
        self, name: str | None = None, *, snapshot: FilesystemSnapshot | None = None
    ) -> ForkInfo:
        """Fork the workspace (or ``snapshot``) and serve it on the mount."""
        return self._forks.add(name, snapshot)

    def forks(self) -> list[ForkInfo]:
        """Every fork served beside the workspace."""
        return self._forks.list()

    def drop_fork(self, name: str) -> None:
        """Stop serving a fork (and forget its rules)."""
        self._forks.drop(name)
        self._keep_rules(name, ())

    def merge_fork(
        self, name: str, *, dry_run: bool = False, markers: bool = False, hold: bool = False
    ) -> MergeReport:
        """Merge a fork into the workspace (its conflicts' sides stay here: the
        answer is written as a ``MergeReport``); ``hold``: hold a conflicting one open."""
        return self._forks.merge(name, dry_run=dry_run, markers=markers, hold=hold)

    def merge_status(self) -> HeldMerge | None:
        """The merge held open, as it stands."""
        return self._forks.merge_status()

    def continue_merge(self, *, choose: Mapping[str, Side] | None = None) -> MergeReport:
        """Finish the merge held open, all or nothing."""
        return self._forks.continue_merge(choose)

    def abort_merge(self) -> None:
        """Drop the merge held open."""
        self._forks.abort_merge()

    # -- best of N ---------------------------------------------------------------------

    def _trials(self) -> MountTrials:
        """The trials run on the daemon's mount (made on first use: the sandbox's code
        loads only for a daemon that runs one)."""
        with self._trials_lock:
            if self._mount_trials is None:
                if self._mount is None:
                    raise BackendUnavailableError("the workspace is not mounted yet", None)
                from ..sandbox import MountTrials

                self._mount_trials = MountTrials(self.fs, self._mount)
            return self._mount_trials

    def best_of(
        self,
        commands: Sequence[str],
        *,
        score: str | None = None,
        timeout: float | None = None,
        image: str | None = None,
        rootfs: str | None = None,
        memory: str | None = None,
    ) -> Trial:
        """Run a trial: each command at once in a fork and a container of its own."""
        if self.facts.read_only:
            raise ReadOnlyError("a read-only workspace accepts no try", "/")
        options: SandboxOptions = {"image": image, "rootfs": rootfs}
        if memory is not None:
            options["memory"] = memory
        if timeout is not None:
            options["timeout"] = timeout
        return self._trials().best_of(commands, score=score, **options)

    def trials(self) -> list[Trial]:
        """The trials, pending and recently decided."""
        with self._trials_lock:
            trials = self._mount_trials
        return [] if trials is None else trials.trials()

    def accept_attempt(self, attempt_id: str, *, hold: bool = False) -> MergeReport:
        """Accept an attempt, drop its trial's others; a merge held open is served."""
        return self._forks.served(self._trials().accept_attempt(attempt_id, hold=hold))

    def drop_trial(self, trial_id: str) -> Trial:
        """Drop every attempt of a pending trial."""
        return self._trials().drop_trial(trial_id)

    # -- access rules -------------------------------------------------------------------

    def _ruled(self, fork: str | None) -> InMemoryFilesystem:
        return self.fs if fork is None else self._forks.get(fork)

    def access_rules(self, *, fork: str | None = None) -> DeclaredRules:
        """The workspace's (or a fork's) access rules, as declared."""
        return self._ruled(fork).rules.declared()

    def add_rules(self, rules: Sequence[Rule], *, fork: str | None = None) -> DeclaredRules:
        """Declare access rules on the workspace or a fork (see ``fs.AccessRules``)."""
        target = self._ruled(fork)
        target.rules.add(*rules)
        self._keep_rules(fork, target.rules.own)
        return target.rules.declared()

    def remove_rules(self, patterns: Sequence[str], *, fork: str | None = None) -> DeclaredRules:
        """Drop the access rules of these patterns from the workspace or a fork."""
        target = self._ruled(fork)
        target.rules.remove(*patterns)
        self._keep_rules(fork, target.rules.own)
        return target.rules.declared()

    def denials(
        self, path: str | None = None, *, after: int = 0, fork: str | None = None
    ) -> list[Denial]:
        """What the access rules refused in the workspace or a fork."""
        return self._ruled(fork).denials(path, after=after)

    def start_rules(self, given: Sequence[Rule]) -> None:
        """Put in force the rules the workspace's store kept and those ``given`` (the
        mount's options), before the mount serves; keep them all for the next daemon.

        Raises:
            StoreDamagedError: The store's rules cannot be read (refused rather than
                serving the workspace without its protections).
        """
        kept: tuple[Rule, ...] = ()
        store = None if self._durable is None else self._durable.store
        if store is not None:
            try:
                written = store.setting(RULES_SETTING)
                if written is not None:
                    kept = from_json(tuple[Rule, ...], json.loads(written))
                forks = store.setting(FORK_RULES_SETTING)
                if forks is not None:
                    self._fork_rules = from_json(dict[str, tuple[Rule, ...]], json.loads(forks))
            except ValueError as exc:  # InvalidArgumentError is one too
                raise StoreDamagedError(
                    f"the store's access rules are unreadable: {exc}", store.path
                ) from None
        self.fs.rules.set([*kept, *given])
        if given:
            self._keep_rules(None, self.fs.rules.own)

    def _kept_fork_rules(self, name: str) -> tuple[Rule, ...]:
        """The rules kept for the fork of this name (``Forks.add`` puts them in force)."""
        with self._rules_lock:
            return self._fork_rules.get(name, ())

    def _keep_rules(self, fork: str | None, own: tuple[Rule, ...]) -> None:
        """Write the workspace's rules (``fork`` None) or a fork's own to its store (if it
        has one): resumed, the workspace has them, and so has a fork made again under
        the name."""
        with self._rules_lock:
            if fork is not None:
                if own:
                    self._fork_rules[fork] = own
                elif self._fork_rules.pop(fork, None) is None:
                    return  # nothing was kept for it
            if self._durable is None:
                return
            store = self._durable.store
            if fork is None:
                kept = to_json(own, tuple[Rule, ...]) or None
                store.set_setting(RULES_SETTING, json.dumps(kept) if kept else None)
            else:
                forks = to_json(self._fork_rules, dict[str, tuple[Rule, ...]]) or None
                store.set_setting(FORK_RULES_SETTING, json.dumps(forks) if forks else None)

    # -- about the daemon --------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """The fixed facts: version, pid, paths, what the Filesystem properties answer."""
        return {
            "api_version": API_VERSION,
            "pid": self.facts.pid,
            "mountpoint": self.facts.mountpoint,
            "socket": self.facts.socket,
            "workspace_id": self.fs.workspace_id,
            "read_only": self.view.read_only,
            "root": self.view.root,
            "mount_point": self.view.mount_point,
            "repository": self.facts.repository,
            "started_at": self.facts.started_at,
            "log": self.facts.log,
            "name": self.facts.name,
            "store": self.facts.store,
            "durability": self.facts.durability,
            "interval": self.facts.interval if self.facts.durability == "interval" else None,
        }

    def attach(self, mount: Mount) -> None:
        """The daemon's mount: ``status`` reports the kernel requests it serves, and
        forks are served on it from now on."""
        self._mount = mount
        self._forks.attach(mount)

    def status(self) -> dict[str, Any]:
        """``info`` plus what changes: size, memory, snapshots, uptime, requests."""
        tree = self.fs.tree
        current = self.fs.current_snapshot_id
        usage = self.fs.memory_usage()
        hydration = git.hydration(self.fs)  # a large snapshot loaded from git: its progress
        return {
            **self.info(),
            "files": tree.file_count,
            "bytes": tree.total_bytes,
            "memory_bytes": _rss_bytes(),
            "memory_budget": usage.budget,
            "memory_held": usage.held,
            "memory_evictable": usage.evictable,
            "memory_on_disk": usage.on_disk,
            "snapshots": len(self.fs.snapshots()),
            "forks": len(self._forks),  # not list(): that diffs every fork
            "current_snapshot": None if current is None else str(current),
            "uptime_seconds": round(time.monotonic() - self._started, 3),
            "requests": self._requests(),
            "fuse": self._connection(),
            "journal": self._journal(),
            "hydration": None if hydration is None else hydration.facts(),
        }

    def unmount(self) -> None:
        """Refuse (``MountedInsideError``) while something is mounted inside the mount
        point: a lazy unmount would take it along, daemon and all. The control server
        stops the daemon once this is answered."""
        refuse_if_mounted_inside(self.facts.mountpoint)
        with self._trials_lock:
            trials = self._mount_trials
        if trials is not None:
            trials.close()  # no container of a trial outlives the daemon

    def _journal(self) -> Json | None:
        """Where the store's journal stands (None: no store), and what resuming found."""
        durable, recovery = self._durable, self._recovery
        if durable is None:
            return None
        synced = durable.synced_at
        return {
            "durable_through": durable.durable_through,
            "synced_at": None if synced is None else _iso(synced),
            "resumed_records": 0 if recovery is None else recovery.records,
            "damage": None
            if recovery is None or recovery.damage is None
            else {
                "offset": recovery.damage.offset,
                "reason": recovery.damage.reason,
                "torn": recovery.damage.torn,
                "set_aside": recovery.set_aside,
            },
        }

    def _connection(self) -> Json | None:
        """The mount's libfuse and the capabilities its INIT negotiated (None before
        ``attach``, or with a stock pyfuse3)."""
        connection = None if self._mount is None else self._mount.connection
        return None if connection is None else connection.to_json()

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


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def _absolute(path: str | os.PathLike[str]) -> str:
    """Archive paths come from the caller's side; a relative one has no meaning here."""
    path = os.fspath(path)
    if not os.path.isabs(path):
        raise InvalidArgumentError("archive paths must be absolute", path)
    return path


def now_iso() -> str:
    """The current time as the records write it."""
    return datetime.now(UTC).isoformat(timespec="seconds")
