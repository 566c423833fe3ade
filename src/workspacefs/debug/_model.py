"""What the debug UI shows: targets, snapshots, tree entries, changes, where a
snapshot came from and who changed what. Plain values, turned into JSON by
``to_json``."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..fs import Cause, SnapshotChanges, parse_call_tag, short_id
from ..fs import EntryKind as EntryKind  # one path's entry is the fs layer's
from ..fs import TreeEntry as TreeEntry
from ..fs import depth_first as depth_first
from ..fs import tree_key as tree_key

LIVE = "live"
"""The snapshot id that names a live workspace's current state."""

_EXEC_TAG = re.compile(r"^exec-(?P<number>\d+)-(?P<phase>before|after)$")


@dataclass(frozen=True, slots=True)
class TargetInfo:
    """What is being debugged.

    Attributes:
        kind: ``archive``, ``session``, ``checkpoints``, ``git`` or ``live``.
        label: A short name for people (a file name, a workspace id).
        location: Where it is (a path, a mount point), or None.
        details: Kind-specific facts (the workspace id, the session id, ...).
    """

    kind: str
    label: str
    location: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "kind": self.kind,
            "label": self.label,
            "location": self.location,
            "details": dict(self.details),
        }


@dataclass(frozen=True, slots=True)
class Origin:
    """What made a snapshot, as far as its record says.

    Attributes:
        kind: ``tool`` (an undo snapshot taken before or after a tool call) or ``exec``
            (a sandbox command's before/after snapshot).
        summary: One line for people, e.g. ``before write_file (call-3)``.
        details: The parts: tool, call id, phase, the call's arguments where known.
    """

    kind: str
    summary: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"kind": self.kind, "summary": self.summary, "details": dict(self.details)}


def origin_from_tag(tag: str | None) -> Origin | None:
    """The origin a snapshot's tag records, or None.

    ``UndoableToolset`` tags the snapshot it takes before a mutating tool call
    ``undo:<tool>:<call id>``, and the one after it ``after:<tool>:<call id>``;
    the sandbox tags the two around a command ``exec-<n>-before`` and
    ``exec-<n>-after``.
    """
    if tag is None:
        return None
    undo = parse_call_tag(tag)
    if undo is not None:
        tool, call = undo.tool, undo.call_id
        phase = "before" if undo.phase == "undo" else "after"
        return Origin(
            "tool",
            f"{phase} {tool} ({call})",
            {"tool": tool, "call_id": call, "phase": phase},
        )
    command = _EXEC_TAG.match(tag)
    if command is not None:
        number, phase = int(command["number"]), command["phase"]
        return Origin("exec", f"{phase} exec #{number}", {"exec": number, "phase": phase})
    return None


@dataclass(frozen=True, slots=True)
class SpaceFigures:
    """The memory a snapshot (or the live state) holds, where the target can count it.

    Attributes:
        reached: Bytes of file data it reaches.
        shared: Of those, what something else holds too.
        exclusive: Of those, what nothing else holds: what deleting it frees.
    """

    reached: int
    shared: int
    exclusive: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"reached": self.reached, "shared": self.shared, "exclusive": self.exclusive}


