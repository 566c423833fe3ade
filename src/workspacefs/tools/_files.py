"""``read_file`` and ``write_file``."""

from __future__ import annotations

import errno
import json
from typing import Literal

from pydantic import Field

from ..fs import ReadResult, WriteResult
from ._context import ToolContext
from ._messages import count, failure, numbered, quote, text_lines
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams

PATH_HELP = "Path relative to the workspace root (or absolute, under its mount point)."


class ReadFileParams(ToolParams):
    """Arguments of ``read_file``."""

    path: str = Field(description=PATH_HELP)
    offset: int = Field(1, ge=1, description="Line number to start at (1-based).")
    limit: int = Field(2_000, ge=1, description="Most lines to show.")


def _binary(context: ToolContext, path: str) -> ToolResult[ReadResult]:
    size = context.workspace().stat(path).size_bytes
    return ToolResult.fail(
        f"Cannot read {quote(path)} as text: it is a binary file ({count(size, 'byte')}). "
        "read_file shows text only; use the filesystem's read_bytes for raw bytes."
    )


def read_file(params: ReadFileParams, *, context: ToolContext) -> ToolResult[ReadResult]:
    """Show a page of a text file with ``cat -n`` line numbers."""
    path = params.path
    try:
        page = context.workspace().read(path, offset=params.offset - 1, limit=params.limit)
    except ValueError as exc:
        if isinstance(exc, OSError) and exc.errno == errno.EILSEQ:
            return _binary(context, path)
        return ToolResult.fail(failure("read", path, exc))
    except OSError as exc:
        return ToolResult.fail(failure("read", path, exc))
    if "\0" in page.content:
        return _binary(context, path)
    total = page.total_lines
    if total == 0:
        return ToolResult.ok(f"{quote(path)} is empty (0 lines).", page)
    if params.offset > total:
        return ToolResult.fail(
            f"Cannot read {quote(path)} from line {params.offset:,}: "
            f"it has only {count(total, 'line')}."
        )
    # The read split the page already; only CRLF line ends need another pass.
    lines = text_lines(page.content) if "\r" in page.content else page.lines
    first, last = params.offset, params.offset + len(lines) - 1
    body = numbered(lines, first)
    if page.truncated:
        more = total - last
        call = f"read_file(path={json.dumps(path)}, offset={last + 1}, limit={params.limit})"
        body += (
            f"\n\n[Showing lines {first:,}-{last:,} of {total:,}; {count(more, 'more line')}. "
            f"To continue: {call}]"
        )
    elif first > 1:
        body += f"\n\n[Showing lines {first:,}-{last:,} of {total:,}; end of file.]"
    return ToolResult.ok(body, page)


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


READ_FILE = Tool(
    name="read_file",
    description=(
        "Read a text file. Lines are numbered like `cat -n` (number, tab, line); the numbers "
        "are not part of the file. Shows up to `limit` lines (default 2,000) from line "
        "`offset`; when the file is longer, the message ends with the exact call that reads "
        "the next page. Binary files are refused."
    ),
    params=ReadFileParams,
    handler=read_file,
    annotations=ToolAnnotations(
        read_only=True, destructive=False, idempotent=True, title="Read file"
    ),
)

WRITE_FILE = Tool(
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
