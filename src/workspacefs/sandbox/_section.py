"""``PodmanWorkspace``: a workspace section whose tools include a shell in a container.

Like the tool package's ``VfsWorkspace`` it holds an in-memory workspace,
its tagged snapshots and a tool registry of its own; its registry has the
``shell`` tool as well, bound to the section's sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Unpack

from ..fs import DEFAULT_LIMITS, FilesystemSnapshot, HostMount, InMemoryFilesystem, Limits
from ..git import WorkspaceMerges
from ..tools import (
    ToolContext,
    ToolRegistry,
    WorkspaceSnapshots,
    conflict_tools,
    filesystem_tools,
)
from ._config import SandboxConfig, SandboxOptions
from ._sandbox import PodmanSandbox
from ._shell import shell_tool
from ._try_tools import try_tools


class PodmanWorkspace:
    """An in-memory workspace in a Podman container, with file, snapshot and shell tools.

    Close it (or use it as a context manager) to remove the container and the
    mount; the filesystem lives on.

    Args:
        mounts: Host directories (or files) copied in at creation.
        allowed_host_roots: The only host directories ``mounts`` may come from.
        filesystem: The workspace to use instead of a new one (its
            ``mount_point`` must be the sandbox's ``workdir``).
        limits: Per-call limits of the protocol, for a new workspace.
        dry_run: Offer dry runs: ``shell`` takes ``dry_run``, with the
            ``accept_try`` and ``reject_try`` tools (see ``try_tools``), and
            the conflict tools for an accept held open (``conflict_tools``).
        session: The agent session the section belongs to (the seeds pass it;
            kept as ``session``).
        config: The sandbox's options as a ``SandboxConfig`` (seed 000's
            ``PodmanSandboxConfig``); ``options`` given too override it.
        **options: ``PodmanSandbox``'s options (image, network, memory, ...).
    """

    def __init__(
        self,
        mounts: Sequence[HostMount] = (),
        allowed_host_roots: Sequence[str | os.PathLike[str]] = (),
        *,
        filesystem: InMemoryFilesystem | None = None,
        limits: Limits = DEFAULT_LIMITS,
        dry_run: bool = False,
        session: Any = None,
        config: SandboxConfig | None = None,
        **options: Unpack[SandboxOptions],
    ) -> None:
        if config is not None:
            options = {**config.options(), **options}
        self.session = session
        if filesystem is None:
            filesystem = InMemoryFilesystem(
                mount_point=options.get("workdir", "/workspace"),
                read_only=options.get("read_only", False),
                limits=limits,
            )
        for mount in mounts:
            filesystem.hydrate_from_host(mount, allowed_roots=allowed_host_roots)
        self._sandbox = PodmanSandbox(filesystem, **options)
        self._tools = filesystem_tools(filesystem)
        self._tools.add(shell_tool(self._sandbox, dry_run=dry_run))
        if dry_run:
            for tool in try_tools(self._sandbox):
                self._tools.add(tool)
            for tool in conflict_tools(WorkspaceMerges.of(filesystem)):
                self._tools.add(tool)

    @property
    def filesystem(self) -> InMemoryFilesystem:
        """The workspace."""
        return self._sandbox.filesystem

    @property
    def sandbox(self) -> PodmanSandbox:
        """The container the shell tool runs in."""
        return self._sandbox

    @property
    def snapshots(self) -> WorkspaceSnapshots:
        """Tagged snapshots of the workspace (shared with the snapshot tools)."""
        return WorkspaceSnapshots.of(self.filesystem)

    @property
    def tools(self) -> ToolRegistry:
        """This section's tools: the file and snapshot tools, and ``shell``."""
        return self._tools

    def snapshot(self, *, tag: str | None = None) -> FilesystemSnapshot:
        """Snapshot the workspace the container sees (O(1)); see ``snapshots``."""
        return self.snapshots.snapshot(tag)

    def restore(self, snapshot: FilesystemSnapshot) -> None:
        """Return the workspace, and so the container's ``/workspace``, to ``snapshot``."""
        self.snapshots.restore(snapshot)

    def context(self, **fields: Any) -> ToolContext:
        """A ``ToolContext`` on this workspace; ``fields`` fill the framework's slots."""
        return ToolContext(filesystem=self.filesystem, **fields)

    def close(self) -> None:
        """Remove the container and the mount; safe to call twice."""
        self._sandbox.close()

    def __enter__(self) -> PodmanWorkspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
