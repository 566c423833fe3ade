"""``multi_edit``: several exact replacements in one file, all of them or none.

Each edit is checked as edit_file checks one (found, unique unless
``replace_all``, not a no-op, encodable), against the text the edits before
it left, so a later edit may rely on an earlier one. The first refusal names
the edit and nothing is written; otherwise the file is written once, as a
compare-and-swap against what was read (a concurrent change fails the call),
in the file's own encoding. The message shows the changed lines with their
new numbers: each edit's changed bytes are kept as a span, moved along by the
edits after it (``_Spans``), so no diff of the whole file is made (difflib's
is quadratic in the worst case, and took most of a call on a 250-line file).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from pydantic import Field

from ._context import ToolContext
from ._edit import SNIPPET_CONTEXT, read_editable, replace_in, write_back
from ._files import PATH_HELP
from ._messages import count, numbered, quote, text_lines
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

MAX_EDITS = 100
SHOWN_LINES = 80
"""Most lines of the result the message shows."""


class EditSpec(ToolParams):
    """One replacement: old_string becomes new_string."""

    old_string: str = Field(
        min_length=1,
        description=(
            "The exact text to replace (as the file reads after the edits before this "
            "one), whitespace and indentation included, without read_file's line numbers."
        ),
    )
    new_string: str = Field(description="The text to put in its place (must differ).")
    replace_all: bool = Field(False, description="Replace every occurrence, not just one.")


class MultiEditParams(ToolParams):
    """Arguments of ``multi_edit``."""

    path: str = Field(description=PATH_HELP)
    edits: list[EditSpec] = Field(
        min_length=1,
        max_length=MAX_EDITS,
        description=(
            "Replacements applied in order, each to the text the ones before it left; "
            "if any one fails, none is made."
        ),
    )


@dataclass(frozen=True, slots=True)
class MultiEdit:
    """What ``multi_edit`` changed: the path, the edits and the replacements made."""

    path: str
    edits: int
    replacements: int
    lines: tuple[tuple[int, int], ...]
    """The changed line ranges (first, last) of the new file; (n, n - 1) where lines went."""


def _prefixed(message: str, path: str, index: int, total: int) -> str:
    """edit_file's refusal, naming the edit, saying nothing was written."""
    head = f"Cannot edit {quote(path)}: "
    where = f"Cannot edit {quote(path)} (edit {index} of {total}): "
    body = message[len(head) :] if message.startswith(head) else message
    return f"{where}{body} None of the {total} edits was made."


def _common(a: bytes, b: bytes) -> int:
    """The length of the longest common start of ``a`` and ``b``."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


class _Spans:
    """The byte ranges of the text that the edits so far changed, in the current text."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []

    def replaced(self, positions: list[int], needle: bytes, replacement: bytes) -> None:
        """``needle`` (at ``positions`` of the text before) became ``replacement``."""
        old, new = len(needle), len(replacement)
        delta, ends = new - old, [p + old for p in positions]

        def moved(x: int, end: bool) -> int:
            j = bisect.bisect_right(positions, x) - 1
            if j >= 0 and positions[j] < x < ends[j]:  # inside a replaced stretch: all of it
                return positions[j] + j * delta + (new if end else 0)
            return x + bisect.bisect_right(ends, x) * delta

        self.spans = [(moved(s, False), moved(e, True)) for s, e in self.spans]
        # Only what differs: a replacement that repeats the needle's start or end
        # (context copied to make it unique) changed the middle.
        same = _common(needle, replacement)
        tail = _common(needle[same:][::-1], replacement[same:][::-1])
        for k, p in enumerate(positions):
            start = p + k * delta
            self.spans.append((start + same, start + new - tail))

    def lines(self, text: bytes) -> list[tuple[int, int]]:
        """The spans as line ranges (first, last) of ``text``, merged; (n, n - 1) where
        lines were removed before line n."""
        ranges: list[tuple[int, int]] = []
        line, at = 1, 0
        for start, end in sorted(self.spans):
            line += text.count(b"\n", at, start)
            at = start
            last = line + text.count(b"\n", start, end - 1) if end > start else line - 1
            if ranges and line <= ranges[-1][1] + 1 and last >= ranges[-1][0] - 1:
                first = min(ranges[-1][0], line)
                ranges[-1] = (first, max(ranges[-1][1], last))
            else:
                ranges.append((line, last))
        return ranges


def _snippets(lines: list[str], ranges: list[tuple[int, int]]) -> str:
    """The changed ranges with ``SNIPPET_CONTEXT`` lines around, merged, numbered."""
    windows: list[list[int]] = []
    for first, last in ranges:
        start = max(1, first - SNIPPET_CONTEXT)
        end = min(len(lines), max(last, first - 1) + SNIPPET_CONTEXT)
        if windows and start <= windows[-1][1] + 1:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([start, end])
    shown, budget = [], SHOWN_LINES
    for start, end in windows:
        if budget <= 0:
            shown.append("...")
            break
        end = min(end, start + budget - 1)
        if end >= start:
            shown.append(numbered(lines[start - 1 : end], start))
            budget -= end - start + 1
    return "\n  ...\n".join(shown) if shown else "The file is now empty."


def multi_edit(params: MultiEditParams, *, context: ToolContext) -> ToolResult[MultiEdit]:
    """Apply ``edits`` to one text file, all or none."""
    fs, path, total = context.workspace(), params.path, len(params.edits)
    source = read_editable(fs, path, "multi_edit")
    if isinstance(source, str):
        return ToolResult.fail(source)
    content, replacements, spans = source.content, 0, _Spans()
    for index, spec in enumerate(params.edits, start=1):
        done = replace_in(path, content, spec.old_string, spec.new_string, spec.replace_all)
        if isinstance(done, str):
            return ToolResult.fail(_prefixed(done, path, index, total))
        content, replacements = done.updated, replacements + len(done.positions)
        spans.replaced(done.positions, done.needle, done.replacement)
    if content == source.content:
        return ToolResult.fail(
            f"Cannot edit {quote(path)}: the {count(total, 'edit')} together change nothing "
            "(a later one undoes an earlier one), so nothing was written."
        )
    refusal = write_back(fs, source, content, "multi_edit")
    if refusal is not None:
        return ToolResult.fail(refusal)
    lines, ranges = text_lines(content.decode("utf-8")), spans.lines(content)
    result = MultiEdit(source.resolved, total, replacements, tuple(ranges))
    where = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in ranges[:20] if b >= a)
    head = (
        f"Edited {quote(source.resolved)}: {count(total, 'edit')}, "
        f"{count(replacements, 'replacement')}"
        + (f"; changed lines {where} now read:" if where else "; lines were removed. Around them:")
    )
    return ToolResult.ok(f"{head}\n{_snippets(lines, ranges)}", result)


MULTI_EDIT = served(
    Tool(
        name="multi_edit",
        description=(
            "Make several exact replacements in one text file at once, all or none: each "
            "edit is checked like edit_file's (old_string found exactly, unique unless "
            "replace_all) against the text the edits before it left; if any fails, the file "
            "is left unchanged and the message names the edit. Returns the changed lines."
        ),
        params=MultiEditParams,
        handler=multi_edit,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=False, title="Edit file (several)"
        ),
    )
)
