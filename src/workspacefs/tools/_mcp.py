"""The tools as an MCP SDK ``Server``, for a session the SDK runs in process.

``serve_stdio`` (``_serving``) serves stdio without the SDK; this hands the
same ``ServedTools`` -- the same listing, the same results, call ids and
errors -- to the SDK's low-level server, for a client that connects to a
``Server`` object (``mcp.Client(create_server(fs))``) or a transport of the
SDK's own.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from ..fs import Filesystem
from ._mcp_session import INSTRUCTIONS
from ._registry import ToolRegistry
from ._serving import ServedTools
from ._undo import UndoableToolset


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
    served = ServedTools(filesystem, tools=tools, name=name)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool.model_validate(tool) for tool in served.listing()]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        meta = None if ctx.meta is None else dict(ctx.meta)
        answer = served.call(params.name, params.arguments, meta, ctx.request_id or 0)
        return types.CallToolResult.model_validate(answer)

    return Server(
        name,
        version=served.version,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