@dataclass(frozen=True, slots=True)
class SnapshotSummary:
    """One snapshot in the timeline.

    Attributes:
        id: How the API names it (a UUID, an archive's id, or ``live``).
        number: Its place in the timeline, from 1.
        created_at: When it was taken (None for the live state).
        tag: Its tag, if any.
        parent: The id of the snapshot it was taken after, where recorded.
        file_count: Files and symlinks (None where unknown, as for the live state).
        total_bytes: Bytes in files (None where unknown).
        origin: The tool call or command that it belongs to, where recorded.
        source: Where the state is kept, for people (``memory``, a commit, an archive).
        space: Shared and exclusive bytes in memory (a live in-memory workspace only).

    Its JSON also carries ``short_id``, the id as every label shows it (``fs.short_id``).
    """

    id: str
    number: int
    created_at: datetime | None
    tag: str | None = None
    parent: str | None = None
    file_count: int | None = None
    total_bytes: int | None = None
    origin: Origin | None = None
    source: str | None = None
    space: SpaceFigures | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "short_id": short_id(self.id),
            "number": self.number,
            "created_at": None if self.created_at is None else self.created_at.isoformat(),
            "tag": self.tag,
            "parent": self.parent,
            "file_count": self.file_count,
            "total_bytes": self.total_bytes,
            "origin": None if self.origin is None else self.origin.to_json(),
            "source": self.source,
            "space": None if self.space is None else self.space.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Changes:
    """Files and symlinks that differ between two snapshots, each tuple sorted.

    ``unchanged_count`` is None where the target cannot count it cheaply.
    """

    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    unchanged_count: int | None = None

    def reversed(self) -> Changes:
        """The same changes seen from the other side."""
        return Changes(self.deleted, self.modified, self.added, self.unchanged_count)

    def status(self, path: str) -> str:
        """``added``, ``modified``, ``deleted`` or ``unchanged`` for one path."""
        for name, paths in (
            ("added", self.added),
            ("modified", self.modified),
            ("deleted", self.deleted),
        ):
            if _contains(paths, path):
                return name
        return "unchanged"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "added": list(self.added),
            "modified": list(self.modified),
            "deleted": list(self.deleted),
            "unchanged_count": self.unchanged_count,
        }


def _contains(ordered: tuple[str, ...], item: str) -> bool:
    index = bisect_left(ordered, item)
    return index < len(ordered) and ordered[index] == item


# -- who changed what -------------------------------------------------------------------


def cause_json(cause: Cause) -> dict[str, Any]:
    """A cause as the UI shows it: its fields, its kind and one line of text."""
    return {**cause.to_dict(), "kind": cause.kind, "text": cause.describe()}


@dataclass(frozen=True, slots=True)
class PathAttribution:
    """How one path changed and who changed it (causes as ``cause_json``, oldest first)."""

    kind: str
    causes: tuple[Mapping[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"kind": self.kind, "causes": [dict(cause) for cause in self.causes]}


@dataclass(frozen=True, slots=True)
class Attribution:
    """What one snapshot changed since the snapshot before it, and who changed each path.

    Attributes:
        base: The id of the snapshot the changes are counted from, when the
            timeline lists it (None: the empty workspace, or one not listed).
        paths: Each changed file or symlink.
    """

    base: str | None
    paths: Mapping[str, PathAttribution]

    @classmethod
    def of(cls, step: SnapshotChanges, listed: Iterable[str]) -> Attribution:
        """A step of a workspace's history; ``listed`` are the timeline's ids."""
        base = None if step.base is None else str(step.base.snapshot_id)
        paths = {
            change.path: PathAttribution(change.kind, tuple(cause_json(c) for c in change.causes))
            for change in step.changes
        }
        return cls(base if base in set(listed) else None, paths)

    def causes(self, most: int) -> tuple[list[dict[str, Any]], int]:
        """The distinct causes of the changes, newest first: the first ``most``, and how
        many more there are."""
        seen: dict[str, dict[str, Any]] = {}
        for change in self.paths.values():
            for cause in reversed(change.causes):
                seen.setdefault(cause["text"], dict(cause))
        found = list(seen.values())
        return found[:most], max(0, len(found) - most)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "base": self.base,
            "changes": {path: change.to_json() for path, change in sorted(self.paths.items())},
        }


def merged(steps: Sequence[Mapping[str, PathAttribution]]) -> dict[str, PathAttribution]:
    """The changes of consecutive steps (newest first) as one step: a path added then
    deleted did not change, one deleted then added was modified; causes united."""
    found: dict[str, PathAttribution] = {}
    for step in steps:  # newest first: each older step comes before what ``found`` holds
        for path, older in step.items():
            newer = found.get(path)
            if newer is None:
                found[path] = older
                continue
            causes = [c for c in older.causes if c not in newer.causes] + list(newer.causes)
            found[path] = PathAttribution(_kind_of(older.kind, newer.kind), tuple(causes))
    return {path: change for path, change in found.items() if change.kind != "unchanged"}


def _kind_of(older: str, newer: str) -> str:
    if older == "added":
        return "unchanged" if newer == "deleted" else "added"
    if newer == "deleted":
        return "deleted"
    return "modified"
