"""How tools word things for a language model: errors, numbers, numbered lines.

Every failure is one sentence that names the path and the cause, so a model
can correct its next call without guessing.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable

from .._errors import SnapshotNotFoundError

LONG_LINE = 2_000
"""Characters of one line shown before it is cut (minified files have megabyte lines)."""

_CAUSES = {
    errno.ENOENT: "no such file or directory",
    errno.EISDIR: "it is a directory",
    errno.ENOTDIR: "it (or a parent) is not a directory",
    errno.EROFS: "the workspace is read-only",
    errno.EEXIST: "it already exists",
    errno.ENOTEMPTY: "the directory is not empty",
    errno.ELOOP: "too many levels of symbolic links",
}


def quote(path: str) -> str:
    """A path as messages show it."""
    return f"`{path or '.'}`"


def cause(exc: BaseException) -> str:
    """The cause of a filesystem error as a short clause."""
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    if isinstance(exc, SnapshotNotFoundError):
        return "no such snapshot"
    if isinstance(exc, OSError):
        if exc.errno == errno.EACCES and any(w in detail for w in ("outside", "escape", "link")):
            return f"it is outside the workspace ({detail})"
        if exc.errno in (errno.EFBIG, errno.ENAMETOOLONG):
            return f"over a limit: {detail}"
        if exc.errno == errno.EISDIR and "recursive" in detail:
            return "it is a directory (pass recursive=true to remove it and its contents)"
        if exc.errno in _CAUSES:
            return _CAUSES[exc.errno]
    return detail


def failure(action: str, path: str, exc: BaseException) -> str:
    """``Cannot <action> `<path>`: <cause>.`` for a failed call."""
    return f"Cannot {action} {quote(path)}: {cause(exc)}."


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``2,000 files``."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def parts(*counted: tuple[int, str, str]) -> str:
    """``1 file, 2 directories``, leaving out the zero counts (``nothing`` if all are)."""
    shown = [count(n, noun, plural) for n, noun, plural in counted if n]
    return ", ".join(shown) or "nothing"


_PREFIXES: list[str] = []
"""``\n`` + the ``cat -n`` prefix of line i, at index i."""


def numbered(lines: list[str], first: int) -> str:
    """Lines (without line ends) numbered like ``cat -n`` from ``first``; long ones cut.

    Prefixes are cached and interleaved with the lines in one ``join``, so no
    per-line string is built: numbering a 2,000-line page costs a fraction of
    the read it follows.
    """
    if not lines:
        return ""
    if max(map(len, lines)) > LONG_LINE:
        lines = [cut(line) for line in lines]
    last = first + len(lines)
    if last > len(_PREFIXES):
        _PREFIXES.extend(f"\n{i:>6}\t" for i in range(len(_PREFIXES), max(last, 4096)))
    parts: list[str] = [""] * (2 * len(lines))
    parts[::2] = _PREFIXES[first:last]
    parts[1::2] = lines
    parts[0] = parts[0][1:]
    return "".join(parts)


def cut(line: str, width: int = LONG_LINE) -> str:
    """A line shortened to ``width`` characters, saying how much was left out."""
    if len(line) <= width:
        return line
    return f"{line[:width]}... [{len(line) - width:,} more characters]"


def text_lines(text: str) -> list[str]:
    """Lines of ``text`` without their ends (``\\n`` or ``\\r\\n``), as they are shown."""
    if not text:
        return []
    if "\r" in text:  # one memchr; the two-character search is far slower
        text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def join_limited(items: Iterable[str], limit: int) -> tuple[list[str], int]:
    """The first ``limit`` items and how many more there were."""
    shown: list[str] = []
    more = 0
    for item in items:
        if len(shown) < limit:
            shown.append(item)
        else:
            more += 1
    return shown, more
