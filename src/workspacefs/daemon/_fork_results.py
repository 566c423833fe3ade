"""What the daemon says about its forks and their merges, on both ends of the wire.

The client needs these without pygit2 (``workspacefs.git`` holds the merge
itself), so they mirror ``git.MergeResult`` in the part a caller far from
the tree needs: the paths, the conflicts by kind, the marker text.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from ..fs import FilesystemSnapshot
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
        """As JSON."""
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, data: Json) -> ForkInfo:
        """From ``to_dict``'s JSON."""
        return cls(**data)


@dataclass(frozen=True, slots=True)
class ConflictReport:
    """A path both sides changed in ways that do not merge (see ``git.MergeConflict``).

    ``markers`` is the text merged with git's conflict markers, when asked
    for and the conflict is one of text.
    """

    path: str
    kind: str
    markers: bytes | None = None


@dataclass(frozen=True, slots=True)
class MergeReport:
    """What merging a fork into the workspace did (or, not ``applied``, would do).

    Attributes:
        fork: The fork's name.
        changed: Paths the merge changes in the workspace.
        conflicts: Paths that do not merge; any conflict applies nothing.
        applied: True if the workspace changed.
        snapshot: The workspace's snapshot taken before an applied merge.
    """

    fork: str
    changed: tuple[str, ...]
    conflicts: tuple[ConflictReport, ...]
    applied: bool
    snapshot: FilesystemSnapshot | None = None

    @property
    def clean(self) -> bool:
        """True if no path conflicts."""
        return not self.conflicts

    def to_dict(self) -> Json:
        """As JSON (marker text in base64)."""
        return {
            "fork": self.fork,
            "changed": list(self.changed),
            "conflicts": [
                {
                    "path": c.path,
                    "kind": c.kind,
                    "markers": None if c.markers is None else base64.b64encode(c.markers).decode(),
                }
                for c in self.conflicts
            ],
            "applied": self.applied,
            "snapshot": None if self.snapshot is None else self.snapshot.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Json) -> MergeReport:
        """From ``to_dict``'s JSON."""
        conflicts = tuple(
            ConflictReport(
                c["path"],
                c["kind"],
                None if c["markers"] is None else base64.b64decode(c["markers"]),
            )
            for c in data["conflicts"]
        )
        snapshot = data["snapshot"]
        return cls(
            fork=data["fork"],
            changed=tuple(data["changed"]),
            conflicts=conflicts,
            applied=data["applied"],
            snapshot=None if snapshot is None else FilesystemSnapshot.from_dict(snapshot),
        )
