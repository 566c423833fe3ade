"""What the daemon says about the forks it serves, on both ends of the wire.

The client needs it without pygit2 (``_forks``, which merges, imports
``workspacefs.git``); what a merge reports is ``fs.MergeReport``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..fs import to_json
from ._wire import Json


@dataclass(frozen=True, slots=True)
class ForkInfo:
    """A fork the daemon serves beside its workspace.

    Attributes:
        name: Its name on the mount.
        path: Its directory: ``<mountpoint>/.forks/<name>``.
        workspace_id: The fork's own workspace id (its snapshots' records name it).
        files: Files (and symlinks) it holds.
        bytes: Bytes its files hold.
        changed: Paths it changed since it was forked (added, modified or deleted).
    """

    name: str
    path: str
    workspace_id: str
    files: int
    bytes: int
    changed: int

    def to_dict(self) -> Json:
        """As JSON (``fs.to_json``)."""
        data: Json = to_json(self)
        return data
