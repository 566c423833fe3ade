"""``mv``: move or rename a file, symlink or directory, atomically, within the workspace.

One protocol ``rename``, so the move is atomic on every backend (a host
directory's ``renameat2``, the tree's one change under its lock, a daemon's
one verb). Without ``overwrite`` the destination must not exist, checked in
the same step as the move (``RENAME_NOREPLACE``): a file another writer puts
there meanwhile fails the call instead of being replaced. A destination that
is a directory receives the source inside it, as ``mv`` does; missing parent
directories are made, as write_file makes them.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from pydantic import Field

from ..fs import Filesystem
from ._context import ToolContext
from ._files import PATH_HELP
from ._messages import describe_error, quote
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served


class MvParams(ToolParams):
    """Arguments of ``mv``."""

    source: str = Field(description="File, symlink or directory to move. " + PATH_HELP)
    destination: str = Field(
        description=(
            "Its new path; an existing directory receives it inside (as `mv` does). "
            "Missing parent directories are made."
        )
    )
    overwrite: bool = Field(
        False, description="Replace a file (or empty directory) at the destination."
    )


@dataclass(frozen=True, slots=True)
class Move:
    """What ``mv`` did: where the entry was and where it is now."""

    source: str
    destination: str
    replaced: bool


def _target(fs: Filesystem, source: str, destination: str) -> str:
    """The destination path: inside ``destination`` if that is a directory (or ends
    with ``/``), else ``destination`` itself."""
    name = posixpath.basename(source.rstrip("/"))
    if destination.endswith("/"):
        return destination + name
    try:
        found = fs.stat(destination)
    except (OSError, ValueError):
        return destination
    if found.is_directory and not found.is_symlink:
        return posixpath.join(destination, name)
    return destination


def mv(params: MvParams, *, context: ToolContext) -> ToolResult[Move]:
    """Move ``source`` to ``destination`` in one atomic rename."""
    fs, source = context.workspace(), params.source
    target = params.destination
    try:
        moved = fs.stat(source)
        target = _target(fs, source, params.destination)
        replaced = params.overwrite and fs.exists(target)
        parent = posixpath.dirname(target.rstrip("/"))
        # The source's own directory is there (it holds the source): a rename in place
        # asks nothing more.
        here = parent == posixpath.dirname(source.rstrip("/"))
        if parent and parent != "/" and not here and not fs.exists(parent):
            fs.mkdir(parent, parents=True, exist_ok=True)
        fs.rename(source, target, replace=params.overwrite)
        now = fs.stat(target).path
    except FileExistsError:
        return ToolResult.fail(
            f"Cannot move {quote(source)} to {quote(target)}: {quote(target)} already exists. "
            "Pass overwrite=true to replace it, or choose another destination."
        )
    except (OSError, ValueError) as exc:
        named = getattr(exc, "filename", None)
        which = f" ({quote(named)})" if isinstance(named, str) and named != "/" else ""
        return ToolResult.fail(
            f"Cannot move {quote(source)} to {quote(target)}: {describe_error(exc)}{which}."
        )
    move = Move(moved.path, now, replaced)
    what = (
        "directory"
        if moved.is_directory and not moved.is_symlink
        else ("symlink" if moved.is_symlink else "file")
    )
    done = " (replacing what was there)" if replaced else ""
    return ToolResult.ok(f"Moved {what} {quote(move.source)} to {quote(now)}{done}.", move)


MV = served(
    Tool(
        name="mv",
        description=(
            "Move or rename a file, symlink or directory within the workspace, atomically. "
            "A destination that is a directory receives the source inside it. An existing "
            "destination file is refused unless overwrite=true."
        ),
        params=MvParams,
        handler=mv,
        annotations=ToolAnnotations(
            read_only=False,
            destructive=True,
            idempotent=False,
            title="Move or rename",
            changes_directories=True,
        ),
    )
)
