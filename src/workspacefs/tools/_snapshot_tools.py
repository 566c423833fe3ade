"""``snapshot``, ``restore`` and ``diff`` between any two states of the workspace."""

from __future__ import annotations

import contextlib
import json

from pydantic import ConfigDict, Field

from .._errors import ContentChangedError
from ..fs import (
    DEFAULT_LIMITS,
    FilesystemDiff,
    FilesystemSnapshot,
    SnapshotableFilesystem,
    changed_paths,
    normalize_path,
    short_id,
)
from ._context import ToolContext
from ._messages import count, describe_error
from ._patch import cut_note, unified_diff
from ._result import ToolResult
from ._snapshots import WorkspaceSnapshots, describe
from ._tool import Tool, ToolAnnotations, ToolParams, served

MAX_LISTED = 200
"""Paths listed per kind of change before the rest are counted."""


def _snapshots(context: ToolContext) -> WorkspaceSnapshots | str:
    fs = context.workspace()
    if not isinstance(fs, SnapshotableFilesystem):
        return "This workspace does not support snapshots."
    return WorkspaceSnapshots.of(fs)


class SnapshotParams(ToolParams):
    """Arguments of ``snapshot``."""

    tag: str | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="A name to restore or diff it by later (must be new): letters, digits, "
        "'.', '_', '-' or ':', starting with a letter or digit.",
    )


def snapshot(params: SnapshotParams, *, context: ToolContext) -> ToolResult[FilesystemSnapshot]:
    """Capture the workspace now."""
    snaps = _snapshots(context)
    if isinstance(snaps, str):
        return ToolResult.fail(snaps)
    try:
        record = snaps.snapshot(params.tag)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, FileExistsError) else describe_error(exc)
        return ToolResult.fail(f"Cannot take a snapshot tagged `{params.tag}`: {why}.")
    name = json.dumps(record.tag or short_id(record.snapshot_id))
    return ToolResult.ok(
        f"Took {describe(record)}: {count(record.file_count, 'file')}, "
        f"{count(record.total_bytes, 'byte')}. Return to it with restore(id_or_tag={name}); "
        f"see what changed since with diff(from={name}).",
        record,
    )


class RestoreParams(ToolParams):
    """Arguments of ``restore``."""

    id_or_tag: str = Field(
        min_length=1, description="The snapshot's tag, id, or the first 8 characters of its id."
    )


def summary(added: int, modified: int, deleted: int) -> str:
    """``3 files: 1 added, 2 modified``."""
    counts = [(added, "added"), (modified, "modified"), (deleted, "deleted")]
    detail = ", ".join(f"{n:,} {what}" for n, what in counts if n)
    return f"{count(added + modified + deleted, 'file')}: {detail}"


def restore(params: RestoreParams, *, context: ToolContext) -> ToolResult[FilesystemSnapshot]:
    """Return the workspace to a snapshot."""
    snaps = _snapshots(context)
    if isinstance(snaps, str):
        return ToolResult.fail(snaps)
    now: FilesystemSnapshot | None = None
    kept = False  # ``now`` is deleted on every way out unless it holds what was undone
    try:
        record = snaps.find(params.id_or_tag)
        # What is discarded is kept, and the restore happens only if nothing changed
        # since it was kept: another writer's change is never thrown away unseen.
        now = snaps.snapshot()
        undone = snaps.diff(record, now)
        snaps.restore(record, if_unchanged_since=now)
        kept = undone.changed
    except ContentChangedError:
        assert now is not None  # only the conditional restore raises it
        meanwhile = changed_paths(snaps.diff(now))  # for the message only
        return ToolResult.fail(
            f"Cannot restore snapshot `{params.id_or_tag}`: another writer changed the "
            f"workspace while it was restoring ({meanwhile}), so nothing was restored. Try again."
        )
    except (OSError, ValueError) as exc:
        why = describe_error(exc)
        return ToolResult.fail(f"Cannot restore snapshot `{params.id_or_tag}`: {why}.")
    finally:
        if now is not None and not kept:
            # Housekeeping: a backend that cannot delete it now (a daemon gone) must not
            # turn the answer into an exception.
            with contextlib.suppress(OSError, ValueError):
                snaps.forget(now)
    if not kept:  # nothing is in ``now`` that the restored snapshot lacks
        return ToolResult.ok(f"Restored {describe(record)}; nothing had changed since.", record)
    undid = summary(len(undone.added), len(undone.modified), len(undone.deleted))
    message = (
        f"Restored {describe(record)}. Undid the changes since it ({undid}); the state "
        f"before is kept as {describe(now)}: restore it to bring them back."
    )
    return ToolResult.ok(message, record)


