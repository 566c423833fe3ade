"""``edit_file``: exact string replacement, with the refusals models learn from.

The file is read whole, changed in memory and written back in one call, as
a compare-and-swap (``if_match``): if another writer changed the file in
between, nothing is written and the edit fails, asking for a new read. A
file whose line ends are all CRLF keeps them: the model sees lines without
``\\r`` (read_file strips them), so ``\\n`` in its strings means CRLF there.

The edit works on the file's UTF-8 bytes, never decoding the text and
encoding it back: a UTF-8 needle matches only at character boundaries, and
line ends are the same bytes in both. An ASCII file (most source) is known
to be valid UTF-8 without being decoded at all, so the edit costs one new
copy of the file, where ``str.replace`` on its text costs three.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import Field

from .._errors import ContentChangedError
from ..fs import Filesystem, ReadBytesResult, content_digest
from ._context import ToolContext, read_cap
from ._files import PATH_HELP
from ._messages import changed_meanwhile, count, failure, numbered, quote, text_lines
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams

SNIPPET_CONTEXT = 3
"""Unchanged lines shown before and after an edit."""


class EditFileParams(ToolParams):
    """Arguments of ``edit_file``."""

    path: str = Field(description=PATH_HELP)
    old_string: str = Field(
        min_length=1,
        description=(
            "The exact text to replace, whitespace and indentation included, as read_file "
            "shows it (without the line-number prefix). It must occur exactly once unless "
            "replace_all is true."
        ),
    )
    new_string: str = Field(description="The text to put in its place (must differ).")
    replace_all: bool = Field(False, description="Replace every occurrence, not just one.")


@dataclass(frozen=True, slots=True)
class Edit:
    """What ``edit_file`` changed: the path, how many occurrences, and where (new line numbers)."""

    path: str
    replacements: int
    lines: tuple[int, ...]


def _positions(content: bytes, needle: bytes, start: int) -> Iterator[int]:
    """Where ``needle`` occurs in ``content`` (without overlaps), from its first place ``start``."""
    while start != -1:
        yield start
        start = content.find(needle, start + len(needle))


def _line_numbers(content: bytes, positions: list[int]) -> list[int]:
    """1-based line of each (ascending) position, counting newlines once."""
    numbers, line, last = [], 1, 0
    for position in positions:
        line += content.count(b"\n", last, position)
        last = position
        numbers.append(line)
    return numbers


def _is_text(content: bytes) -> bool:
    """Valid UTF-8 without NUL; ASCII (``isascii`` is a word-at-a-time scan) is not decoded."""
    if b"\0" in content:
        return False
    if content.isascii():
        return True
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _utf8(text: str) -> bytes | None:
    """``text`` in UTF-8; None if it holds a lone surrogate (which no UTF-8 file does)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _squeezed(line: str) -> str:
    return " ".join(line.split())


def _loose_matches(text: str, old: str) -> list[tuple[int, int]]:
    """Line ranges where ``old`` matches if runs of whitespace are ignored."""
    want = [_squeezed(line) for line in text_lines(old)]
    while want and not want[0]:
        want.pop(0)
    while want and not want[-1]:
        want.pop()
    if not want:
        return []
    have = [_squeezed(line) for line in text_lines(text)]
    n, found = len(want), []
    for i in range(len(have) - n + 1):
        if n == 1:
            ok = want[0] in have[i]
        else:
            ok = (
                have[i].endswith(want[0])
                and have[i + 1 : i + n - 1] == want[1:-1]
                and have[i + n - 1].startswith(want[-1])
            )
        if ok:
            found.append((i + 1, i + n))
    return found


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _not_found(path: str, text: str, old: str) -> str:
    message = (
        f"Cannot edit {quote(path)}: old_string was not found "
        "(it must match exactly, whitespace and indentation included)."
    )
    loose = _loose_matches(text, old)
    if not loose:
        return message + " Read the file again with read_file and copy the exact text."
    where = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in loose[:10])
    first = max(1, loose[0][0] - SNIPPET_CONTEXT)
    call = f"read_file(path={json.dumps(path)}, offset={first}, limit={2 * SNIPPET_CONTEXT + 10})"
    return (
        f"{message} Text that differs only in whitespace is at line{'s' if len(loose) > 1 else ''}"
        f" {where}; copy it exactly from {call}."
    )


