"""What a conflicting merge tells whoever resolves it, and what a merge held open is.

A conflict's ``detail`` (``ConflictDetail``) gives, per path, the three sides
as much as deciding needs: each side's kind, mode, size and whether it is
binary (or a symlink's target), and for text both sides changed, the hunks:
each conflicting region's lines on the base, ours and theirs. Bounded: a
hunk's side is cut at ``MAX_HUNK_BYTES`` and a path lists at most
``MAX_HUNKS``; the files themselves hold the rest.

A merge held open (``workspacefs.git.WorkspaceMerges``) is described by
``HeldMerge``: the fork holding it, and per conflict whether it is resolved
yet, the side taken if one was, and the lines that still hold markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Side = Literal["base", "ours", "theirs"]
"""A side of a merge to take for a path: the common ancestor's state, the
workspace's (merged into), or what is merged in."""

SIDES: tuple[Side, ...] = ("base", "ours", "theirs")

SideKind = Literal["file", "symlink", "directory", "other", "absent"]
"""What a side holds at a path (``other``: a device node, FIFO or socket)."""

MAX_HUNKS = 50
"""Hunks a conflict's detail lists; ``ConflictDetail.more_hunks`` counts the rest."""

MAX_HUNK_BYTES = 8192
"""Bytes of one side of a hunk a detail holds; ``ConflictHunk.cut`` says if more were."""


@dataclass(frozen=True, slots=True)
class ConflictSide:
    """One side's state of a conflicting path, without its contents.

    Attributes:
        kind: What is there (``absent``: nothing, it was deleted or never added).
        mode: Its full mode (0 when absent).
        size: A file's bytes, or a symlink target's length.
        binary: A file git would not merge line-wise (a NUL byte in its first
            8000 bytes).
        target: A symlink's target.
    """

    kind: SideKind
    mode: int = 0
    size: int = 0
    binary: bool = False
    target: str | None = None


@dataclass(frozen=True, slots=True)
class ConflictHunk:
    """One region of a text both sides changed differently.

    Attributes:
        line: The line of its ``<<<<<<< ours`` marker (from 1) in the text merged
            with diff3-style markers: the file an open merge holds.
        base: Its lines on the common ancestor ('' for two additions).
        ours: Its lines in the workspace merged into.
        theirs: Its lines in what is merged in.
        cut: A side was longer than ``MAX_HUNK_BYTES``: read the file for the rest.
    """

    line: int
    base: str
    ours: str
    theirs: str
    cut: bool = False


@dataclass(frozen=True, slots=True)
class ConflictDetail:
    """The three sides of a conflicting path, and the hunks of a text conflict.

    Attributes:
        base: The common ancestor's state of the path.
        ours: The workspace's.
        theirs: What is merged in's.
        hunks: The regions that conflict, for text (``content``, text ``add/add``).
        more_hunks: Hunks past ``MAX_HUNKS``, not listed.
    """

    base: ConflictSide
    ours: ConflictSide
    theirs: ConflictSide
    hunks: tuple[ConflictHunk, ...] = ()
    more_hunks: int = 0


@dataclass(frozen=True, slots=True)
class HeldState:
    """Where one conflict of a merge held open stands.

    Attributes:
        path: The conflicting path.
        resolved: A side was taken, or the path was changed in the merge's fork
            and holds no conflict marker.
        taken: The side taken for it, if one was.
        marker_lines: Lines of the fork's file that still hold conflict markers.
    """

    path: str
    resolved: bool
    taken: Side | None = None
    marker_lines: tuple[int, ...] = ()
