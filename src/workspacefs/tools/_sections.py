"""Workspace sections: framework-neutral holders of a workspace, its snapshots and tools.

A prompt framework composes sections; whichever section holds the workspace
exposes ``filesystem``, and ``find_filesystem`` finds it the way seed 000's
``Prompt.filesystem()`` does. No framework is a dependency: a section is any
object with a ``filesystem`` attribute, nested through ``children`` or ``sections``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from .._errors import NotADirectoryFsError
from ..fs import (
    DEFAULT_LIMITS,
    Filesystem,
    HostMount,
    InMemoryFilesystem,
    Limits,
    SnapshotableFilesystem,
)
from ._context import ToolContext
from ._registry import ToolRegistry
from ._snapshots import WorkspaceSnapshots
from ._toolset import filesystem_tools


@runtime_checkable
class WorkspaceSection(Protocol):
    """A section that holds a workspace."""

    @property
    def filesystem(self) -> Filesystem:
        """The workspace the section's tools act on."""
        ...


class _Section:
    """What both sections share: the snapshots manager and a tool registry of their own."""

    def __init__(self, filesystem: SnapshotableFilesystem) -> None:
        self._fs = filesystem
        self._tools = filesystem_tools(filesystem)

    @property
    def filesystem(self) -> SnapshotableFilesystem:
        """The workspace."""
        return self._fs

    @property
    def snapshots(self) -> WorkspaceSnapshots:
        """Tagged snapshots of the workspace (shared with the snapshot tools)."""
        return WorkspaceSnapshots.of(self._fs)

    @property
    def tools(self) -> ToolRegistry:
        """This section's tools; ``tools.add(...)`` offers one more."""
        return self._tools

    def context(self, **fields: Any) -> ToolContext:
        """A ``ToolContext`` on this workspace; ``fields`` fill the framework's slots."""
        return ToolContext(filesystem=self._fs, **fields)


class VfsWorkspace(_Section):
    """An in-memory workspace, optionally filled from host directories.

    Args:
        mounts: Host directories (or files) copied in at creation.
        allowed_host_roots: The only host directories ``mounts`` may come from.
        mount_point: The absolute path agents see the workspace at.
        read_only: Refuse writes through the tools (hydration still happens).
        limits: Per-call limits of the protocol.
    """

    def __init__(
        self,
        mounts: Sequence[HostMount] = (),
        allowed_host_roots: Sequence[str | os.PathLike[str]] = (),
        *,
        mount_point: str | None = "/workspace",
        read_only: bool = False,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        fs = InMemoryFilesystem(mount_point=mount_point, read_only=read_only, limits=limits)
        for mount in mounts:
            fs.hydrate_from_host(mount, allowed_roots=allowed_host_roots)
        super().__init__(fs)
        self._memory = fs

    @property
    def filesystem(self) -> InMemoryFilesystem:
        """The in-memory workspace."""
        return self._memory


class HostWorkspace(_Section):
    """A workspace that is a real directory on the host.

    The tools layer sits beside the host layer and does not import it, so the
    caller opens the directory: ``HostWorkspace(HostFilesystem(root))``.

    Args:
        filesystem: A snapshotable filesystem over a host directory.
    """

    def __init__(self, filesystem: SnapshotableFilesystem) -> None:
        # Virtual filesystems report the root "/"; a host workspace is never the whole host.
        if filesystem.root == "/" or not os.path.isdir(filesystem.root):
            raise NotADirectoryFsError("workspace root is not a host directory", filesystem.root)
        super().__init__(filesystem)

    @property
    def root(self) -> str:
        """The host directory."""
        return self._fs.root


def _children(section: object) -> Iterable[object]:
    for name in ("children", "sections"):
        nested = getattr(section, name, None)
        if nested is not None and not isinstance(nested, str | bytes):
            try:
                return list(nested)
            except TypeError:
                continue
    return ()


def find_filesystem(sections: Iterable[object]) -> Filesystem | None:
    """The first section's ``filesystem``, searching depth-first through nested sections
    (``children`` or ``sections``), or None."""
    stack = list(sections)[::-1]
    seen: set[int] = set()
    while stack:
        section = stack.pop()
        if id(section) in seen:  # a cycle in a hand-built section graph
            continue
        seen.add(id(section))
        found = getattr(section, "filesystem", None)
        if found is not None and isinstance(found, Filesystem):
            return found
        stack.extend(list(_children(section))[::-1])
    return None
