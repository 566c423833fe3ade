"""Loading what ``--from`` names into a new live workspace (the daemon's side).

The git layer (pygit2) and the archive layer load only for a source of theirs:
``workspacefs mcp --from DIR`` answers sooner without them.
"""

from __future__ import annotations

import re

from .. import git
from .._errors import InvalidArgumentError, SnapshotNotFoundError
from ..fs import Cause, HostMount, InMemoryFilesystem, attributed
from ._sources import Source

LOADED_TAG = "from"
"""The tag of the snapshot of what a workspace loaded from a directory started with."""

_WORKSPACE_REF = re.compile(r"^refs/workspacefs/([^/]+)/snapshots/(\d+)$")


def _only_workspace(repository: str) -> tuple[str, int]:
    """The one workspace with snapshots in ``repository``, and its newest number."""
    newest: dict[str, int] = {}
    for name in git.open_repository(repository).references:
        found = _WORKSPACE_REF.match(name)
        if found:
            workspace, number = found[1], int(found[2])
            newest[workspace] = max(newest.get(workspace, 0), number)
    if not newest:
        raise SnapshotNotFoundError("the repository holds no workspace snapshots", repository)
    if len(newest) > 1:
        raise InvalidArgumentError(
            f"the repository holds {len(newest)} workspaces; name a full ref or commit", repository
        )
    return next(iter(newest.items()))


def load_source(
    source: Source,
    mount_point: str,
    *,
    limits: git.LoadLimits | None = None,
    special_modes: bool = False,
) -> InMemoryFilesystem:
    """A new live workspace holding what ``source`` names; ``limits`` applies to a git
    source (``git.load``; default ``git.DEFAULT_LOAD_LIMITS``), ``special_modes`` to a
    git source and an archive."""
    if source.kind == "git":
        assert source.path is not None
        try:
            workspace, newest = _only_workspace(source.path)
        except InvalidArgumentError:
            if source.ref is None:
                raise
            workspace, newest = "", 0
        ref = source.ref or str(newest)
        # A large snapshot serves at once; its directories list as they are reached
        # and in the background (the daemon starts ``git.hydration`` once mounted).
        return git.load(
            source.path,
            ref,
            workspace=workspace or None,
            mount_point=mount_point,
            limits=limits or git.DEFAULT_LOAD_LIMITS,
            special_modes=special_modes,
            background=True,
        )
    fs = InMemoryFilesystem(mount_point=mount_point)
    # What the workspace starts with is blamed on where it came from.
    with attributed(Cause.call(label=f"loaded from {source.kind} {source.path}")):
        if source.kind == "directory":
            assert source.path is not None
            hydrate = HostMount(source.path, mount_path=".")
            fs.hydrate_from_host(hydrate, allowed_roots=[source.path])
            # What ``workspacefs apply`` hands back is the work done since this state.
            fs.snapshot(tag=LOADED_TAG)
        elif source.kind == "archive":
            from ..archive import import_archive

            assert source.path is not None
            import_archive(fs, source.path, special_modes=special_modes)
    return fs
