"""Agent tools over the ``Filesystem`` protocol: handlers, schemas, undo, an MCP server.

Every name loads its module on first use (``workspacefs._lazy``): serving the
tools over MCP loads neither the MCP SDK nor a tool's parameter model before it
is needed, and a daemon's client names ``ToolAnswer`` without loading pydantic.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._answer import ToolAnswer as ToolAnswer
    from ._answer import ToolHost as ToolHost
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
    from ._deferred import DeferredTools as DeferredTools
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
    from ._mcp import create_server as create_server
    from ._mcp_session import ToolService as ToolService
    from ._mcp_session import serve_mcp as serve_mcp
    from ._mcp_session import serve_mcp_stdio as serve_mcp_stdio
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
    from ._recorder import CallRecorder as CallRecorder
    from ._recorder import ToolCall as ToolCall
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
    from ._serving import CALL_ID_META as CALL_ID_META
    from ._serving import ServedTools as ServedTools
    from ._serving import serve_stdio as serve_stdio
    from ._snapshot_tools import DIFF as DIFF
    from ._snapshot_tools import RESTORE as RESTORE
    from ._snapshot_tools import SNAPSHOT as SNAPSHOT
    from ._snapshot_tools import DiffParams as DiffParams
    from ._snapshot_tools import RestoreParams as RestoreParams
    from ._snapshot_tools import SnapshotParams as SnapshotParams
    from ._snapshots import WorkspaceSnapshots as WorkspaceSnapshots
    from ._stdio import MAX_REQUEST_BYTES as MAX_REQUEST_BYTES
    from ._tool import Tool as Tool
    from ._tool import ToolAnnotations as ToolAnnotations
    from ._tool import ToolHandler as ToolHandler
    from ._tool import ToolParams as ToolParams
    from ._tool import answer_of as answer_of
    from ._toolset import FILE_TOOLS as FILE_TOOLS
    from ._toolset import REWIND_TOOLS as REWIND_TOOLS
    from ._toolset import SNAPSHOT_TOOLS as SNAPSHOT_TOOLS
    from ._toolset import filesystem_tools as filesystem_tools
    from ._undo import UndoableToolset as UndoableToolset

__all__ = [
    "BLAME",
    "CALL_ID_META",
    "DIFF",
    "EDIT_FILE",
    "FILE_TOOLS",
    "GLOB",
    "GREP",
    "HISTORY",
    "LS",
    "MAX_REQUEST_BYTES",
    "MKDIR",
    "MULTI_EDIT",
    "MV",
    "NO_FILESYSTEM",
    "READ_BYTES",
    "READ_FILE",
    "READ_FILES",
    "RESTORE",
    "REWIND",
    "REWIND_TOOLS",
    "RM",
    "SNAPSHOT",
    "SNAPSHOT_TOOLS",
    "STAT",
    "WRITE_FILE",
    "AbortParams",
    "Attachment",
    "BinaryFile",
    "BlameParams",
    "CallRecorder",
    "ConflictsParams",
    "CoordinatedSnapshot",
    "DeferredTools",
    "DiffParams",
    "Edit",
    "EditFileParams",
    "EditSpec",
    "FileBytes",
    "FileInfo",
    "FileRead",
    "GlobParams",
    "GrepParams",
    "HistoryParams",
    "HostWorkspace",
    "ListedEntry",
    "LsParams",
    "MadeDirectory",
    "Merging",
    "MkdirParams",
    "Move",
    "MultiEdit",
    "MultiEditParams",
    "MvParams",
    "NoFilesystemError",
    "ReadBytesParams",
    "ReadFileParams",
    "ReadFilesParams",
    "Removal",
    "ResolveParams",
    "RestoreParams",
    "RewindParams",
    "RmParams",
    "ServedTools",
    "SnapshotParams",
    "StatParams",
    "TextEncoding",
    "TextPage",
    "Tool",
    "ToolAnnotations",
    "ToolAnswer",
    "ToolCall",
    "ToolContext",
    "ToolHandler",
    "ToolHost",
    "ToolParams",
    "ToolRegistry",
    "ToolResult",
    "ToolService",
    "UndoableToolset",
    "VfsWorkspace",
    "WorkspaceSection",
    "WorkspaceSnapshots",
    "WriteFileParams",
    "answer_of",
    "anthropic_schema",
    "conflict_tools",
    "coordinated_rollback",
    "coordinated_snapshot",
    "create_server",
    "describe_rewind",
    "detect_encoding",
    "filesystem_tools",
    "find_filesystem",
    "input_schema",
    "openai_schema",
    "serve_mcp",
    "serve_mcp_stdio",
    "serve_stdio",
]

_EXPORTS = {
    "BLAME": "._blame",
    "BlameParams": "._blame",
    "AbortParams": "._conflicts",
    "ConflictsParams": "._conflicts",
    "Merging": "._conflicts",
    "ResolveParams": "._conflicts",
    "conflict_tools": "._conflicts",
    "NO_FILESYSTEM": "._context",
    "NoFilesystemError": "._context",
    "ToolContext": "._context",
    "CoordinatedSnapshot": "._coordinated",
    "coordinated_rollback": "._coordinated",
    "coordinated_snapshot": "._coordinated",
    "DeferredTools": "._deferred",
    "EDIT_FILE": "._edit",
    "Edit": "._edit",
    "EditFileParams": "._edit",
    "TextEncoding": "._encoding",
    "detect_encoding": "._encoding",
    "READ_FILE": "._files",
    "WRITE_FILE": "._files",
    "ReadFileParams": "._files",
    "WriteFileParams": "._files",
    "GREP": "._grep",
    "GrepParams": "._grep",
    "MKDIR": "._info",
    "STAT": "._info",
    "FileInfo": "._info",
    "MadeDirectory": "._info",
    "MkdirParams": "._info",
    "StatParams": "._info",
    "GLOB": "._listing",
    "LS": "._listing",
    "RM": "._listing",
    "GlobParams": "._listing",
    "ListedEntry": "._listing",
    "LsParams": "._listing",
    "Removal": "._listing",
    "RmParams": "._listing",
    "READ_BYTES": "._media",
    "FileBytes": "._media",
    "ReadBytesParams": "._media",
    "MV": "._move",
    "Move": "._move",
    "MvParams": "._move",
    "MULTI_EDIT": "._multi_edit",
    "EditSpec": "._multi_edit",
    "MultiEdit": "._multi_edit",
    "MultiEditParams": "._multi_edit",
    "BinaryFile": "._pages",
    "TextPage": "._pages",
    "READ_FILES": "._read_files",
    "FileRead": "._read_files",
    "ReadFilesParams": "._read_files",
    "ToolRegistry": "._registry",
    "Attachment": "._result",
    "ToolResult": "._result",
    "HISTORY": "._rewind",
    "REWIND": "._rewind",
    "HistoryParams": "._rewind",
    "RewindParams": "._rewind",
    "describe_rewind": "._rewind",
    "anthropic_schema": "._schemas",
    "input_schema": "._schemas",
    "openai_schema": "._schemas",
    "HostWorkspace": "._sections",
    "VfsWorkspace": "._sections",
    "WorkspaceSection": "._sections",
    "find_filesystem": "._sections",
    "DIFF": "._snapshot_tools",
    "RESTORE": "._snapshot_tools",
    "SNAPSHOT": "._snapshot_tools",
    "DiffParams": "._snapshot_tools",
    "RestoreParams": "._snapshot_tools",
    "SnapshotParams": "._snapshot_tools",
    "WorkspaceSnapshots": "._snapshots",
    "Tool": "._tool",
    "answer_of": "._tool",
    "ToolAnnotations": "._tool",
    "ToolHandler": "._tool",
    "ToolParams": "._tool",
    "FILE_TOOLS": "._toolset",
    "REWIND_TOOLS": "._toolset",
    "SNAPSHOT_TOOLS": "._toolset",
    "filesystem_tools": "._toolset",
    "CallRecorder": "._recorder",
    "ToolCall": "._recorder",
    "ToolAnswer": "._answer",
    "ToolHost": "._answer",
    "UndoableToolset": "._undo",
    "CALL_ID_META": "._serving",
    "create_server": "._mcp",
    "ServedTools": "._serving",
    "ToolService": "._mcp_session",
    "serve_mcp": "._mcp_session",
    "serve_mcp_stdio": "._mcp_session",
    "serve_stdio": "._serving",
    "MAX_REQUEST_BYTES": "._stdio",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
