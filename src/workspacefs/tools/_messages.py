"""How tools word things for a language model: errors, numbers, numbered lines.

Every failure is one sentence that names the path and the cause, so a model
can correct its next call without guessing.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Sequence

from .._errors import AccessDeniedError, QuotaExceededError, SnapshotNotFoundError

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


def describe_error(exc: BaseException) -> str:
    """A failed call's exception as a short clause for the model: what went wrong."""
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    if isinstance(exc, SnapshotNotFoundError):
        return "no such snapshot"
    if isinstance(exc, (AccessDeniedError, QuotaExceededError)):
        return f"{detail}; nothing was changed"  # the rule is named: no retry will pass it
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
    return f"Cannot {action} {quote(path)}: {describe_error(exc)}."


def changed_meanwhile(action: str, path: str, tool: str, looked: str, undone: str) -> str:
    """The failure of a change whose compare-and-swap found ``path`` changed by another
    writer after the tool ``looked`` at it (``if_match``)."""
    return (
        f"Cannot {action} {quote(path)}: it changed after {tool} {looked} it (another writer "
        f"changed it meanwhile), so nothing was {undone}."
    )


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``2,000 files``."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def parts(*counted: tuple[int, str, str]) -> str:
    """``1 file, 2 directories``, leaving out the zero counts (``nothing`` if all are)."""
    shown = [count(n, noun, plural) for n, noun, plural in counted if n]
    return ", ".join(shown) or "nothing"


_SLOTS: list[str] = []
"""At ``2 * i`` the ``cat -n`` prefix of line i after a line end (``\n`` + number + tab),
at ``2 * i + 1`` a place for the line; grown by replacing it whole, so a thread that
reads it meanwhile sees the old list or the new, never half of one."""

_RUN = LONG_LINE // 2
"""Block size of the long-line check: a line longer than ``LONG_LINE`` fills an aligned
block of this many characters (any run of ``2 * _RUN - 1`` does)."""


def _has_long_run(text: str) -> bool:
    """True if an aligned ``_RUN``-character block of ``text`` has no line end: always
    so when a line is longer than ``LONG_LINE``, seldom otherwise. One ``find`` per
    block, instead of one ``len`` per line."""
    find = text.find
    for start in range(0, len(text) - _RUN + 1, _RUN):
        if find("\n", start, start + _RUN) < 0:
            return True
    return False


def numbered(lines: Sequence[str], first: int, *, cut_long: bool = True) -> str:
    """Lines (without line ends) numbered like ``cat -n`` from ``first``; long ones cut
    (unless ``cut_long`` is False: the caller cut them).

    The lines are slotted between cached prefixes and joined once, so no
    per-line string is built; the long-line check scans the page a block at a
    time, and only a page that may hold one looks at every line.
    """
    global _SLOTS
    if not lines:
        return ""
    last = first + len(lines)
    slots = _SLOTS
    if 2 * last > len(slots):
        grown = max(last, 4096, len(slots))  # at least twice the lines it had
        slots = _SLOTS = [part for i in range(grown) for part in (f"\n{i:>6}\t", "")]
    parts = slots[2 * first : 2 * last]
    parts[1::2] = lines
    parts[0] = parts[0][1:]
    page = "".join(parts)
    if cut_long and _has_long_run(page) and max(map(len, lines)) > LONG_LINE:
        parts[1::2] = [cut(line) for line in lines]
        page = "".join(parts)
    return page


def cut_lines(text: str, lines: Sequence[str]) -> Sequence[str]:
    """``lines`` (split from ``text``) with the long ones cut, as ``numbered`` cuts them."""
    if _has_long_run(text) and max(map(len, lines)) > LONG_LINE:
        return [cut(line) for line in lines]
    return lines


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
    if isinstance(items, list):
        return items[:limit], max(0, len(items) - limit)
    shown: list[str] = []
    more = 0
    for item in items:
        if len(shown) < limit:
            shown.append(item)
        else:
            more += 1
    return shown, more
