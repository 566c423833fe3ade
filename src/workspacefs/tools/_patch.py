"""The patch the ``diff`` tool and undo show: the protocol's (``build_patch``, git's
format, links as links), capped in lines and in bytes a file for an agent's context."""

from __future__ import annotations

from ..fs import Filesystem, FilesystemDiff, FilesystemSource, Patch, build_patch

MAX_TEXT_DIFF_BYTES = 256 * 1024
"""Files larger than this are reported as changed, with their sizes, without a line diff."""


def unified_diff(
    before: Filesystem,
    after: Filesystem,
    changes: FilesystemDiff,
    *,
    max_lines: int,
    under: str = "",
) -> Patch:
    """The first ``max_lines`` lines of the patch for ``changes``; nothing past them
    is read.

    ``under`` keeps only paths inside that directory (or that file).
    """
    prefix = under.strip("/")
    kept = [
        path
        for path in sorted({*changes.added, *changes.modified, *changes.deleted})
        if not prefix or path == prefix or path.startswith(prefix + "/")
    ]
    return build_patch(
        FilesystemSource(before),
        FilesystemSource(after),
        kept,
        max_lines=max_lines,
        limit=MAX_TEXT_DIFF_BYTES,
    )


def cut_note(patch: Patch, max_lines: int) -> str | None:
    """What a message says after a patch cut at ``max_lines`` (None if it was not)."""
    if not patch.truncated:
        return None
    files = patch.files_left_out
    return (
        f"[... patch cut at max_lines={max_lines:,}: {files:,} more changed "
        f"{'file' if files == 1 else 'files'} not shown in full; pass path= to see one file "
        "or directory, or raise max_lines.]"
    )
