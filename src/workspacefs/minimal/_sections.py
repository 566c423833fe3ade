"""Seed 003's sections: each provides a filesystem (an 8-method view) and its snapshots.

No prompt framework is a dependency: a section keeps the keyword arguments a
framework's section would take (``title``, ``key``, ``template``, ``tools``)
as attributes, and the filesystem and snapshot manager are made on first use.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..tools import FILE_TOOLS, Tool
from ._snapshots import DEFAULT_DIR, FilesystemSnapshot
from ._view import FilesystemView, HostBackend, InMemoryBackend

if TYPE_CHECKING:
    from ..fs import HostMount
    from ..sandbox import PodmanWorkspace, SandboxConfig

_SEED_TOOLS = ("ls", "read_file", "write_file", "edit_file", "glob", "grep", "rm")
FILESYSTEM_TOOLS: tuple[Tool[Any, Any], ...] = tuple(
    next(tool for tool in FILE_TOOLS if tool.name == name) for name in _SEED_TOOLS
)
"""The seed's ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``, ``grep``, ``rm``
(the project's tools of those names; ``FILE_TOOLS`` has more)."""


class FilesystemSection:
    """A section that provides a filesystem with snapshot support.

    Args:
        snapshot_dir: Where ``snapshots`` keeps its archives (default ``DEFAULT_DIR``).
        **section_kwargs: What a framework's section takes (``title``, ``key``,
            ``template``, ``tools``, ...): kept as attributes.
    """

    def __init__(self, *, snapshot_dir: Path | None = None, **section_kwargs: Any) -> None:
        self._snapshot_dir = snapshot_dir if snapshot_dir is not None else DEFAULT_DIR
        self._backend: FilesystemView | None = None
        self._snapshots: FilesystemSnapshot | None = None
        self.section_kwargs = dict(section_kwargs)
        self.title: str = section_kwargs.get("title", "")
        self.key: str = section_kwargs.get("key", "")
        self.template: str = section_kwargs.get("template", "")
        self.tools: tuple[Tool[Any, Any], ...] = tuple(section_kwargs.get("tools", ()))

    @property
    def filesystem(self) -> FilesystemView:
        """The filesystem, made on first use."""
        if self._backend is None:
            self._backend = self._create_backend()
        return self._backend

    @property
    def snapshots(self) -> FilesystemSnapshot:
        """The snapshot manager of ``filesystem``, made on first use."""
        if self._snapshots is None:
            self._snapshots = FilesystemSnapshot(self.filesystem, self._snapshot_dir)
        return self._snapshots

    def _create_backend(self) -> FilesystemView:
        """A fresh filesystem; subclasses say which."""
        raise NotImplementedError


def _defaults(kwargs: dict[str, Any], **defaults: Any) -> dict[str, Any]:
    return {**defaults, **kwargs}


class VfsSection(FilesystemSection):
    """An in-memory filesystem, filled from ``mounts`` (see ``InMemoryBackend``)."""

    def __init__(
        self,
        *,
        mounts: Sequence[HostMount] = (),
        allowed_host_roots: Sequence[str | os.PathLike[str]] = (),
        **kwargs: Any,
    ) -> None:
        self._mounts = tuple(mounts)
        self._allowed = tuple(allowed_host_roots)
        super().__init__(
            **_defaults(kwargs, title="Virtual Filesystem", key="vfs", tools=FILESYSTEM_TOOLS)
        )

    def _create_backend(self) -> FilesystemView:
        return InMemoryBackend(self._mounts, allowed_host_roots=self._allowed)


class WorkspaceSection(FilesystemSection):
    """A host directory: ``root``, or a new temporary one."""

    def __init__(self, *, root: Path | None = None, **kwargs: Any) -> None:
        self._root = root
        super().__init__(
            **_defaults(kwargs, title="Workspace", key="workspace", tools=FILESYSTEM_TOOLS)
        )

    def _create_backend(self) -> FilesystemView:
        root = self._root or Path(tempfile.mkdtemp(prefix="workspacefs-workspace-"))
        root.mkdir(parents=True, exist_ok=True)
        return HostBackend(root)


class PodmanSection(FilesystemSection):
    """A Podman sandbox (``sandbox.PodmanWorkspace``): its in-memory workspace, mounted
    in the container, with the shell tool besides the file tools. ``close`` removes
    the container."""

    def __init__(self, *, config: SandboxConfig | None = None, **kwargs: Any) -> None:
        self._config = config
        self._workspace: PodmanWorkspace | None = None
        super().__init__(**_defaults(kwargs, title="Sandbox", key="podman"))

    def _create_backend(self) -> FilesystemView:
        from ..sandbox import PodmanWorkspace

        self._workspace = PodmanWorkspace(config=self._config)
        # The seed's file tools first, then what the sandbox adds (the shell).
        others = tuple(t for t in self._workspace.tools if t not in FILE_TOOLS)
        self.tools = FILESYSTEM_TOOLS + others
        return FilesystemView(self._workspace.filesystem)

    def close(self) -> None:
        """Remove the container (the filesystem lives on)."""
        if self._workspace is not None:
            self._workspace.close()
