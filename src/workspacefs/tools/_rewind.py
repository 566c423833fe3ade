"""``history`` and ``rewind``: the workspace's recorded tool calls, and going back to one.

Both work on what the workspace records (``fs.call_history``, ``fs.rewind``),
so they see every door's calls: this server's, a harness's ``UndoableToolset``,
another client's of the same daemon. ``UndoableToolset`` runs neither as a
recorded call: they act on the record itself (see ``UndoableToolset.call``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .._errors import SnapshotNotFoundError
from ..fs import (
    RecordedCall,
    RewindResult,
    SnapshotableFilesystem,
    call_history,
    rewind,
)
from ._context import ToolContext
from ._messages import count, describe_error, join_limited
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

MAX_LISTED = 100
"""Paths a rewind's message lists per kind before the rest are counted."""

_NO_HISTORY = "This workspace does not record tool calls (it cannot take snapshots)."


class HistoryParams(ToolParams):
    """Arguments of ``history``."""

    limit: int = Field(50, ge=1, le=1000, description="Most recent calls to show.")


def _line(number: int, call: RecordedCall) -> str:
    effect = "changed nothing" if call.after is None else "changed the workspace"
    return f"{number}. `{call.call_id}` {call.tool}: {effect}"


def history(params: HistoryParams, *, context: ToolContext) -> ToolResult[list[RecordedCall]]:
    """The recorded calls, oldest first."""
    fs = context.workspace()
    if not isinstance(fs, SnapshotableFilesystem):
        return ToolResult.fail(_NO_HISTORY)
    calls = call_history(fs)
    if not calls:
        return ToolResult.ok("No tool call that changes the workspace is recorded.", calls)
    shown = calls[-params.limit :]
    first = len(calls) - len(shown) + 1
    lines = [
        f"{count(len(calls), 'recorded call')} that may change the workspace, oldest first "
        "(rewind(call_id) returns the workspace to just before one):"
    ]
    if first > 1:
        lines.append(f"[... {count(first - 1, 'older call')} not shown]")
    lines += [_line(n, call) for n, call in enumerate(shown, first)]
    return ToolResult.ok("\n".join(lines), calls)


HISTORY = served(
    Tool(
        name="history",
        description=(
            "List the recorded tool calls that may have changed the workspace (file tools, "
            "shell commands), oldest first, with their call ids. Read-only calls are not "
            "recorded. rewind(call_id) returns the workspace to just before one of them."
        ),
        params=HistoryParams,
        handler=history,
        output=list[RecordedCall],
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Tool call history"
        ),
    )
)


class RewindParams(ToolParams):
    """Arguments of ``rewind``."""

    call_id: str = Field(min_length=1, description="The recorded call to go back to (history).")
    force: bool = Field(
        False,
        description="Also discard what other writers (not recorded calls) changed after "
        "that call; without it such a rewind is refused.",
    )


def _listed(kind: Literal["added back", "modified", "deleted"], paths: tuple[str, ...]) -> str:
    shown, rest = join_limited(paths, MAX_LISTED)
    more = f" and {rest:,} more" if rest else ""
    return f"{kind}: {', '.join(shown)}{more}"


def describe_rewind(result: RewindResult) -> str:
    """The message of a rewind: the cut point, then what it changed."""
    undone = ", ".join(f"`{call_id}`" for call_id in result.undone)
    lines = [
        f"Rewound to just before call `{result.call_id}`: "
        f"{count(len(result.undone), 'call')} undone ({undone}), oldest first."
    ]
    changes = result.changes
    if changes.changed:
        for kind, paths in (
            ("added back", changes.added),
            ("modified", changes.modified),
            ("deleted", changes.deleted),
        ):
            if paths:
                lines.append(_listed(kind, paths))  # type: ignore[arg-type]
    else:
        lines.append("No file changed.")
    if result.discarded:
        shown, rest = join_limited(result.discarded, MAX_LISTED)
        more = f" and {rest:,} more" if rest else ""
        lines.append(f"Discarded other writers' changes to: {', '.join(shown)}{more}.")
    return "\n".join(lines)


def rewind_tool(params: RewindParams, *, context: ToolContext) -> ToolResult[RewindResult]:
    """Return the workspace to just before a recorded call."""
    fs = context.workspace()
    if not isinstance(fs, SnapshotableFilesystem):
        return ToolResult.fail(_NO_HISTORY)
    try:
        result = rewind(fs, params.call_id, force=params.force)
    except SnapshotNotFoundError:
        return ToolResult.fail(
            f"Cannot rewind to `{params.call_id}`: no recorded call has this id (history "
            "lists them; a read-only call is not recorded)."
        )
    except (OSError, ValueError) as exc:
        return ToolResult.fail(f"Cannot rewind to `{params.call_id}`: {describe_error(exc)}.")
    return ToolResult.ok(describe_rewind(result), result)


REWIND = served(
    Tool(
        name="rewind",
        description=(
            "Return the whole workspace to how it was just before a recorded tool call "
            "(see history): that call and every later one are undone, shell commands "
            "included. The result lists the call ids undone, oldest first."
        ),
        params=RewindParams,
        handler=rewind_tool,
        output=RewindResult,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=False, title="Rewind workspace"
        ),
    )
)
