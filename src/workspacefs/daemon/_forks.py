"""The forks a daemon serves beside its workspace: made, listed, merged and dropped.

Forks share the workspace's memory (O(1) each, growing only with what they
change), which only works inside one process; so the daemon of a workspace
serves its forks too, on its own mount, at ``<mountpoint>/.forks/<name>``
(see ``Mount.add_fork`` and docs/forks.md). The CLI's ``fork``, ``forks``
and ``merge`` commands reach them through the control socket.

A merge held open (``git.WorkspaceMerges``) is served the same way while it
is open, at ``<mountpoint>/.forks/merge-<n>``: not one of the forks listed,
merged or dropped by name; it goes when the merge is continued or aborted.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence

from .. import git
from .._errors import BackendUnavailableError, NotFoundError, ReadOnlyError
from ..fs import FilesystemSnapshot, HeldMerge, InMemoryFilesystem, Rule, Side
from ..fuse import Mount
from ..tree import diff_versions
from ._fork_results import ForkInfo


class Forks:
    """The forks of one daemon's workspace.

    Args:
        fs: The workspace.
        read_only: The daemon serves it read-only (then it makes no forks).
        rules_of: The rules kept for a fork of a name (its own, put in force when it is
            made, before it is served).
    """

    def __init__(
        self,
        fs: InMemoryFilesystem,
        *,
        read_only: bool,
        rules_of: Callable[[str], Sequence[Rule]] = lambda name: (),
    ) -> None:
        self._fs = fs
        self._rules_of = rules_of
        self._read_only = read_only
        self._mount: Mount | None = None
        self._forks: dict[str, InMemoryFilesystem] = {}
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def attach(self, mount: Mount) -> None:
        """Serve forks on ``mount`` (the workspace's), from now on."""
        self._mount = mount

    def _serving(self) -> Mount:
        if self._mount is None:
            raise BackendUnavailableError("the workspace is not mounted yet", None)
        return self._mount

    def add(self, name: str | None, snapshot: FilesystemSnapshot | None) -> ForkInfo:
        """Fork the workspace (its live state, or ``snapshot``) as ``name`` (default:
        the next free ``fork-<n>``) and serve it at ``<mountpoint>/.forks/<name>``.

        Raises:
            ReadOnlyError: The daemon serves the workspace read-only.
            AlreadyExistsError: A fork of that name exists.
            InvalidArgumentError: ``name`` breaks the rule of names (``fs.check_name``).
        """
        if self._read_only:
            raise ReadOnlyError("a read-only workspace makes no forks", name)
        mount = self._serving()
        fork = self._fs.fork(snapshot)
        with self._lock:
            if name is None:
                name = next(f"fork-{n}" for n in self._numbers if f"fork-{n}" not in self._forks)
            kept = self._rules_of(name)
            if kept:  # bound before anyone sees it (else nothing to do: a fork is O(1))
                fork.rules.set(kept)
            mount.add_fork(name, fork)
            self._forks[name] = fork
        return self._info(name, fork)

    def get(self, name: str) -> InMemoryFilesystem:
        """Fork ``name``.

        Raises:
            NotFoundError: No fork of that name.
        """
        with self._lock:
            fork = self._forks.get(name)
        if fork is None:
            raise NotFoundError("no fork of this name", name)
        return fork

    def list(self) -> list[ForkInfo]:
        """Every fork, by name."""
        with self._lock:
            forks = sorted(self._forks.items())
        return [self._info(name, fork) for name, fork in forks]

    def __len__(self) -> int:
        """How many forks there are."""
        with self._lock:
            return len(self._forks)

    def drop(self, name: str) -> None:
        """Stop serving fork ``name`` and forget it (a bind mount of it keeps what
        it shows until it is unmounted).

        Raises:
            NotFoundError: No fork of that name.
        """
        with self._lock:
            if self._forks.pop(name, None) is None:
                raise NotFoundError("no fork of this name", name)
        self._serving().remove_fork(name)

    def merge(self, name: str, *, dry_run: bool, markers: bool, hold: bool) -> git.MergeResult:
        """Merge fork ``name`` into the workspace (``workspacefs.git.merge``): all
        or nothing, a snapshot before; the fork stays. With ``hold``, a merge with
        conflicts is held open, its fork served at ``<mountpoint>/.forks/merge-<n>``.

        Raises:
            NotFoundError: No fork of that name.
            BusyError: ``hold``, and a merge is held open already.
        """
        with self._lock:
            fork = self._forks.get(name)
        if fork is None:
            raise NotFoundError("no fork of this name", name)
        merges = git.WorkspaceMerges.of(self._fs)
        result = merges.merge(fork, dry_run=dry_run, markers=markers, hold=hold, source=name)
        return self.served(result)

    def served(self, result: git.MergeResult) -> git.MergeResult:
        """``result`` of a merge into the workspace; if it holds the merge open, the
        merge's fork is served on the mount (at ``<mountpoint>/.forks/merge-<n>``)
        until the merge closes, and ``held`` says where."""
        held = git.WorkspaceMerges.of(self._fs).open
        if result.held is None or held is None:
            return result
        try:
            served = self._serve(held)
        except BaseException:
            held.abort()  # unserved, it could not be edited: the workspace never changed
            raise
        return dataclasses.replace(result, held=served)

    def _serve(self, held: git.OpenMerge) -> HeldMerge:
        """Serve an open merge's fork on the mount until the merge closes."""
        mount = self._serving()
        with self._lock:
            taken = {*self._forks, *mount.forks()}
            name = next(f"merge-{n}" for n in itertools.count(1) if f"merge-{n}" not in taken)
            path = mount.add_fork(name, held.filesystem)
        held.serve(name, path)
        held.on_close(lambda _: self._unserve(name))
        return held.report()

    def _unserve(self, name: str) -> None:
        mount = self._mount
        if mount is not None and mount.running:
            mount.remove_fork(name)

    def merge_status(self) -> HeldMerge | None:
        """The merge held open, as it stands (None: none is)."""
        return git.WorkspaceMerges.of(self._fs).merge_status()

    def continue_merge(self, choose: Mapping[str, Side] | None) -> git.MergeResult:
        """Finish the merge held open, all or nothing (``OpenMerge.continue_merge``)."""
        return git.WorkspaceMerges.of(self._fs).continue_merge(choose=choose)

    def abort_merge(self) -> None:
        """Drop the merge held open; the workspace never changed."""
        git.WorkspaceMerges.of(self._fs).abort_merge()

    def _info(self, name: str, fork: InMemoryFilesystem) -> ForkInfo:
        tree = fork.tree
        with tree.lock:
            point = fork.fork_point
            changed = 0
            if point is not None:
                paths = diff_versions(point, tree, tree.changes_since(point))
                changed = len(paths.added) + len(paths.modified) + len(paths.deleted)
            files, size = tree.file_count, tree.total_bytes
        path = self._serving().fork_path(name)
        return ForkInfo(name, path, fork.workspace_id, files, size, changed)
