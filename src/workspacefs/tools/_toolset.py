"""The built-in tool set over the ``Filesystem`` protocol."""

from __future__ import annotations

from typing import Any

from ..fs import AttributedFilesystem, Filesystem, SnapshotableFilesystem
from ._blame import BLAME
from ._edit import EDIT_FILE
from ._files import READ_FILE, WRITE_FILE
from ._grep import GREP
from ._info import MKDIR, STAT
from ._listing import GLOB, LS, RM
from ._media import READ_BYTES
from ._move import MV
from ._multi_edit import MULTI_EDIT
from ._read_files import READ_FILES
from ._registry import ToolRegistry
from ._rewind import HISTORY, REWIND
from ._snapshot_tools import DIFF, RESTORE, SNAPSHOT
from ._tool import Tool

FILE_TOOLS: tuple[Tool[Any, Any], ...] = (
    LS,
    STAT,
    READ_FILE,
    READ_FILES,
    READ_BYTES,
    WRITE_FILE,
    EDIT_FILE,
    MULTI_EDIT,
    MKDIR,
    MV,
    GLOB,
    GREP,
    RM,
)
"""The tools every ``Filesystem`` supports."""

SNAPSHOT_TOOLS: tuple[Tool[Any, Any], ...] = (SNAPSHOT, RESTORE, DIFF)
"""The tools a ``SnapshotableFilesystem`` supports too."""


REWIND_TOOLS: tuple[Tool[Any, Any], ...] = (HISTORY, REWIND)
"""The recorded tool calls and going back to one (meaningful with ``UndoableToolset``)."""


def filesystem_tools(
    filesystem: Filesystem | None = None, *, blame: bool = False, rewind: bool = False
) -> ToolRegistry:
    """A new registry of the built-in tools.

    Args:
        filesystem: If given and it cannot snapshot, the snapshot tools are left out.
        blame: Offer ``blame`` too (unless ``filesystem`` cannot attribute changes).
        rewind: Offer ``history`` and ``rewind`` too (unless ``filesystem`` cannot
            snapshot): the calls an ``UndoableToolset`` records, and going back.
    """
    tools = list(FILE_TOOLS)
    if filesystem is None or isinstance(filesystem, SnapshotableFilesystem):
        tools += SNAPSHOT_TOOLS
        if rewind:
            tools += REWIND_TOOLS
    if blame and (filesystem is None or isinstance(filesystem, AttributedFilesystem)):
        tools.append(BLAME)
    return ToolRegistry(tools)
