"""``HostFilesystem``: the Filesystem protocol over a real directory, sandboxed.

The protocol's verbs are the shared ones (``fs.BackendFilesystem``) over
``fs.DirectoryBackend``: paths resolve descriptor by descriptor from the
root's descriptor, opened once here, so no ``..``, absolute path or symlink,
existing or swapped in during the call, can reach outside the root. The
snapshot strategies (``_snapshots``, ``_strategies``) and archive imports
(``_archive``) use the same descriptor primitives (docs/host.md).
"""

from __future__ import annotations

import os
import tempfile
import uuid

from .._errors import (
    InvalidArgumentError,
    NotADirectoryFsError,
    ReadOnlyRestoreError,
    SnapshotCreationError,
    SnapshotIncompatibleError,
    SnapshotNotFoundError,
)
from ..archive import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits
from ..fs import (
    DEFAULT_LIMITS,
    BackendFilesystem,
    DirectoryBackend,
    FilesystemDiff,
    FilesystemSnapshot,
    Limits,
    changed_since,
    check_tag,
    either,
)
from ._archive import check_special_modes, export_directory, import_directory
from ._config import HostFilesystemConfig
from ._snapshots import GitSnapshots
from ._strategies import ArchiveStrategy, CopySnapshots, Strategy, StrategyName, supports_reflink


