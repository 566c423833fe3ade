"""``accept_try`` and ``reject_try``: the tools that decide a ``shell`` dry run.

A dry run (``shell`` with ``dry_run=true``, see ``shell_tool(dry_run=True)``)
leaves a try pending and names it in its message; a model then calls one of
these with that ``try_id``. Accepting applies the try's changes (a merge if
the workspace changed meanwhile; conflicts apply nothing and are listed per
path with their three sides, or with ``hold`` the merge is held open for the
conflict tools, ``workspacefs.tools.conflict_tools``), rejecting drops them.
"""

from __future__ import annotations

from pydantic import Field

from .._errors import InvalidArgumentError
from ..fs import conflict_lines
from ..git import MergeResult
from ..tools import Tool, ToolAnnotations, ToolContext, ToolParams, ToolResult
from ._sandbox import PodmanSandbox
from ._try import TryRun

MAX_LISTED = 50
"""Paths an accept lists before counting the rest."""


class TryParams(ToolParams):
    """Arguments of ``accept_try`` and ``reject_try``."""

    try_id: str = Field(
        min_length=1, description='The try_id a dry run named, e.g. "try-1".', max_length=64
    )


class AcceptParams(TryParams):
    """Arguments of ``accept_try``."""

    hold: bool = Field(
        False,
        description="If the merge conflicts, hold it open: settle it with the conflicts, "
        "resolve and abort_merge tools (resolving it accepts the try).",
    )


def _find(sandbox: PodmanSandbox, context: ToolContext, try_id: str) -> TryRun | str:
    """The pending try ``try_id``, or why there is none."""
    if context.workspace() is not sandbox.filesystem:
        return "tries belong to the sandbox's workspace, not the one this call was given."
    pending = sandbox.tries()
    run = pending.get(try_id.strip())
    if run is not None:
        return run
    known = ", ".join(pending) if pending else "none"
    return f"no pending try {try_id!r} (pending: {known}); dry runs name theirs."


def _listed(paths: tuple[str, ...]) -> str:
    shown = ", ".join(paths[:MAX_LISTED])
    more = len(paths) - MAX_LISTED
    return shown + (f" and {more:,} more" if more > 0 else "")


def describe_accept(run: TryRun, outcome: MergeResult) -> str:
    """The ``accept_try`` message for ``outcome``."""
    if not outcome.applied and outcome.conflicts:
        lines = [
            f"{run.id} was not applied: the workspace changed since the dry run, and "
            f"{len(outcome.conflicts)} path(s) changed on both sides in ways that do not merge:"
        ]
        for conflict in outcome.conflicts:
            lines += conflict_lines(conflict)
        if outcome.held is not None:
            lines.append(
                f"Nothing changed yet: the merge is held open. Call conflicts to see where it "
                f"stands, take a side per path with resolve(take={{path: side}}) or edit the "
                f"merge's files, then resolve (which accepts {run.id}); or abort_merge."
            )
            return "\n".join(lines)
        lines.append(
            f"Nothing changed. {run.id} is still pending: call reject_try to drop it, then run "
            "the command again (with or without dry_run) on the current workspace, or accept "
            "it with hold=true to settle the conflicts."
        )
        return "\n".join(lines)
    tag = outcome.snapshot.tag if outcome.snapshot is not None else None
    undo = f" Snapshot {tag!r} holds the workspace as it was before." if tag else ""
    if not outcome.changed:
        return f"Accepted {run.id}: it changed no files.{undo}"
    return (
        f"Accepted {run.id}: the workspace now has its changes to {len(outcome.changed):,} "
        f"path(s): {_listed(outcome.changed)}.{undo}"
    )


def try_tools(
    sandbox: PodmanSandbox,
) -> tuple[Tool[AcceptParams, MergeResult], Tool[TryParams, str]]:
    """``accept_try`` and ``reject_try`` for ``sandbox``'s dry runs.

    Offer them with ``shell_tool(sandbox, dry_run=True)``:
    ``for tool in (shell_tool(box, dry_run=True), *try_tools(box)): registry.add(tool)``.
    """

    def accept_try(params: AcceptParams, *, context: ToolContext) -> ToolResult[MergeResult]:
        run = _find(sandbox, context, params.try_id)
        if isinstance(run, str):
            return ToolResult.fail(run)
        try:
            outcome = run.accept(hold=params.hold)
        except InvalidArgumentError as exc:  # decided meanwhile by another call
            return ToolResult.fail(str(exc.strerror))
        settled = not outcome.conflicts or outcome.held is not None
        return ToolResult(describe_accept(run, outcome), outcome, settled)

    def reject_try(params: TryParams, *, context: ToolContext) -> ToolResult[str]:
        run = _find(sandbox, context, params.try_id)
        if isinstance(run, str):
            return ToolResult.fail(run)
        try:
            run.reject()
        except InvalidArgumentError as exc:
            return ToolResult.fail(str(exc.strerror))
        return ToolResult.ok(f"Rejected {run.id}: its changes are dropped.", run.id)

    accept = Tool(
        name="accept_try",
        description=(
            "Apply the changes of a shell dry run (the try_id its result named) to the "
            "workspace. If the workspace changed since the dry run the two are merged; paths "
            "changed on both sides that do not merge are listed with their three sides and "
            "nothing is applied (hold=true holds the merge open to settle them)."
        ),
        params=AcceptParams,
        handler=accept_try,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=False, title="Accept a dry run"
        ),
    )
    reject = Tool(
        name="reject_try",
        description=(
            "Drop the changes of a shell dry run (the try_id its result named); the "
            "workspace stays as it is."
        ),
        params=TryParams,
        handler=reject_try,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=False, title="Reject a dry run"
        ),
    )
    return accept, reject
