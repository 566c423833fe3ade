"""Attribution in git: each persisted snapshot's changes and their causes.

The metadata commit records, as JSON, the ``SnapshotChanges`` of the persisted
snapshot and of every kept snapshot between it and the nearest snapshot
persisted to the same repository before it (newest first), so the chain of
snapshot commits carries the whole history with no step twice. Up to
``INLINE_HISTORY`` bytes it is the second paragraph of the metadata commit's
message (no object more per persist); a longer one is a blob, ``history``, in
the metadata commit's root tree (a name no directory's metadata uses), so
``git log --all`` stays readable. Causes are written once each, in a table
the changes refer to by index::

    {"format": 1,
     "causes": [{"tool": "edit_file", "call_id": "toolu_01"}, {"pid": 4242, ...}],
     "snapshots": [{"snapshot": {...record...}, "base": {...} | null,
                    "changes": [["src/app.py", "modified", [0, 1]], ...]}, ...]}

``load`` hands the chain to the new workspace as its recorded history
(``_load.GitHistory``), read commit by commit only as far as a caller looks.
A commit without the blob (written before attribution existed) ends it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pygit2

from .._errors import LimitExceededError
from ..fs import (
    Cause,
    FilesystemSnapshot,
    InMemoryFilesystem,
    PathChange,
    SnapshotChanges,
    change_kind,
)
from ._objects import MODE_FILE, TreeEntry, read_blob, read_tree
from ._state import PersistState

HISTORY_BLOB = b"history"
FORMAT = 1
INLINE_HISTORY = 16 << 10
"""The longest history kept in the metadata commit's message, in bytes."""


def history_to_persist(
    fs: InMemoryFilesystem, snapshot: FilesystemSnapshot, state: PersistState
) -> list[SnapshotChanges]:
    """The changes the commit of ``snapshot`` records: its own, then each earlier
    snapshot's back to (not including) one already in the repository."""
    anchors = (
        [] if state.record is None or state.version is None else [(state.record, state.version)]
    )
    found: list[SnapshotChanges] = []
    for step in fs.history(snapshot, anchors=anchors, everything=True):
        if found and step.snapshot is not None and step.snapshot.snapshot_id in state.persisted:
            break
        found.append(step)
    return found


def encode_history(steps: Sequence[SnapshotChanges]) -> bytes:
    """The ``history`` blob for ``steps`` (see the module docstring)."""
    document = history_document(steps)
    return json.dumps(document, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def history_document(
    steps: Sequence[SnapshotChanges],
    record_dict: Callable[[FilesystemSnapshot], dict[str, Any]] = FilesystemSnapshot.to_dict,
) -> dict[str, Any]:
    """The ``history`` record for ``steps`` as JSON values, for a document that holds
    it (``encode_history`` writes it alone). ``record_dict`` gives a snapshot's record
    as a dict (``to_dict``; one that remembers the dicts it made saves making them
    again for a record met before)."""
    table: dict[Cause, int] = {}
    snapshots = []
    for step in steps:
        changes = [
            [change.path, change.kind, [table.setdefault(c, len(table)) for c in change.causes]]
            for change in step.changes
        ]
        snapshots.append(
            {
                "snapshot": None if step.snapshot is None else record_dict(step.snapshot),
                "base": None if step.base is None else record_dict(step.base),
                "changes": changes,
            }
        )
    return {"format": FORMAT, "causes": [c.to_dict() for c in table], "snapshots": snapshots}


def decode_history(data: bytes) -> list[SnapshotChanges]:
    """The steps a ``history`` blob holds; ValueError (or KeyError, TypeError, or
    InvalidArgumentError, a ValueError) if it is not one."""
    try:
        document = json.loads(data)
    except RecursionError:  # valid JSON, nested deeper than the parser recurses
        raise ValueError("the history record is nested too deeply") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a workspacefs history record of a known format")
    causes = [Cause.from_dict(cause) for cause in document["causes"]]
    steps = []
    for item in document["snapshots"]:
        changes = sorted(
            (
                PathChange(str(path), change_kind(kind), tuple(causes[i] for i in refs))
                for path, kind, refs in item["changes"]
            ),
            key=lambda change: change.path,
        )
        snapshot, base = (
            None if item[key] is None else FilesystemSnapshot.from_dict(item[key])
            for key in ("snapshot", "base")
        )
        steps.append(SnapshotChanges(snapshot, base, tuple(changes)))
    return steps


def with_history(entries: list[TreeEntry], blob: pygit2.Oid) -> list[TreeEntry]:
    """A metadata root's entries with ``blob`` as its ``history``."""
    return [*without_history(entries), (HISTORY_BLOB, MODE_FILE, blob)]


def without_history(entries: list[TreeEntry]) -> list[TreeEntry]:
    """A metadata root's entries without a ``history`` blob."""
    return [entry for entry in entries if entry[0] != HISTORY_BLOB]


def recorded_history(
    odb: pygit2.Odb, meta_commit: pygit2.Commit, max_bytes: int
) -> list[SnapshotChanges] | None:
    """The steps a metadata commit records, or None if it records none (it was
    written before attribution existed). A record over ``max_bytes`` is refused
    (LimitExceededError) before it is read."""
    found = _history_record(odb, meta_commit, max_bytes)
    if isinstance(found, pygit2.Oid):
        return decode_history(read_blob(odb, found))
    return None if found is None else decode_history(found.encode("ascii"))


def history_recorded(odb: pygit2.Odb, meta_commit: pygit2.Commit, max_bytes: int) -> bool:
    """True if ``recorded_history`` would find steps to read (its size checked as there:
    LimitExceededError), without reading them."""
    return _history_record(odb, meta_commit, max_bytes) is not None


def _history_record(
    odb: pygit2.Odb, meta_commit: pygit2.Commit, max_bytes: int
) -> pygit2.Oid | str | None:
    """Where a metadata commit's history is: its ``history`` blob (checked against
    ``max_bytes``), its message's body (older commits), or nowhere (None)."""
    for name, _, oid in read_tree(odb, meta_commit.tree_id):
        if name == HISTORY_BLOB:
            size = odb.read_header(oid)[1]
            if size > max_bytes:
                raise LimitExceededError(
                    f"the history recorded with {meta_commit.id} has {size:,} bytes, over the "
                    f"limit of {max_bytes:,} (max_record_bytes of git.LoadLimits)",
                    None,
                )
            return oid
    _, _, body = meta_commit.message.partition("\n\n")
    body = body.strip()
    return body if body.startswith("{") else None