class HostFilesystem(BackendFilesystem):
    """The ``Filesystem`` protocol over a host directory, confined to it.

    Args:
        root: The directory agents work in.
        read_only: Refuse every write with PermissionError.
        mount_point: Absolute prefix mapping to the root, e.g. "/workspace";
            symlinks with absolute targets under it stay inside.
        limits: Per-call limits of the protocol.
        git_dir: Bare git repository for ``git`` snapshots, outside the root
            (default: a new temporary directory on the first snapshot).
        snapshot_strategy: ``git`` (byte-exact commits), ``copy`` (a full copy,
            reflinked where possible), ``archive`` (ZIP), or ``auto``: ``copy``
            where reflinks share blocks, else ``git``. Each snapshot records
            its strategy.
        snapshot_dir: Where ``copy`` and ``archive`` keep snapshots
            (default: a new temporary directory).
        config: Seed 001's ``HostFilesystemConfig``: its strategy and directory
            replace the two arguments above, and its ``max_snapshots`` deletes the
            oldest snapshot this object took once there are more.
        _root, _read_only, _mount_point, _git_dir: The seeds' spellings of the
            arguments above (their dataclass fields), accepted as well.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        mount_point: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
        git_dir: str | os.PathLike[str] | None = None,
        snapshot_strategy: StrategyName = "auto",
        snapshot_dir: str | os.PathLike[str] | None = None,
        config: HostFilesystemConfig | None = None,
        _root: str | os.PathLike[str] | None = None,
        _read_only: bool | None = None,
        _mount_point: str | None = None,
        _git_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        root = either("root", root, None, _root)
        if root is None:
            raise InvalidArgumentError("HostFilesystem needs a root directory", None)
        read_only = either("read_only", read_only, False, _read_only)
        mount_point = either("mount_point", mount_point, None, _mount_point)
        git_dir = either("git_dir", git_dir, None, _git_dir)
        self._root = os.path.realpath(root)
        if not os.path.isdir(self._root):
            raise NotADirectoryFsError("workspace root is not a directory", self._root)
        self._directory = DirectoryBackend(self._root, mount_point=mount_point)
        super().__init__(
            self._directory, read_only=read_only, mount_point=mount_point, limits=limits
        )
        descriptor = self._directory.descriptor
        self._git = GitSnapshots(self._root, descriptor, os.fspath(git_dir) if git_dir else None)
        self._strategy_name: str = snapshot_strategy
        self._max_snapshots: int | None = None
        if config is not None:
            chosen = config.snapshot_strategy
            self._strategy_name = "auto" if chosen is None else chosen.value
            snapshot_dir = config.snapshot_dir or snapshot_dir
            if config.max_snapshots < 1:
                raise InvalidArgumentError("max_snapshots must be at least 1", None)
            self._max_snapshots = config.max_snapshots
        self._snapshot_dir = os.fspath(snapshot_dir) if snapshot_dir else None
        self._strategies: dict[str, Strategy] = {"git": self._git}
        self._current: uuid.UUID | None = None
        self._taken: list[FilesystemSnapshot] = []

    @property
    def root(self) -> str:
        """The host directory."""
        return self._root

    @property
    def read_only(self) -> bool:
        """True if writes are refused: by this object, or by a read-only mount under it.

        Only the first is checked before a call; the kernel refuses the rest (EROFS).
        """
        return self._read_only or bool(os.statvfs(self._root).f_flag & os.ST_RDONLY)

    # -- snapshots -------------------------------------------------------------

    @property
    def git_dir(self) -> str | None:
        """The external git directory holding ``git`` snapshots, once there is one."""
        return self._git.git_dir

    @property
    def current_snapshot_id(self) -> uuid.UUID | None:
        """The snapshot last taken or restored here."""
        return self._current

    def _strategy(self, name: str | None) -> Strategy:
        name = name or "git"
        if name in ("auto", "reflink"):
            directory = self._snapshot_dir or tempfile.gettempdir()
            shares = supports_reflink(self._directory.descriptor, directory)
            if name == "reflink" and not shares:
                raise SnapshotCreationError(
                    "reflink snapshots need a filesystem that shares blocks (btrfs, XFS)",
                    directory,
                )
            name = "copy" if shares else "git"
        if name == "overlay":
            raise SnapshotCreationError(
                "overlay snapshots are not offered: use reflink, git, archive or copy", None
            )
        if name not in self._strategies:
            kinds: dict[str, type[CopySnapshots | ArchiveStrategy]] = {
                "copy": CopySnapshots,
                "archive": ArchiveStrategy,
            }
            if name not in kinds:
                raise InvalidArgumentError(f"unknown snapshot strategy {name!r}", name)
            self._strategies[name] = kinds[name](
                self._root, self._directory.descriptor, self._snapshot_dir
            )
        return self._strategies[name]

    def snapshot(self, *, tag: str | None = None) -> FilesystemSnapshot:
        """Capture the whole directory (untracked and ignored files too) with the strategy.

        Raises:
            InvalidArgumentError: ``tag`` breaks the rule of tags (``check_tag``).
        """
        if tag is not None:
            check_tag(tag)
        strategy = self._strategy(self._strategy_name)
        self._strategy_name = strategy.name  # "auto" decides once
        record = strategy.snapshot(tag, self._current)
        self._current = record.snapshot_id
        self._taken.append(record)
        if self._max_snapshots is not None:
            while len(self._taken) > self._max_snapshots:
                self.delete_snapshot(self._taken[0])
        return record

    def snapshots(self) -> list[FilesystemSnapshot]:
        """The snapshots this object took and still keeps, oldest first (a snapshot
        store outlives the object; its records are the caller's to keep)."""
        return list(self._taken)

    def delete_snapshot(self, snapshot: FilesystemSnapshot) -> None:
        """Delete a snapshot from its store (``max_snapshots`` does this to the oldest).

        Raises:
            SnapshotNotFoundError: Not a snapshot of this directory's stores.
        """
        if snapshot.root_path != self._root:
            raise SnapshotNotFoundError("snapshot of another directory", snapshot.root_path)
        self._strategy(snapshot.ref.kind).delete(snapshot)
        self._taken = [s for s in self._taken if s.snapshot_id != snapshot.snapshot_id]

    def restore(
        self, snapshot: FilesystemSnapshot, *, if_unchanged_since: FilesystemSnapshot | None = None
    ) -> None:
        """Return the directory exactly to ``snapshot``, removing what came since.

        Works in a new process too: the snapshot records its strategy and
        where it is kept. ``if_unchanged_since`` is checked holding the lock
        this filesystem's writes take; writers outside this process are not
        held off (a host directory has no compare-and-swap).
        """
        if self._read_only:
            raise ReadOnlyRestoreError("read-only filesystem", self._root)
        if snapshot.root_path != self._root:
            raise SnapshotIncompatibleError("snapshot of another directory", snapshot.root_path)
        with self._directory.mutating():
            if if_unchanged_since is not None:
                changes = self.diff(if_unchanged_since)
                if changes.changed:
                    raise changed_since(changes)
            self._strategy(snapshot.ref.kind).restore(snapshot)
            self._current = snapshot.snapshot_id

    def diff(
        self, base: FilesystemSnapshot, target: FilesystemSnapshot | None = None
    ) -> FilesystemDiff:
        """Files added, modified and deleted from ``base`` to ``target`` (or now)."""
        if target is not None and target.ref.kind != base.ref.kind:
            raise SnapshotIncompatibleError("snapshots kept by different strategies", None)
        return self._strategy(base.ref.kind).diff(base, target)

    def cleanup(self) -> None:
        """Remove every snapshot store this filesystem made; safe to call twice."""
        for strategy in self._strategies.values():
            strategy.cleanup()

    def export_archive(self, path: str | os.PathLike[str]) -> int:
        """Write the directory as a workspace archive; the file count.

        Anything ``import_archive`` would refuse is refused here first.
        """
        return export_directory(self._directory.descriptor, path)

    def import_archive(
        self,
        path: str | os.PathLike[str],
        *,
        limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
        special_modes: bool = False,
    ) -> int:
        """Replace the directory's content with a workspace archive; the file count.

        A hostile or damaged archive raises and leaves the directory as it was.
        Setuid, setgid and sticky bits are dropped unless ``special_modes``,
        which is refused when running as root (the archive comes from elsewhere).
        """
        self._writable(os.fspath(path))
        check_special_modes(special_modes, trusted=False)
        return import_directory(
            self._directory.descriptor, path, limits=limits, special_modes=special_modes
        )
