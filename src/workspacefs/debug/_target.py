"""``DebugTarget``: what the web UI reads, whatever holds the snapshots.

Archives and session dumps, a git repository of persisted workspaces, and a
live workspace (in this process, or a daemon's through ``RemoteFilesystem``)
each implement it. The app normalises every path before calling a target
(relative, no ``.``/``..`` segments, ``""`` for the root), so a target only
looks paths up in what it holds and never resolves one against a real
directory.

Errors are the project's: ``SnapshotNotFoundError`` for an unknown snapshot
id, ``NotFoundError``, ``NotADirectoryFsError`` and ``IsADirectoryFsError``
for paths, ``ArchiveError`` and ``SnapshotError`` for damaged storage,
``BackendUnavailableError`` when the storage cannot be reached.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from ._model import Attribution, Changes, SnapshotSummary, TargetInfo, TreeEntry


class DebugTarget(Protocol):
    """Snapshots, trees, files and diffs of one workspace's history."""

    def info(self) -> TargetInfo:
        """What is being debugged."""
        ...

    def snapshots(self, *, space: bool = True) -> Sequence[SnapshotSummary]:
        """The timeline, oldest first (a live workspace's current state last).

        With ``space`` False the summaries may leave out what each snapshot
        holds alone and shares (a pass over a live workspace's share table),
        for callers that only look snapshots up.
        """
        ...

    def details(self, snapshot: str) -> Mapping[str, Any]:
        """JSON-ready facts about one snapshot beyond its summary (an archive's
        manifest, a session's state); empty when there are none."""
        ...

    def list(self, snapshot: str, path: str) -> Sequence[TreeEntry]:
        """The entries of one directory, sorted by name."""
        ...

    def walk(self, snapshot: str, *, after: str = "") -> Iterator[TreeEntry]:
        """Every entry below the root, lazily, depth first in git's tree order
        (``tree_key`` grows from each entry to the next), so that files alone come out
        sorted by path; with ``after``, only the entries whose ``tree_key`` is greater
        (a later page of a listing). An unknown snapshot raises at the call, not on
        the first ``next``."""
        ...

    def stat(self, snapshot: str, path: str) -> TreeEntry:
        """One entry (a final symlink is not followed)."""
        ...

    def read(self, snapshot: str, path: str, limit: int) -> bytes:
        """The first ``limit`` bytes of a file."""
        ...

    def blocks(self, snapshot: str, path: str) -> Iterator[bytes]:
        """A file's bytes, block by block."""
        ...

    def diff(self, base: str, target: str) -> Changes:
        """Files and symlinks added, modified and deleted from ``base`` to ``target``."""
        ...

    def attribution(self, snapshot: str) -> Attribution | None:
        """What ``snapshot`` changed since the snapshot before it and who changed each
        path; None where the target does not record causes (archives)."""
        ...

    def warm(self) -> None:
        """Do the slow part of opening now (indexes, caches), so that the first
        request does not pay for it."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...
