"""``blame``: which tool call or command changed a file, snapshot by snapshot."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Protocol, runtime_checkable

from pydantic import Field

from ..fs import AttributedFilesystem, BlameEntry, Cause, Denial, FilesystemSnapshot
from ._context import ToolContext
from ._messages import count, describe_error, quote
from ._result import ToolResult
from ._snapshots import describe
from ._tool import Tool, ToolAnnotations, ToolParams, served


class BlameParams(ToolParams):
    """Arguments of ``blame``."""

    path: str = Field(min_length=1, description="The file to explain (relative to the root).")
    limit: int = Field(20, ge=1, le=500, description="Most changes to show, newest first.")


def _when(snapshot: FilesystemSnapshot | None) -> str:
    if snapshot is None:
        return "not in a snapshot yet"
    taken = snapshot.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{describe(snapshot)}, {taken}"


def who(causes: Sequence[Cause]) -> str:
    """``by edit_file call toolu_01 and pid 42 `sed -i ...```, or that nobody is known."""
    if not causes:
        return "by an unrecorded cause"
    return "by " + " and ".join(c.describe() for c in reversed(causes))


def entry_line(entry: BlameEntry) -> str:
    """One change, for people and models."""
    return f"{entry.kind} {who(entry.causes)} ({_when(entry.snapshot)})"


@runtime_checkable
class _Denials(Protocol):
    """A workspace that keeps what its access rules refused (in memory, a daemon's)."""

    def denials(self, path: str | None = None, *, after: int = 0) -> list[Denial]: ...


def _refused(fs: object, path: str, limit: int) -> list[str]:
    """Lines for the changes of ``path`` access rules refused, the latest ``limit``."""
    if not isinstance(fs, _Denials):
        return []
    try:
        found = fs.denials(path)
    except (OSError, ValueError):
        return []
    if not found:
        return []
    lines = [f"Refused by access rules ({count(len(found), 'time')}, latest last):"]
    lines += [f"- {denial.describe()}" for denial in found[-limit:]]
    return lines


def blame(params: BlameParams, *, context: ToolContext) -> ToolResult[list[BlameEntry]]:
    """Who changed a file: each change, newest first, with its tool call or command."""
    fs = context.workspace()
    if not isinstance(fs, AttributedFilesystem):
        return ToolResult.fail("This workspace does not record who changed its files.")
    try:
        entries = list(fs.blame(params.path))
    except (OSError, ValueError) as exc:
        return ToolResult.fail(f"Cannot blame {quote(params.path)}: {describe_error(exc)}.")
    refused = _refused(fs, params.path, params.limit)
    if not entries:
        where = "exists but" if fs.exists(params.path) else "does not exist and"
        lines = [f"{quote(params.path)} {where} has no recorded change in the kept history."]
        return ToolResult.ok("\n".join(lines + refused), entries)
    shown = entries[: params.limit]
    lines = [f"{quote(params.path)}: {count(len(entries), 'change')}, newest first (who wrote it):"]
    lines += [f"{n}. {entry_line(entry)}" for n, entry in enumerate(shown, 1)]
    if len(entries) > len(shown):
        lines.append(f"[... {count(len(entries) - len(shown), 'older change')} not shown]")
    return ToolResult.ok("\n".join(lines + refused), entries)


BLAME = served(
    Tool(
        name="blame",
        description=(
            "Show who changed a file: each change (added, modified, deleted), newest first, "
            "with the snapshot it is in and its cause: the tool call (tool name and call id) "
            "or the command and process that wrote it through the mount; and the changes of "
            "it the workspace's access rules refused, with the rule and who tried."
        ),
        params=BlameParams,
        handler=blame,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Blame file"
        ),
    )
)
