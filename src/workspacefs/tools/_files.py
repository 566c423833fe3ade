"""``read_file`` and ``write_file``."""

from __future__ import annotations

import bisect
import errno
import itertools
import json
from typing import Literal

from pydantic import Field

from ..fs import Filesystem, WriteResult
from ._context import ToolContext
from ._encoding import UTF8
from ._messages import count, cut_lines, failure, numbered, quote, text_lines
from ._pages import PAGE_CHARS, BinaryFile, TextPage, read_text
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

PATH_HELP = "Path relative to the workspace root (or absolute, under its mount point)."


class ReadFileParams(ToolParams):
    """Arguments of ``read_file``."""

    path: str = Field(description=PATH_HELP)
    offset: int = Field(1, ge=1, description="Line number to start at (1-based).")
    limit: int = Field(2_000, ge=1, description="Most lines to show.")


def not_text(tool: str, page: BinaryFile) -> str:
    """The refusal of a text tool for a binary file, naming the tool that reads it."""
    return (
        f"Cannot {tool} {quote(page.path)} as text: it is a binary file "
        f"({count(page.size_bytes, 'byte')}). Use read_bytes to read it (an image comes "
        "back as an image, other files as base64 or a hex dump)."
    )


def text_page(fs: Filesystem, path: str, first: int, limit: int) -> TextPage | BinaryFile:
    """Lines ``first`` (1-based) onwards of a file, at most ``limit`` and ``PAGE_CHARS``
    characters of them, or ``BinaryFile``.

    A UTF-8 file up to the protocol's read limit is paged by the backend
    (``Filesystem.read``: one call, and only the page travels from a daemon);
    any other, larger or not UTF-8, by ``read_text`` in bounded blocks.
    """
    try:
        page = fs.read(path, offset=first - 1, limit=limit)
    except ValueError as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.EILSEQ, errno.EFBIG):
            return read_text(fs, path, first, limit)  # not UTF-8, or over the read limit
        raise
    content = page.content
    if "\0" in content or (first == 1 and content.startswith("\ufeff")):
        return read_text(fs, path, first, limit)  # UTF-16 without a BOM, binary; a BOM
    # The read split the page already; only CRLF line ends need another pass.
    lines = cut_lines(content, text_lines(content) if "\r" in content else page.lines)
    more = page.truncated
    if len(content) > PAGE_CHARS:
        shown = list(itertools.accumulate(map(len, lines)))
        keep = bisect.bisect_left(shown, PAGE_CHARS) + 1
        more = more or keep < len(lines)
        lines = lines[:keep]
    return TextPage(page.path, UTF8.label, first, tuple(lines), page.total_lines, None, more)


def read_file(params: ReadFileParams, *, context: ToolContext) -> ToolResult[TextPage]:
    """Show a page of a text file with ``cat -n`` line numbers."""
    path = params.path
    try:
        page = text_page(context.workspace(), path, params.offset, params.limit)
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("read", path, exc))
    if isinstance(page, BinaryFile):
        return ToolResult.fail(not_text("read", page))
    if page.total_lines == 0:
        return ToolResult.ok(f"{quote(path)} is empty (0 lines).", page)
    if not page.lines:
        return ToolResult.fail(
            f"Cannot read {quote(path)} from line {params.offset:,}: "
            f"it has only {count(page.total_lines or 0, 'line')}."
        )
    notes = [note for note in (_position(path, page, params.limit), *page_notes(page)) if note]
    body = numbered(page.lines, page.first_line, cut_long=False)
    return ToolResult.ok("\n\n".join([body, *notes]), page)


def _position(path: str, page: TextPage, limit: int) -> str | None:
    """Where the page is in the file, and the call that reads on."""
    first, last, total = page.first_line, page.last_line, page.total_lines
    of = f"of {total:,}" if total is not None else f"of a {page.size_bytes or 0:,}-byte file"
    if page.more:
        call = f"read_file(path={json.dumps(path)}, offset={last + 1}, limit={limit})"
        cut = "" if len(page.lines) >= limit else f" (a page holds {PAGE_CHARS:,} characters)"
        rest = (
            count(total - last, "more line")
            if total is not None
            else "more follow (a file this large is not counted)"
        )
        return f"[Showing lines {first:,}-{last:,} {of}{cut}; {rest}. To continue: {call}]"
    if first > 1:
        return f"[Showing lines {first:,}-{last:,} {of}; end of file.]"
    return None


def page_notes(page: TextPage) -> list[str]:
    """What a page's reader should know about its encoding."""
    notes = []
    if page.encoding != UTF8.label:
        notes.append(
            f"[The file is {page.encoding} text, shown decoded; edit_file keeps its encoding.]"
        )
    if page.replaced:
        notes.append(
            f"[{count(page.replaced, 'byte sequence')} on this page that do not decode as "
            f"{page.encoding} {'is' if page.replaced == 1 else 'are'} shown as \ufffd; "
            "read_bytes shows the bytes.]"
        )
    return notes


class WriteFileParams(ToolParams):
    """Arguments of ``write_file``."""

    path: str = Field(description=PATH_HELP + " Missing parent directories are created.")
    content: str = Field(description="The text to write (UTF-8).")
    mode: Literal["create", "overwrite", "append"] = Field(
        "overwrite",
        description=(
            "create: only make a new file, never replace one; overwrite: replace the "
            "file's content (or make it); append: add to the end (or make it)."
        ),
    )


def _lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def write_file(params: WriteFileParams, *, context: ToolContext) -> ToolResult[WriteResult]:
    """Create, overwrite or append to a text file."""
    fs, path, mode = context.workspace(), params.path, params.mode
    try:
        result = fs.write(path, params.content, mode=mode)
    except FileExistsError:
        return ToolResult.fail(
            f"Cannot create {quote(path)}: it already exists, and mode=create never replaces "
            "a file. Use mode=overwrite to replace it, or edit_file to change part of it."
        )
    except (OSError, ValueError) as exc:
        hint = ""
        if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            hint = " Write it in parts: the first with mode=overwrite, the rest with mode=append."
        return ToolResult.fail(failure("write", path, exc) + hint)
    size = f"{count(_lines(params.content), 'line')}, {count(result.bytes_written, 'byte')}"
    if mode == "append":
        message = f"Appended {size} to {quote(result.path)}."
    elif mode == "create":
        message = f"Created {quote(result.path)} ({size})."
    else:
        message = f"Wrote {quote(result.path)} ({size})."
    return ToolResult.ok(message, result)


READ_FILE = served(
    Tool(
        name="read_file",
        description=(
            "Read a text file. Lines are numbered like `cat -n` (number, tab, line); the numbers "
            "are not part of the file. Shows up to `limit` lines (default 2,000) from line "
            "`offset`; when the file is longer, the message ends with the exact call that reads "
            "the next page. Files of any size are paged; text that is not UTF-8 (Latin-1, "
            "UTF-16, ...) is shown decoded, naming its encoding. Binary files are refused: "
            "read them with read_bytes."
        ),
        params=ReadFileParams,
        handler=read_file,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Read file"
        ),
    )
)

WRITE_FILE = served(
    Tool(
        name="write_file",
        description=(
            "Write a text file: mode=create makes a new file and refuses to replace one, "
            "mode=overwrite (the default) replaces the whole content, mode=append adds to the end. "
            "Parent directories are created. To change part of a file, use edit_file instead."
        ),
        params=WriteFileParams,
        handler=write_file,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=False, title="Write file"
        ),
    )
)
