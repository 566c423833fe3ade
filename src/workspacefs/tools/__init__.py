"""Agent tools over the ``Filesystem`` protocol: handlers, schemas, undo, an MCP server.

The MCP server (``create_server``, ``serve_stdio``) loads the ``mcp`` SDK on
first use, so exporting schemas or dispatching calls does not pay for it.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from ._blame import BLAME as BLAME
from ._blame import BlameParams as BlameParams
from ._conflicts import AbortParams as AbortParams
from ._conflicts import ConflictsParams as ConflictsParams
from ._conflicts import Merging as Merging
from ._conflicts import ResolveParams as ResolveParams
from ._conflicts import conflict_tools as conflict_tools
from ._context import NO_FILESYSTEM as NO_FILESYSTEM
from ._context import NoFilesystemError as NoFilesystemError
from ._context import ToolContext as ToolContext
from ._coordinated import CoordinatedSnapshot as CoordinatedSnapshot
from ._coordinated import coordinated_rollback as coordinated_rollback
from ._coordinated import coordinated_snapshot as coordinated_snapshot
from ._edit import EDIT_FILE as EDIT_FILE
from ._edit import Edit as Edit
from ._edit import EditFileParams as EditFileParams
from ._encoding import TextEncoding as TextEncoding
from ._encoding import detect_encoding as detect_encoding
from ._files import READ_FILE as READ_FILE
from ._files import WRITE_FILE as WRITE_FILE
from ._files import ReadFileParams as ReadFileParams
from ._files import WriteFileParams as WriteFileParams
from ._grep import GREP as GREP
from ._grep import GrepParams as GrepParams
from ._info import MKDIR as MKDIR
from ._info import STAT as STAT
from ._info import FileInfo as FileInfo
from ._info import MadeDirectory as MadeDirectory
from ._info import MkdirParams as MkdirParams
from ._info import StatParams as StatParams
from ._listing import GLOB as GLOB
from ._listing import LS as LS
from ._listing import RM as RM
from ._listing import GlobParams as GlobParams
from ._listing import ListedEntry as ListedEntry
from ._listing import LsParams as LsParams
from ._listing import Removal as Removal
from ._listing import RmParams as RmParams
from ._media import READ_BYTES as READ_BYTES
from ._media import FileBytes as FileBytes
from ._media import ReadBytesParams as ReadBytesParams
from ._move import MV as MV
from ._move import Move as Move
from ._move import MvParams as MvParams
from ._multi_edit import MULTI_EDIT as MULTI_EDIT
from ._multi_edit import EditSpec as EditSpec
from ._multi_edit import MultiEdit as MultiEdit
from ._multi_edit import MultiEditParams as MultiEditParams
from ._pages import BinaryFile as BinaryFile
from ._pages import TextPage as TextPage
from ._read_files import READ_FILES as READ_FILES
from ._read_files import FileRead as FileRead
from ._read_files import ReadFilesParams as ReadFilesParams
from ._registry import ToolRegistry as ToolRegistry
from ._result import Attachment as Attachment
from ._result import ToolResult as ToolResult
from ._rewind import HISTORY as HISTORY
from ._rewind import REWIND as REWIND
from ._rewind import HistoryParams as HistoryParams
from ._rewind import RewindParams as RewindParams
from ._rewind import describe_rewind as describe_rewind
from ._schemas import anthropic_schema as anthropic_schema
from ._schemas import input_schema as input_schema
from ._schemas import openai_schema as openai_schema
from ._sections import HostWorkspace as HostWorkspace
from ._sections import VfsWorkspace as VfsWorkspace
from ._sections import WorkspaceSection as WorkspaceSection
from ._sections import find_filesystem as find_filesystem
from ._snapshot_tools import DIFF as DIFF
from ._snapshot_tools import RESTORE as RESTORE
from ._snapshot_tools import SNAPSHOT as SNAPSHOT
from ._snapshot_tools import DiffParams as DiffParams
from ._snapshot_tools import RestoreParams as RestoreParams
from ._snapshot_tools import SnapshotParams as SnapshotParams
from ._snapshots import WorkspaceSnapshots as WorkspaceSnapshots
from ._tool import Tool as Tool
from ._tool import ToolAnnotations as ToolAnnotations
from ._tool import ToolHandler as ToolHandler
from ._tool import ToolParams as ToolParams
from ._toolset import FILE_TOOLS as FILE_TOOLS
from ._toolset import REWIND_TOOLS as REWIND_TOOLS
from ._toolset import SNAPSHOT_TOOLS as SNAPSHOT_TOOLS
from ._toolset import filesystem_tools as filesystem_tools
from ._undo import ToolCall as ToolCall
from ._undo import UndoableToolset as UndoableToolset

if TYPE_CHECKING:
    from ._mcp import CALL_ID_META as CALL_ID_META
    from ._mcp import create_server as create_server
    from ._mcp import serve_stdio as serve_stdio
    from ._stdio import MAX_REQUEST_BYTES as MAX_REQUEST_BYTES
    from ._stdio import stdio_transport as stdio_transport

_LAZY_NAMES = {
    "CALL_ID_META": "._mcp",
    "create_server": "._mcp",
    "serve_stdio": "._mcp",
    "MAX_REQUEST_BYTES": "._stdio",
    "stdio_transport": "._stdio",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(_import_module(_LAZY_NAMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_NAMES})
