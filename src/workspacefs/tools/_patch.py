"""Unified diffs of text files between two states (difflib), capped like grep."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from ..fs import Filesystem, FilesystemDiff
from ._messages import text_lines

MAX_TEXT_DIFF_BYTES = 256 * 1024
"""Files larger than this are reported as changed without a line diff."""


def _text(fs: Filesystem | None, path: str) -> str | None:
    """The file as text, "" when absent, None when binary or too large to diff."""
    if fs is None:
        return ""
    try:
        data = fs.read_bytes(path, limit=MAX_TEXT_DIFF_BYTES)
    except (OSError, ValueError):
        return ""
    if data.truncated or b"\0" in data.content:
        return None
    try:
        return data.content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _file_patch(before: Filesystem | None, after: Filesystem | None, path: str) -> Iterator[str]:
    old, new = _text(before, path), _text(after, path)
    if old is None or new is None:
        yield f"Binary or large file {path} differs"
        return
    yield from difflib.unified_diff(
        text_lines(old),
        text_lines(new),
        fromfile=f"a/{path}" if before is not None else "/dev/null",
        tofile=f"b/{path}" if after is not None else "/dev/null",
        lineterm="",
    )


def unified_diff(
    before: Filesystem,
    after: Filesystem,
    changes: FilesystemDiff,
    *,
    max_lines: int,
    under: str = "",
) -> tuple[list[str], int]:
    """The first ``max_lines`` lines of the patch for ``changes`` and how many more there are.

    ``under`` keeps only paths inside that directory (or that file).
    """
    prefix = under.strip("/")
    kept = [
        (path, before if path not in changes.added else None,
         after if path not in changes.deleted else None)
        for path in sorted({*changes.added, *changes.modified, *changes.deleted})
        if not prefix or path == prefix or path.startswith(prefix + "/")
    ]  # fmt: skip
    shown: list[str] = []
    more = 0
    for path, old, new in kept:
        for line in _file_patch(old, new, path):
            if len(shown) < max_lines:
                shown.append(line)
            else:
                more += 1
    return shown, more
