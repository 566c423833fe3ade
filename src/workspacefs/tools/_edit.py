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

A file in another text encoding (Latin-1, cp1252, UTF-16/32 with or without
a BOM, as read_file names it) is edited in that encoding: its text goes
through the same steps as UTF-8, and the result is encoded back with the
same BOM. A replacement the encoding cannot hold is refused, as is a file
with bytes that do not decode (they could not be written back as they were).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import Field

from .._errors import ContentChangedError
from ..fs import Filesystem, ReadBytesResult, content_digest
from ._context import ToolContext, read_cap
from ._encoding import MARK, TextEncoding, detect_encoding
from ._files import PATH_HELP
from ._messages import changed_meanwhile, count, failure, numbered, quote, text_lines
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

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


@dataclass(frozen=True, slots=True)
class Editable:
    """A text file as the edit tools change it.

    Attributes:
        path: The file, as the caller named it (messages and the write back use it).
        resolved: The file's path in the workspace, as the read named it.
        data: Its bytes as read (what the write back must still find there).
        content: Its text in UTF-8 (``data`` itself for a UTF-8 file).
        encoding: The file's encoding when it is not UTF-8 (None if it is).
    """

    path: str
    resolved: str
    data: bytes
    content: bytes
    encoding: TextEncoding | None = None


@dataclass(frozen=True, slots=True)
class Replaced:
    """One replacement done in a file's UTF-8 text."""

    updated: bytes
    positions: list[int]
    needle: bytes
    replacement: bytes


def read_editable(fs: Filesystem, path: str, tool: str) -> Editable | str:
    """The file at ``path`` to edit, or why ``tool`` cannot."""
    try:
        data = fs.read_bytes(path, limit=read_cap(fs))
    except (OSError, ValueError) as exc:
        return failure("edit", path, exc)
    refusal = _not_editable(path, data, tool)
    if refusal is not None:
        return refusal
    if _is_text(data.content):
        return Editable(path, data.path, data.content, data.content)
    encoding = detect_encoding(data.content, whole=True)
    if encoding is None:
        return (
            f"Cannot edit {quote(path)}: it is a binary file "
            f"({count(len(data.content), 'byte')}); {tool} changes text only. "
            "Read it with read_bytes."
        )
    text = encoding.decode(data.content[len(encoding.bom) :])
    bad = text.count(MARK)
    if bad:
        return (
            f"Cannot edit {quote(path)}: {count(bad, 'byte sequence')} in it "
            f"{'does' if bad == 1 else 'do'} not decode as {encoding.label}, and {tool} "
            "would not write them back as they are. Replace the whole file with write_file, "
            "or look at the bytes with read_bytes."
        )
    return Editable(path, data.path, data.content, text.encode("utf-8"), encoding)


def replace_in(path: str, content: bytes, old: str, new: str, replace_all: bool) -> Replaced | str:
    """``old`` replaced by ``new`` in the UTF-8 text ``content``, with edit_file's
    checks (found, unique unless ``replace_all``, encodable); or the refusal."""
    if old == new:
        return (
            f"Cannot edit {quote(path)}: old_string and new_string are identical, "
            "so the edit would change nothing."
        )
    if b"\r" in content and content.count(b"\r\n") == content.count(b"\n"):
        old, new = _crlf(old), _crlf(new)
    needle = _utf8(old)
    at = -1 if needle is None else content.find(needle)
    if needle is None or at < 0:
        return _not_found(path, content.decode("utf-8"), old)
    if replace_all:
        positions = list(_positions(content, needle, at))
    elif content.find(needle, at + len(needle)) >= 0:
        return _not_unique(path, content, needle, at)
    else:
        positions = [at]
    replacement = _utf8(new)
    if replacement is None:
        return _unencodable(path, content, old, new, len(positions))
    updated = _replaced(content, needle, replacement, positions)
    return Replaced(updated, positions, needle, replacement)


def edit_file(params: EditFileParams, *, context: ToolContext) -> ToolResult[Edit]:
    """Replace ``old_string`` with ``new_string`` in a text file."""
    fs, path = context.workspace(), params.path
    if params.old_string == params.new_string:  # refused before the file is read
        return ToolResult.fail(
            f"Cannot edit {quote(path)}: old_string and new_string are identical, "
            "so the edit would change nothing."
        )
    source = read_editable(fs, path, "edit_file")
    if isinstance(source, str):
        return ToolResult.fail(source)
    done = replace_in(
        path, source.content, params.old_string, params.new_string, params.replace_all
    )
    if isinstance(done, str):
        return ToolResult.fail(done)
    refusal = write_back(fs, source, done.updated, "edit_file")
    if refusal is not None:
        return ToolResult.fail(refusal)
    positions, updated = done.positions, done.updated
    shift = len(done.replacement) - len(done.needle)
    starts = _line_numbers(updated, [p + i * shift for i, p in enumerate(positions)])
    edit = Edit(source.resolved, len(positions), tuple(starts))
    message = _edited(source.resolved, updated, edit, positions[0], done.replacement)
    return ToolResult.ok(message, edit)


def _not_editable(path: str, data: ReadBytesResult, tool: str) -> str | None:
    """Why ``tool`` cannot change the file read as ``data`` (too large), or None."""
    if data.truncated:
        return (
            f"Cannot edit {quote(path)}: it is {count(data.size_bytes, 'byte')}, over the "
            f"read limit of {len(data.content):,} bytes."
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


def write_back(fs: Filesystem, source: Editable, updated: bytes, tool: str) -> str | None:
    """Write the UTF-8 text ``updated`` over the file, in its encoding, if the file still
    holds what ``source`` read; the failure, or None."""
    data = updated
    if source.encoding is not None:
        try:
            data = source.encoding.encode(updated.decode("utf-8"))
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            return (
                f"Cannot edit {quote(source.path)}: it is {source.encoding.label} text, "
                f"which cannot hold {bad!r} (U+{ord(bad[0]):04X}); nothing was written. "
                "Leave the character out, or rewrite the file as UTF-8 with write_file."
            )
    try:
        fs.write_bytes(source.path, data, mode="overwrite", if_match=content_digest(source.data))
    except ContentChangedError:
        message = changed_meanwhile("edit", source.path, tool, "read", "written")
        return f"{message} Read it again with read_file and redo the edit."
    except (OSError, ValueError) as exc:
        return failure("edit", source.path, exc)
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


EDIT_FILE = served(
    Tool(
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
)