def edit_file(params: EditFileParams, *, context: ToolContext) -> ToolResult[Edit]:
    """Replace ``old_string`` with ``new_string`` in a text file."""
    fs, path = context.workspace(), params.path
    old, new = params.old_string, params.new_string
    if old == new:
        return ToolResult.fail(
            f"Cannot edit {quote(path)}: old_string and new_string are identical, "
            "so the edit would change nothing."
        )
    try:
        data = fs.read_bytes(path, limit=read_cap(fs))
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("edit", path, exc))
    refusal = _not_editable(path, data)
    if refusal is not None:
        return ToolResult.fail(refusal)
    content = data.content
    if b"\r" in content and content.count(b"\r\n") == content.count(b"\n"):
        old, new = _crlf(old), _crlf(new)
    needle = _utf8(old)
    at = -1 if needle is None else content.find(needle)
    if needle is None or at < 0:
        return ToolResult.fail(_not_found(path, content.decode("utf-8"), params.old_string))
    if params.replace_all:
        positions = list(_positions(content, needle, at))
    elif content.find(needle, at + len(needle)) >= 0:
        return ToolResult.fail(_not_unique(path, content, needle, at))
    else:
        positions = [at]
    replacement = _utf8(new)
    if replacement is None:
        return ToolResult.fail(_unencodable(path, content, old, new, len(positions)))
    updated = _replaced(content, needle, replacement, positions)
    refusal = _write_back(fs, path, content, updated)
    if refusal is not None:
        return ToolResult.fail(refusal)
    shift = len(replacement) - len(needle)
    starts = _line_numbers(updated, [p + i * shift for i, p in enumerate(positions)])
    edit = Edit(data.path, len(positions), tuple(starts))
    return ToolResult.ok(_edited(data.path, updated, edit, at, replacement), edit)


def _not_editable(path: str, data: ReadBytesResult) -> str | None:
    """Why edit_file cannot change the file read as ``data``, or None if it can."""
    if data.truncated:
        return (
            f"Cannot edit {quote(path)}: it is {count(data.size_bytes, 'byte')}, over the "
            f"read limit of {len(data.content):,} bytes."
        )
    if not _is_text(data.content):
        return (
            f"Cannot edit {quote(path)}: it is a binary file "
            f"({count(len(data.content), 'byte')}); edit_file changes text only."
        )
    return None


def _not_unique(path: str, content: bytes, needle: bytes, at: int) -> str:
    """The failure for an ``old_string`` that occurs more than once, from ``at`` on."""
    positions = list(_positions(content, needle, at))
    lines = ", ".join(map(str, _line_numbers(content, positions)))
    return (
        f"Cannot edit {quote(path)}: old_string occurs {len(positions)} times (at lines "
        f"{lines}). Include more surrounding lines to make it unique, or pass "
        f"replace_all=true to replace all {len(positions)}."
    )


def _replaced(content: bytes, needle: bytes, replacement: bytes, positions: list[int]) -> bytes:
    """``content`` with ``needle`` replaced by ``replacement`` at each of ``positions``
    (the first one, or all of them)."""
    if len(positions) == 1:
        # Joined around the place found: ``bytes.replace`` would search for it twice more.
        at, view = positions[0], memoryview(content)
        return b"".join((view[:at], replacement, view[at + len(needle) :]))
    return content.replace(needle, replacement)


def _write_back(fs: Filesystem, path: str, content: bytes, updated: bytes) -> str | None:
    """Write ``updated`` over the file if it still holds ``content``; the failure, or None."""
    try:
        fs.write_bytes(path, updated, mode="overwrite", if_match=content_digest(content))
    except ContentChangedError:
        message = changed_meanwhile("edit", path, "edit_file", "read", "written")
        return f"{message} Read it again with read_file and redo the edit."
    except (OSError, ValueError) as exc:
        return failure("edit", path, exc)
    return None


def _unencodable(path: str, content: bytes, old: str, new: str, replacements: int) -> str:
    """The failure for a ``new_string`` holding a lone surrogate, worded as encoding the
    edited text words it (the position is the character's in the edited file)."""
    try:
        content.decode("utf-8").replace(old, new, replacements).encode("utf-8")
    except UnicodeEncodeError as exc:
        return failure("edit", path, exc)
    return f"Cannot edit {quote(path)}: new_string is not valid text."  # not reached


def _edited(path: str, updated: bytes, edit: Edit, start: int, new: bytes) -> str:
    """The head line and the numbered lines around the first replacement, cut out of
    ``updated`` without splitting the whole file."""
    begin = start
    for _ in range(SNIPPET_CONTEXT + 1):
        begin = updated.rfind(b"\n", 0, begin)
        if begin == -1:
            break
    end = start + len(new)
    for _ in range(SNIPPET_CONTEXT + (0 if new.endswith(b"\n") else 1)):
        found = updated.find(b"\n", end)
        if found == -1:
            end = len(updated)
            break
        end = found + 1
    lines = text_lines(updated[begin + 1 : end].decode("utf-8"))
    first = edit.lines[0] - updated.count(b"\n", begin + 1, start)
    last = first + len(lines) - 1
    where = ", ".join(map(str, edit.lines))
    head = (
        f"Edited {quote(path)}: replaced 1 occurrence at line {where}."
        if edit.replacements == 1
        else f"Edited {quote(path)}: replaced {edit.replacements} occurrences, "
        f"now at lines {where}. Around the first:"
    )
    if last < first:  # the edit emptied the file
        return f"{head} The file is now empty."
    return f"{head} Lines {first}-{last} now read:\n{numbered(lines, first)}"


EDIT_FILE = Tool(
    name="edit_file",
    description=(
        "Replace an exact string in a text file. old_string must match the file exactly "
        "(copy it from read_file, without the line-number prefix) and occur once, unless "
        "replace_all is true. Include enough surrounding lines to make it unique. Returns "
        "the changed lines with their numbers."
    ),
    params=EditFileParams,
    handler=edit_file,
    annotations=ToolAnnotations(
        read_only=False, destructive=True, idempotent=False, title="Edit file"
    ),
)
