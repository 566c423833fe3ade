"""The tools as an MCP server (the official ``mcp`` SDK's low-level ``Server``).

The low-level server is used so the advertised schemas are exactly the ones
``openai_schema``/``anthropic_schema`` export. Every outcome of a call is a
tool result: a refused call has ``isError`` and the model reads why; even a
bug in a handler is logged and returned as an error result, so the server
keeps serving. Calls run one at a time, in the event loop's thread: handlers
are synchronous and the undo history is ordered, so calls never overlapped
anyway, and a hop to a worker thread and back was a third of a small call's
time at the client (0.8 -> 0.6 ms for a ``stat``). While a long call runs
(a grep of a large tree), nothing else is answered. Over stdio the transport
is this package's (``_stdio``): every line is bounded and answered.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import replace
from importlib import metadata
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from .._errors import AlreadyExistsError
from ..fs import Filesystem, SnapshotableFilesystem, to_json
from ._context import ToolContext
from ._registry import ToolRegistry
from ._result import ToolResult
from ._schemas import input_schema
from ._stdio import stdio_transport
from ._tool import Tool
from ._toolset import filesystem_tools
from ._undo import UndoableToolset

log = logging.getLogger(__name__)

CALL_ID_META = "workspacefs/call_id"
"""The ``_meta`` key of a call's id: in a request, the id to record it under; in its
result, the id it was recorded (or attributed) under."""

INSTRUCTIONS = (
    "Tools over one workspace filesystem. Paths are relative to the workspace root. "
    "read_file numbers lines like `cat -n` (any size, any text encoding); edit_file and "
    "multi_edit need the exact text without those numbers. read_bytes shows images and "
    "other binary files; stat says which read tool a file needs. snapshot/restore/diff "
    "save, return to and compare states of the whole workspace. Where offered, history "
    "lists the calls that may have changed it and rewind returns it to just before one."
)


def _version() -> str:
    try:
        return metadata.version("workspacefs")
    except metadata.PackageNotFoundError:  # run from a source tree
        return ""


def _listed(tool: Tool[Any, Any]) -> types.Tool:
    hints = tool.annotations
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=input_schema(tool.params),
        annotations=types.ToolAnnotations(
            title=hints.title,
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=False,
        ),
    )


def recorded(filesystem: Filesystem) -> bool:
    """Whether calls on ``filesystem`` can be recorded for rewind: it snapshots, lists
    and deletes its snapshots, and takes writes."""
    return (
        isinstance(filesystem, SnapshotableFilesystem)
        and not filesystem.read_only
        and callable(getattr(filesystem, "snapshots", None))
        and callable(getattr(filesystem, "delete_snapshot", None))
    )


def create_server(
    filesystem: Filesystem,
    *,
    tools: ToolRegistry | UndoableToolset | None = None,
    name: str = "workspacefs",
) -> Server[Any]:
    """An MCP server offering ``tools`` on ``filesystem``.

    Args:
        filesystem: The workspace.
        tools: A registry, or an ``UndoableToolset`` to record every call for
            rewind. Default: the built-in tools, recorded with ``history`` and
            ``rewind`` where the workspace can (``recorded``), else unrecorded.
        name: The server name clients see.
    """
    toolset: ToolRegistry | UndoableToolset
    if tools is not None:
        toolset = tools
    elif isinstance(filesystem, SnapshotableFilesystem) and recorded(filesystem):
        toolset = UndoableToolset(filesystem_tools(filesystem, rewind=True), filesystem)
    else:
        toolset = filesystem_tools(filesystem)
    registry = toolset.tools if isinstance(toolset, UndoableToolset) else toolset
    context = ToolContext(filesystem=filesystem)

    def run(call: str, arguments: dict[str, Any], call_id: str) -> ToolResult[Any]:
        # The id names the call in what ``blame`` shows, and in the undo history.
        try:
            if isinstance(toolset, UndoableToolset):
                return toolset.call(call, arguments, context=context, call_id=call_id)
            return toolset.call(call, arguments, context=replace(context, call_id=call_id))
        except AlreadyExistsError:
            return ToolResult.fail(
                f"The call id {call_id!r} is recorded already; give each call an id of its own."
            )
        except Exception as exc:  # a bug must not take the server down
            log.exception("tool %s failed", call)
            return ToolResult.fail(f"{call} failed with an internal error: {exc!r}")

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_listed(tool) for tool in registry])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        given = (ctx.meta or {}).get(CALL_ID_META)
        if given is not None and (not isinstance(given, str) or not given):
            result: ToolResult[Any] = ToolResult.fail(
                f"_meta[{CALL_ID_META!r}] must be a non-empty string, the call's id."
            )
            return types.CallToolResult(content=_content(result), is_error=True)
        if given is None:
            given = _new_id(toolset, ctx)
        result = run(params.name, dict(params.arguments or {}), given)
        return types.CallToolResult(
            content=_content(result),
            structured_content=_structured(registry.get(params.name), result),
            is_error=not result.success,
            _meta={CALL_ID_META: given},
        )

    return Server(
        name,
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _new_id(toolset: ToolRegistry | UndoableToolset, ctx: ServerRequestContext[Any]) -> str:
    """The id of a call the client named not: the toolset's next free one, else one
    made of the request's id."""
    if isinstance(toolset, UndoableToolset):
        return toolset.new_call_id()
    return f"mcp-{ctx.request_id}"


def _content(result: ToolResult[Any]) -> list[types.ContentBlock]:
    """The message, then each attachment as MCP image or audio content."""
    blocks: list[types.ContentBlock] = [types.TextContent(text=result.message)]
    for item in result.attachments:
        data = base64.b64encode(item.data).decode("ascii")
        if item.mime_type.startswith("audio/"):
            blocks.append(types.AudioContent(data=data, mime_type=item.mime_type))
        else:
            blocks.append(types.ImageContent(data=data, mime_type=item.mime_type))
    return blocks


def _structured(tool: Tool[Any, Any] | None, result: ToolResult[Any]) -> dict[str, Any] | None:
    """A result's value as MCP structured content, for a tool that declares its
    ``output`` type (None for the others, and for a failure)."""
    if tool is None or tool.output is None or result.value is None or not result.success:
        return None
    data = to_json(result.value, tool.output)
    return data if isinstance(data, dict) else {"result": data}


async def _serve(server: Server[Any]) -> None:
    async with stdio_transport() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_stdio(
    filesystem: Filesystem,
    *,
    tools: ToolRegistry | UndoableToolset | None = None,
    name: str = "workspacefs",
) -> None:
    """Serve the tools over MCP on stdin/stdout until the client closes stdin."""
    anyio.run(_serve, create_server(filesystem, tools=tools, name=name))
