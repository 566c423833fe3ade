"""``read_files``: several text files in one call, within one page's budget.

Each file is read as read_file reads it (any size, any encoding, binary
refused), from its first line; together they show at most ``PAGE_CHARS``
characters. A file that fails (missing, binary) says why in its own section
without failing the others; files the budget does not reach are named, with
the read_file call for each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import Field

from ._context import ToolContext
from ._files import PATH_HELP, not_text, page_notes, text_page
from ._messages import count, failure, numbered
from ._pages import PAGE_CHARS, BinaryFile, TextPage
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

MAX_FILES = 50


class ReadFilesParams(ToolParams):
    """Arguments of ``read_files``."""

    paths: list[str] = Field(
        min_length=1, max_length=MAX_FILES, description="Files to read. " + PATH_HELP
    )
    limit: int = Field(2_000, ge=1, description="Most lines to show of each file.")


@dataclass(frozen=True, slots=True)
class FileRead:
    """One file of ``read_files``: its page, or why it was not read (``error``);
    neither if the call's budget was spent before it."""

    path: str
    page: TextPage | None = None
    error: str | None = None


def _section(path: str, page: TextPage, limit: int) -> str:
    total = page.total_lines
    size = f"{count(total, 'line')}" if total is not None else f"{page.size_bytes or 0:,} bytes"
    body = numbered(page.lines, 1, cut_long=False) if page.lines else "(empty)"
    notes = page_notes(page)
    if page.more:
        call = f"read_file(path={json.dumps(path)}, offset={page.last_line + 1}, limit={limit})"
        notes.insert(0, f"[Showing lines 1-{page.last_line:,}; more follow. To continue: {call}]")
    return "\n\n".join([f"==> {path} ({size}) <==\n{body}", *notes])


def read_files(
    params: ReadFilesParams, *, context: ToolContext
) -> ToolResult[tuple[FileRead, ...]]:
    """The first lines of each file, numbered, one section per file."""
    fs, budget = context.workspace(), PAGE_CHARS
    reads: list[FileRead] = []
    sections: list[str] = []
    left_out: list[str] = []
    for path in params.paths:
        if budget <= 0:
            left_out.append(path)
            reads.append(FileRead(path))
            continue
        page: TextPage | BinaryFile | None = None
        try:
            page = text_page(fs, path, 1, params.limit)
        except (OSError, ValueError) as exc:
            error: str | None = failure("read", path, exc)
        else:
            error = not_text("read", page) if isinstance(page, BinaryFile) else None
        if error is not None or not isinstance(page, TextPage):
            reads.append(FileRead(path, error=error))
            sections.append(f"==> {path} <==\n{error}")
            continue
        page = _within(page, budget)
        budget -= sum(map(len, page.lines))
        reads.append(FileRead(path, page))
        sections.append(_section(path, page, params.limit))
    if left_out:
        calls = ", ".join(f"read_file(path={json.dumps(path)})" for path in left_out)
        sections.append(
            f"[{count(len(left_out), 'file')} not shown: this call's {PAGE_CHARS:,} "
            f"characters are spent. Read {'it' if len(left_out) == 1 else 'them'} with {calls}]"
        )
    message = "\n\n".join(sections)
    if all(read.page is None for read in reads):
        return ToolResult.fail(message)
    return ToolResult.ok(message, tuple(reads))


def _within(page: TextPage, budget: int) -> TextPage:
    """``page`` cut to ``budget`` characters of lines (at least one line)."""
    used = 0
    for index, line in enumerate(page.lines):
        used += len(line)
        if used > budget and index:
            return TextPage(
                page.path,
                page.encoding,
                page.first_line,
                page.lines[:index],
                page.total_lines,
                page.size_bytes,
                True,
                page.replaced,
            )
    return page


READ_FILES = served(
    Tool(
        name="read_files",
        description=(
            "Read several text files in one call: one section per file, headed `==> path <==`, "
            "lines numbered like read_file's (up to `limit` per file). A file that cannot be "
            "read says why in its section without failing the others; together the sections "
            "hold at most one page of characters, and files left out are named with the "
            "read_file call for each."
        ),
        params=ReadFilesParams,
        handler=read_files,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Read files"
        ),
    )
)