class DiffParams(ToolParams):
    """Arguments of ``diff``."""

    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(
        alias="from",
        min_length=1,
        description="The earlier snapshot: tag, id, or the first 8 characters of its id.",
    )
    to: str | None = Field(
        None, description="The later snapshot, same forms; omit for the live workspace."
    )
    path: str = Field(".", description="Show only changes under this file or directory.")
    max_lines: int = Field(400, ge=1, le=5_000, description="Most patch lines to show.")


def _listing(label: str, paths: list[str]) -> list[str]:
    if not paths:
        return []
    lines = [f"{label} ({len(paths):,}):"] + [f"  {path}" for path in paths[:MAX_LISTED]]
    if len(paths) > MAX_LISTED:
        lines.append(f"  ... and {count(len(paths) - MAX_LISTED, 'more path')}")
    return lines


def diff(params: DiffParams, *, context: ToolContext) -> ToolResult[FilesystemDiff]:
    """What changed between two snapshots, or a snapshot and now, with a unified diff."""
    snaps = _snapshots(context)
    if isinstance(snaps, str):
        return ToolResult.fail(snaps)
    fs = context.workspace()
    try:
        prefix = normalize_path(params.path, fs.mount_point, getattr(fs, "limits", DEFAULT_LIMITS))
    except (OSError, ValueError) as exc:
        return ToolResult.fail(f"Cannot diff under `{params.path}`: {describe_error(exc)}.")
    try:
        base = snaps.find(params.from_)
        target = None if params.to is None else snaps.find(params.to)
        changes = snaps.diff(base, target)
    except (OSError, ValueError) as exc:
        names = params.from_ if params.to is None else f"{params.from_}` or `{params.to}"
        return ToolResult.fail(f"Cannot diff snapshot `{names}`: {describe_error(exc)}.")
    to = "the live workspace" if target is None else describe(target)

    def under(paths: tuple[str, ...]) -> list[str]:
        return [p for p in paths if not prefix or p == prefix or p.startswith(prefix + "/")]

    added, modified, deleted = under(changes.added), under(changes.modified), under(changes.deleted)
    scope = f" under `{prefix}`" if prefix else ""
    head = f"From {describe(base)} to {to}{scope}: "
    if not (added or modified or deleted):
        return ToolResult.ok(head + "no changes.", changes)
    lines = [head + summary(len(added), len(modified), len(deleted)) + "."]
    lines += _listing("added", added) + _listing("modified", modified)
    lines += _listing("deleted", deleted)
    before, after = snaps.view(base), snaps.view(target)
    if before is None or after is None:
        lines.append("(This backend cannot read a snapshot without restoring it: no line diff.)")
        return ToolResult.ok("\n".join(lines), changes)
    patch = unified_diff(before, after, changes, max_lines=params.max_lines, under=prefix)
    lines += ["", *patch.lines]
    note = cut_note(patch, params.max_lines)
    if note is not None:
        lines.append(note)
    return ToolResult.ok("\n".join(lines), changes)


SNAPSHOT = served(
    Tool(
        name="snapshot",
        description=(
            "Save the state of the whole workspace (instant), optionally under a tag. Take one "
            "before a risky change; restore or diff it later by tag or id."
        ),
        params=SnapshotParams,
        handler=snapshot,
        annotations=ToolAnnotations(
            read_only=False, destructive=False, idempotent=False, title="Snapshot workspace"
        ),
    )
)

RESTORE = served(
    Tool(
        name="restore",
        description=(
            "Return the whole workspace to a snapshot (by tag or id), discarding every change "
            "made since. The message says how many files it changed back."
        ),
        params=RestoreParams,
        handler=restore,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=True, title="Restore snapshot"
        ),
    )
)

DIFF = served(
    Tool(
        name="diff",
        description=(
            "Show what changed between two snapshots, or between a snapshot and the live "
            "workspace (omit `to`): added, modified and deleted files, then a unified diff of "
            "text files, capped at max_lines."
        ),
        params=DiffParams,
        handler=diff,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Diff snapshots"
        ),
    )
)
