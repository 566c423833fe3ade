"""Text for people: which bytes are shown as text, and line diffs between two versions.

Syntax-neutral on purpose: a line is added, removed or kept, whatever the
language, so one view serves source, logs and data alike.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..fs import is_binary


def decode_text(data: bytes) -> str | None:
    """``data`` as text, or None if it is binary (a NUL byte, or not UTF-8)."""
    if is_binary(data):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their newlines; a final newline ends the last
    line rather than starting an empty one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a hunk: ``op`` is " " (both), "-" (old only) or "+" (new only)."""

    op: str
    old: int | None
    new: int | None
    text: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"op": self.op, "old": self.old, "new": self.new, "text": self.text}


@dataclass(frozen=True, slots=True)
class Hunk:
    """A run of changes with its context; line numbers count from 1."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[DiffLine, ...]

    @property
    def header(self) -> str:
        """The ``@@ -a,b +c,d @@`` line, as ``diff -u`` writes it (",1" left out)."""
        old = _range(self.old_start, self.old_count)
        new = _range(self.new_start, self.new_count)
        return f"@@ -{old} +{new} @@"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "header": self.header,
            "old_start": self.old_start,
            "old_count": self.old_count,
            "new_start": self.new_start,
            "new_count": self.new_count,
            "lines": [line.to_json() for line in self.lines],
        }


def _range(start: int, count: int) -> str:
    return str(start) if count == 1 else f"{start},{count}"


def _matcher(old: Sequence[str], new: Sequence[str]) -> difflib.SequenceMatcher[str]:
    # autojunk would treat frequent lines (blank ones, braces) as noise and give
    # odd hunks in long files.
    return difflib.SequenceMatcher(None, old, new, autojunk=False)


def hunks(old: Sequence[str], new: Sequence[str], context: int = 3) -> list[Hunk]:
    """The changes from ``old`` to ``new`` lines, grouped with ``context`` lines around."""
    found = []
    for group in _matcher(old, new).get_grouped_opcodes(context):
        lines: list[DiffLine] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [DiffLine(" ", i + 1, j1 + i - i1 + 1, old[i]) for i in range(i1, i2)]
                continue
            lines += [DiffLine("-", i + 1, None, old[i]) for i in range(i1, i2)]
            lines += [DiffLine("+", None, j + 1, new[j]) for j in range(j1, j2)]
        first, last = group[0], group[-1]
        old_count, new_count = last[2] - first[1], last[4] - first[3]
        # As diff -u: an empty side starts at the line before it.
        old_start = first[1] + 1 if old_count else first[1]
        new_start = first[3] + 1 if new_count else first[3]
        found.append(Hunk(old_start, old_count, new_start, new_count, tuple(lines)))
    return found


def changed_lines(old: Sequence[str], new: Sequence[str]) -> list[int]:
    """The numbers (from 1) of the lines of ``new`` that ``old`` does not have there."""
    changed: list[int] = []
    for tag, _, _, j1, j2 in _matcher(old, new).get_opcodes():
        if tag in ("insert", "replace"):
            changed.extend(range(j1 + 1, j2 + 1))
    return changed
