"""``conflicts``, ``resolve`` and ``abort_merge``: the tools that settle a merge held open.

A merge with conflicts can be held open (``workspacefs.git.WorkspaceMerges``,
a daemon's ``merge_fork(hold=True)``, ``workspacefs merge --hold``): its
result so far is a fork of the workspace, text conflicts carrying git's
markers (diff3 style). A model then reads where each conflict stands
(``conflicts``: the three sides of each path, text hunks), edits the fork's
files with the ordinary tools (give it a context on the fork: the open
merge's ``filesystem``, or a mount's ``.forks/merge-<n>``), and finishes with
``resolve`` (taking a side for any path it did not edit), all or nothing, or
drops it with ``abort_merge``.

The tools take anything with the three verbs (``Merging``): the in-process
``WorkspaceMerges`` of a workspace, or a daemon's ``RemoteFilesystem``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from .._errors import ContentChangedError, NotFoundError, UnresolvedConflictsError
from ..fs import HeldMerge, MergeReport, Side, held_lines, snapshot_label
from ._context import ToolContext
from ._messages import describe_error
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams

MAX_LISTED = 50
"""Paths a merged result lists before counting the rest."""

NONE_OPEN = "No merge is held open in this workspace: there is nothing to resolve."


@runtime_checkable
class Merging(Protocol):
    """What holds a workspace's merges: a merge held open can be shown, continued or
    aborted (``workspacefs.git.WorkspaceMerges``, a daemon's ``RemoteFilesystem``)."""

    def merge_status(self) -> HeldMerge | None:
        """The merge held open, as it stands; None if there is none."""
        ...

    def continue_merge(self, *, choose: Mapping[str, Side] | None = None) -> MergeReport:
        """Take the sides ``choose`` names, then finish the merge: all or nothing."""
        ...

    def abort_merge(self) -> None:
        """Drop the merge held open; the workspace never changed."""
        ...


class ConflictsParams(ToolParams):
    """Arguments of ``conflicts``."""

    hunks: bool = Field(
        True, description="Show each text conflict's hunks (base, ours and theirs lines)."
    )


class ResolveParams(ToolParams):
    """Arguments of ``resolve``."""

    take: dict[str, Side] = Field(
        default_factory=dict,
        description='Sides to take first, path -> "ours" (the workspace\'s), "theirs" (what '
        'is merged in) or "base" (the common ancestor), e.g. {"logo.png": "theirs"}. For a '
        "mode conflict a side's mode is taken (the content merged). Paths you edited need "
        "no entry.",
    )


class AbortParams(ToolParams):
    """``abort_merge`` takes no arguments."""


def _listed(paths: tuple[str, ...]) -> str:
    shown = ", ".join(paths[:MAX_LISTED])
    more = len(paths) - MAX_LISTED
    return shown + (f" and {more:,} more" if more > 0 else "")


class _Handlers:
    """The three tools' handlers, over one ``Merging``."""

    def __init__(self, merges: Merging) -> None:
        self._merges = merges

    def conflicts(self, params: ConflictsParams, *, context: ToolContext) -> ToolResult[HeldMerge]:
        held = self._merges.merge_status()
        if held is None:
            return ToolResult.ok(NONE_OPEN)
        lines = held_lines(held, hunks=params.hunks)
        if held.unresolved:
            lines.append(
                "Edit each unresolved file in the merge's fork (remove every marker line: "
                "<<<<<<< ours, ||||||| base, =======, >>>>>>> theirs, keeping the text you "
                "want), or take a side with resolve(take={path: side}); then call resolve."
            )
        else:
            lines.append("Every conflict is resolved: call resolve to finish the merge.")
        return ToolResult.ok("\n".join(lines), held)

    def resolve(self, params: ResolveParams, *, context: ToolContext) -> ToolResult[MergeReport]:
        try:
            report = self._merges.continue_merge(choose=params.take or None)
        except NotFoundError:
            return ToolResult.fail(NONE_OPEN)
        except UnresolvedConflictsError as exc:
            return ToolResult.fail(
                f"Not merged, nothing changed: {exc.strerror}. Edit those files (no marker "
                "line may remain) or take a side for each, then call resolve again; "
                "conflicts shows where each stands."
            )
        except ContentChangedError as exc:
            return ToolResult.fail(f"Not merged, nothing changed: {exc.strerror}.")
        except (OSError, ValueError) as exc:
            return ToolResult.fail(f"Not merged, nothing changed: {describe_error(exc)}.")
        undo = ""
        if report.snapshot is not None:
            undo = f" Restore snapshot {snapshot_label(report.snapshot)} to undo it."
        if not report.changed:
            return ToolResult.ok(f"Merged: the workspace needed no change.{undo}", report)
        return ToolResult.ok(
            f"Merged into the workspace: {len(report.changed):,} path(s) changed: "
            f"{_listed(report.changed)}.{undo}",
            report,
        )

    def abort_merge(self, params: AbortParams, *, context: ToolContext) -> ToolResult[None]:
        try:
            self._merges.abort_merge()
        except NotFoundError:
            return ToolResult.fail(NONE_OPEN)
        return ToolResult.ok("Aborted the merge: its fork is dropped, the workspace is as it was.")


def conflict_tools(merges: Merging) -> tuple[Tool[Any, Any], ...]:
    """The tools ``conflicts``, ``resolve`` and ``abort_merge`` over ``merges``.

    Offer them with the file tools on the merge's fork, so a model edits the
    conflicting files where the merge holds them::

        merges = WorkspaceMerges.of(workspace)
        registry = filesystem_tools()
        for tool in conflict_tools(merges):
            registry.add(tool)
        context = ToolContext(filesystem=merges.open.filesystem)
    """
    handlers = _Handlers(merges)
    show = Tool(
        name="conflicts",
        description=(
            "Show the merge held open: per conflicting path its kind, the base, ours "
            "(the workspace) and theirs (what is merged in): kind, mode, size, binary or "
            "not, symlink target; for text, each conflicting hunk's lines; and whether it "
            "is resolved yet (markers left, side taken)."
        ),
        params=ConflictsParams,
        handler=handlers.conflicts,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Merge conflicts"
        ),
        output=HeldMerge,
    )
    finish = Tool(
        name="resolve",
        description=(
            "Finish the merge held open, all or nothing: take the sides `take` names, "
            "then, if no conflicting path is left (every text conflict edited so that no "
            "marker line remains, every other one edited or given a side), merge the "
            "result into the workspace. Otherwise nothing changes and the paths left are "
            "named."
        ),
        params=ResolveParams,
        handler=handlers.resolve,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=False, title="Resolve the merge"
        ),
        output=MergeReport,
    )
    drop = Tool(
        name="abort_merge",
        description=(
            "Drop the merge held open and everything edited in its fork; the workspace "
            "stays exactly as it was before the merge."
        ),
        params=AbortParams,
        handler=handlers.abort_merge,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=False, title="Abort the merge"
        ),
    )
    return show, finish, drop
