"""Conflicts as text, for a model or a person: one wording for the tools and the CLI."""

from __future__ import annotations

from ._conflicts import ConflictHunk, ConflictSide, HeldState
from ._outcomes import ConflictReport, HeldMerge

MAX_HUNK_LINES = 40
"""Lines of one side of a hunk shown before the rest are counted."""

MAX_CONFLICTS = 50
"""Conflicts a held merge's text shows (unresolved ones first) before counting the rest."""


def side_text(side: ConflictSide) -> str:
    """``file 100644, 12 bytes``, ``binary file ...``, ``symlink -> target``, ``absent``."""
    if side.kind == "absent":
        return "absent (deleted, or never there)"
    if side.kind == "symlink":
        return f"symlink -> {side.target}"
    if side.kind == "file":
        binary = "binary " if side.binary else ""
        return f"{binary}file {side.mode:o}, {side.size:,} bytes"
    return f"{side.kind} {side.mode:o}"


def _block(label: str, text: str, cut: bool) -> list[str]:
    lines = text.splitlines()
    if not lines:
        return [f"    {label}: (no lines)"]
    shown = [f"      {line}" for line in lines[:MAX_HUNK_LINES]]
    more = len(lines) - MAX_HUNK_LINES
    if more > 0 or cut:
        shown.append("      ... (more in the file)")
    return [f"    {label}:", *shown]


def _hunk(number: int, hunk: ConflictHunk) -> list[str]:
    lines = [f"  hunk {number} at line {hunk.line}:"]
    for label, text in (("base", hunk.base), ("ours", hunk.ours), ("theirs", hunk.theirs)):
        lines += _block(label, text, hunk.cut)
    return lines


def _state(state: HeldState) -> str:
    if state.resolved:
        how = f"took {state.taken}" if state.taken else "changed, no markers left"
        return f"  resolved ({how})"
    if state.marker_lines:
        lines = ", ".join(map(str, state.marker_lines[:20]))
        return f"  unresolved: conflict markers on lines {lines}"
    return "  unresolved: edit it, or take a side (base, ours or theirs)"


def conflict_lines(
    conflict: ConflictReport, state: HeldState | None = None, *, hunks: bool = True
) -> list[str]:
    """A conflict as lines: its path and kind, the three sides, its hunks (unless
    ``hunks`` is False) and, for a merge held open, where it stands."""
    lines = [f"{conflict.path}: {conflict.kind} conflict"]
    detail = conflict.detail
    if detail is not None:
        sides = (("base", detail.base), ("ours", detail.ours), ("theirs", detail.theirs))
        lines += [f"  {label}: {side_text(side)}" for label, side in sides]
        if hunks:
            for number, hunk in enumerate(detail.hunks, 1):
                lines += _hunk(number, hunk)
            if detail.more_hunks:
                lines.append(f"  ... and {detail.more_hunks} more hunk(s), in the file")
    if state is not None:
        lines.append(_state(state))
    return lines


def held_lines(held: HeldMerge, *, hunks: bool = True) -> list[str]:
    """A merge held open as lines: where its fork is, then each conflict (the
    unresolved first, at most ``MAX_CONFLICTS``)."""
    where = f" at {held.path}" if held.path else ""
    unresolved = len(held.unresolved)
    lines = [
        f"A merge of {held.source} is held open in fork {held.fork}{where}: "
        f"{len(held.changed):,} path(s) merge cleanly, {len(held.conflicts)} conflict(s), "
        f"{unresolved} unresolved."
    ]
    pairs = sorted(zip(held.conflicts, held.states, strict=True), key=lambda p: p[1].resolved)
    for conflict, state in pairs[:MAX_CONFLICTS]:
        lines += conflict_lines(conflict, state, hunks=hunks)
    if len(pairs) > MAX_CONFLICTS:
        lines.append(f"... and {len(pairs) - MAX_CONFLICTS:,} more conflict(s)")
    return lines
