"""What a conflict is made of, for whoever resolves it: ``ConflictDetail``.

Per path, each side's kind, mode and size (contents stay out: a binary side
is described, a text side's conflicting regions are listed as hunks). The
hunks come from the text merged in diff3 style, the same text an open merge
writes to its fork, so a hunk's line is where its markers are in that file.
"""

from __future__ import annotations

from ..fs import (
    MAX_HUNK_BYTES,
    MAX_HUNKS,
    ConflictDetail,
    ConflictHunk,
    ConflictKind,
    ConflictSide,
    MergeSide,
    is_binary,
)
from ._mergefile import conflict_hunks, merge_text

TEXT_KINDS: tuple[ConflictKind, ...] = ("content", "add/add")
"""Conflicts whose sides may be text to merge with markers."""


def is_text(side: MergeSide | None) -> bool:
    """True if ``side`` is a file git merges line-wise (no NUL in its first 8000 bytes)."""
    return side is not None and side.kind == "file" and not is_binary(side.data)


def diff3_text(
    kind: ConflictKind, base: MergeSide | None, ours: MergeSide | None, theirs: MergeSide | None
) -> bytes | None:
    """The text of a text conflict merged with diff3-style markers; None for any
    other conflict (binary, a symlink, a kind or a mode, a deletion)."""
    if kind not in TEXT_KINDS or ours is None or theirs is None:
        return None
    if not (is_text(ours) and is_text(theirs)):
        return None
    ancestor = base.data if is_text(base) and base is not None else None
    return merge_text(ancestor, ours.data, theirs.data, diff3=True)[0]


def describe_side(side: MergeSide | None, *, directory: int | None = None) -> ConflictSide:
    """``side`` without its contents (``directory``: the mode of a directory there)."""
    if side is None:
        return ConflictSide("absent") if directory is None else ConflictSide("directory", directory)
    if side.kind == "symlink":
        target = side.data.decode("utf-8", "surrogateescape")
        return ConflictSide("symlink", side.mode, len(side.data), target=target)
    if side.kind == "file":
        return ConflictSide("file", side.mode, len(side.data), binary=is_binary(side.data))
    return ConflictSide("other", side.mode)


def _text(data: bytes) -> tuple[str, bool]:
    """A hunk's side as text, cut at ``MAX_HUNK_BYTES``; and whether it was cut."""
    cut = len(data) > MAX_HUNK_BYTES
    return data[:MAX_HUNK_BYTES].decode("utf-8", "replace"), cut


def describe_conflict(
    kind: ConflictKind,
    base: MergeSide | None,
    ours: MergeSide | None,
    theirs: MergeSide | None,
    *,
    ours_directory: int | None = None,
) -> ConflictDetail:
    """The detail of a conflict of ``kind`` between these three sides (``ours_directory``:
    the mode of a directory ours has at the path)."""
    hunks: list[ConflictHunk] = []
    found = []
    text = diff3_text(kind, base, ours, theirs)
    if text is not None:
        found = conflict_hunks(text)
        for hunk in found[:MAX_HUNKS]:
            (b, cut_b), (o, cut_o), (t, cut_t) = map(_text, (hunk.base, hunk.ours, hunk.theirs))
            hunks.append(ConflictHunk(hunk.line, b, o, t, cut=cut_b or cut_o or cut_t))
    return ConflictDetail(
        describe_side(base),
        describe_side(ours, directory=ours_directory),
        describe_side(theirs),
        tuple(hunks),
        max(0, len(found) - MAX_HUNKS),
    )
