"""Checks and shapes shared by every backend's protocol calls.

Each backend resolves paths and moves bytes its own way; what a call may
ask for, and how text is decoded and paged, is decided once, here.
"""

from __future__ import annotations

from .._errors import InvalidArgumentError, InvalidContentError, LimitExceededError
from ._budget import available_memory
from ._limits import Limits
from ._paths import display, strip_mount_point
from ._results import ReadResult, WriteMode

WRITE_MODES: tuple[WriteMode, ...] = ("create", "overwrite", "append")


def text_payload(content: object, path: str, limits: Limits) -> bytes:
    """The UTF-8 bytes of a ``write``; refuses non-str, oversize and unencodable text."""
    if not isinstance(content, str):
        raise InvalidArgumentError("content must be str; use write_bytes", path)
    limits.check("content length", len(content), limits.max_write_chars)
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidContentError(f"content is not valid UTF-8: {exc.reason}", path) from None


def bytes_payload(content: object, path: str, limits: Limits) -> bytes:
    """The bytes of a ``write_bytes``; refuses non-bytes and oversize content."""
    if not isinstance(content, bytes | bytearray | memoryview):
        raise InvalidArgumentError("content must be bytes", path)
    limits.check("content size", len(content), limits.max_write_bytes)
    return bytes(content)


def check_write_mode(mode: str, path: str) -> None:
    """Refuse a write mode the protocol does not define."""
    if mode not in WRITE_MODES:
        raise InvalidArgumentError(f"mode must be one of {WRITE_MODES}", path)


def line_window(offset: int, limit: int | None, norm: str, limits: Limits) -> int:
    """The effective line limit of a ``read``; refuses negative offsets and empty pages."""
    limit = limits.default_read_lines if limit is None else limit
    if offset < 0 or limit < 1:
        raise InvalidArgumentError("offset must be >= 0 and limit >= 1", display(norm))
    return limit


def byte_window(offset: int, limit: int | None, norm: str, limits: Limits) -> int | None:
    """The byte limit a ``read_bytes`` asked for, checked (None: the rest of the file,
    see ``whole_rest``)."""
    if offset < 0 or (limit is not None and limit < 0):
        raise InvalidArgumentError("offset and limit must be >= 0", display(norm))
    if limit is not None:
        limits.check("read_bytes limit", limit, limits.max_read_bytes)
    return limit


def whole_rest(size: int, offset: int, norm: str, limits: Limits) -> int:
    """The byte limit of a ``read_bytes`` with ``limit=None``: the rest of the file.

    Up to ``max_read_bytes`` it is simply read; past it, only if this process can
    allocate the copy (``available_memory``), so a read never costs the process its
    life. A file larger than that is read in pieces, with ``offset`` and ``limit``.
    """
    rest = max(size - offset, 0)
    if rest > limits.max_read_bytes:
        free = available_memory()
        if rest > free:
            raise LimitExceededError(
                f"the rest of the file is {rest:,} bytes, more than this process can "
                f"allocate ({free:,} bytes): read it in pieces with offset and limit",
                display(norm),
            )
    return rest


def read_page(
    data: bytes, size: int, norm: str, offset: int, limit: int, encoding: str, limits: Limits
) -> ReadResult:
    """Decode a whole file and cut one page of lines from it."""
    limits.check(f"size of {display(norm)} (use read_bytes)", size, limits.max_read_bytes)
    try:
        text = data.decode(encoding)
    except LookupError:
        raise InvalidArgumentError(f"unknown encoding {encoding!r}", display(norm)) from None
    except UnicodeDecodeError as exc:
        raise InvalidContentError(
            f"not valid {encoding} at byte {exc.start}; use read_bytes", display(norm)
        ) from None
    # One split serves the count, the page and ``ReadResult.lines``; a page that is
    # the whole file is the decoded text itself, so only a part is joined again.
    lines = text.split("\n")
    ended = not lines[-1]  # the text ends with a line end (or is empty)
    if ended:
        lines.pop()
    total = len(lines)
    if offset == 0 and limit >= total:
        content, page = text, lines
    else:
        page = lines[offset : offset + limit]
        if page and (offset + len(page) < total or ended):
            page.append("")  # every line of the page keeps its end
            content = "\n".join(page)
            page.pop()
        else:
            content = "\n".join(page)
    return ReadResult(content, norm, total, offset, limit, offset + limit < total, tuple(page))


def grep_cap(pattern: str, max_matches: int | None, limits: Limits) -> int:
    """How many matches a ``grep`` may return; refuses long patterns and bad caps."""
    limits.check("grep pattern length", len(pattern), limits.max_pattern_length)
    if max_matches is not None and max_matches < 1:
        raise InvalidArgumentError("max_matches must be >= 1", None)
    # The limit is a cap, as for ``read``'s lines: asking for more returns at most it.
    cap = limits.max_grep_matches
    return cap if max_matches is None else min(max_matches, cap)


def glob_pattern(pattern: str, mount_point: str | None, limits: Limits) -> str:
    """A ``glob`` pattern relative to the root; refuses long ones and outside absolute ones."""
    limits.check("glob pattern length", len(pattern), limits.max_pattern_length)
    return strip_mount_point(pattern, mount_point) if pattern.startswith("/") else pattern
