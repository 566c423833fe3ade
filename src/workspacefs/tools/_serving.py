"""The tools of one workspace as an MCP server serves them, and ``serve_stdio``.

``ServedTools`` lists the tools and runs their calls, as MCP JSON; the
session (``_mcp_session``) speaks the protocol around it, on stdio here or in
a workspace daemon, and ``create_server`` hands it to the MCP SDK's server.

Every outcome of a call is a tool result: a refused call has ``isError`` and
the model reads why; even a bug in a handler is logged and returned as an
error result, so the server keeps serving. Calls run one at a time, in the
thread that reads the requests: handlers are synchronous and the undo history
is ordered. While a long call runs (a grep of a large tree), nothing else is
answered.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import threading
from typing import Any

from pydantic import BaseModel

from .._errors import AlreadyExistsError
from ..fs import Filesystem, SnapshotableFilesystem, to_json
from ._context import ToolContext
from ._mcp_session import INSTRUCTIONS, serve_mcp_stdio, server_version
from ._registry import ToolRegistry
from ._result import ToolResult
from ._schemas import input_schema
from ._stdio import Json
from ._tool import Tool
from ._toolset import filesystem_tools
from ._undo import UndoableToolset

log = logging.getLogger(__name__)

CALL_ID_META = "workspacefs/call_id"
"""The ``_meta`` key of a call's id: in a request, the id to record it under; in its
result, the id it was recorded (or attributed) under."""


def recorded(filesystem: Filesystem) -> bool:
    """Whether calls on ``filesystem`` can be recorded for rewind: it snapshots, lists
    and deletes its snapshots, and takes writes."""
    return (
        isinstance(filesystem, SnapshotableFilesystem)
        and not filesystem.read_only
        and callable(getattr(filesystem, "snapshots", None))
        and callable(getattr(filesystem, "delete_snapshot", None))
    )


def listed(tool: Tool[Any, Any]) -> Json:
    """``tool`` as ``tools/list`` lists it: the schema ``anthropic_schema`` exports, and
    its hints as MCP's annotations."""
    hints = tool.annotations
    annotations: Json = {
        "readOnlyHint": hints.read_only,
        "destructiveHint": hints.destructive,
        "idempotentHint": hints.idempotent,
        "openWorldHint": False,
    }
    if hints.title is not None:
        annotations["title"] = hints.title
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": _schema(tool.params),
        "annotations": annotations,
    }


_SCHEMAS: dict[type[BaseModel], Json] = {}


def _schema(params: type[BaseModel]) -> Json:
    """``input_schema(params)``, made once per model (a daemon lists its tools in every
    session; pydantic takes a millisecond a model)."""
    schema = _SCHEMAS.get(params)
    if schema is None:
        schema = _SCHEMAS[params] = input_schema(params)
    return schema


def content(result: ToolResult[Any]) -> list[Json]:
    """The message, then each attachment as MCP image or audio content."""
    blocks: list[Json] = [{"type": "text", "text": result.message}]
    for item in result.attachments:
        kind = "audio" if item.mime_type.startswith("audio/") else "image"
        data = base64.b64encode(item.data).decode("ascii")
        blocks.append({"type": kind, "data": data, "mimeType": item.mime_type})
    return blocks


def _structured(tool: Tool[Any, Any] | None, result: ToolResult[Any]) -> Json | None:
    """A result's value as MCP structured content, for a tool that declares its
    ``output`` type (None for the others, and for a failure)."""
    if tool is None or tool.output is None or result.value is None or not result.success:
        return None
    data = to_json(result.value, tool.output)
    return data if isinstance(data, dict) else {"result": data}


def _failed(message: str) -> Json:
    return {"content": [{"type": "text", "text": message}], "isError": True}


class ServedTools:
    """The tools an MCP server offers on one workspace (an ``_mcp_session.ToolService``).

    Args:
        filesystem: The workspace.
        tools: A registry, or an ``UndoableToolset`` to record every call for
            rewind. Default: the built-in tools, recorded with ``history`` and
            ``rewind`` where the workspace can (``recorded``), else unrecorded.
        name: The server name clients see.
    """

    def __init__(
        self,
        filesystem: Filesystem,
        *,
        tools: ToolRegistry | UndoableToolset | None = None,
        name: str = "workspacefs",
    ) -> None:
        if tools is None:
            if isinstance(filesystem, SnapshotableFilesystem) and recorded(filesystem):
                tools = UndoableToolset(filesystem_tools(filesystem, rewind=True), filesystem)
            else:
                tools = filesystem_tools(filesystem)
        self._toolset = tools
        self._registry = tools.tools if isinstance(tools, UndoableToolset) else tools
        self._context = ToolContext(filesystem=filesystem)
        self._name = name
        self._version: str | None = None
        self._listing: tuple[tuple[int, ...], list[Json]] = ((), [])
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The server name clients see."""
        return self._name

    @property
    def version(self) -> str:
        """This package's version."""
        if self._version is None:
            self._version = server_version()
        return self._version

    @property
    def instructions(self) -> str:
        """What the client's model is told about the tools."""
        return INSTRUCTIONS

    @property
    def registry(self) -> ToolRegistry:
        """The tools offered."""
        return self._registry

    def listing(self) -> list[Json]:
        """The tools, as ``tools/list`` lists them (made again only when the registry
        changes)."""
        key = tuple(id(tool) for tool in self._registry)
        with self._lock:
            if self._listing[0] != key:
                self._listing = (key, [listed(tool) for tool in self._registry])
            return self._listing[1]

    def call(
        self, name: str, arguments: Json | None, meta: Json | None, request_id: int | str
    ) -> Json:
        """Run a tool; its ``tools/call`` result. ``meta[CALL_ID_META]`` names the call
        (default: the toolset's next free id, or one made of the request's id); the
        result's ``_meta`` says the id it ran under."""
        given = (meta or {}).get(CALL_ID_META)
        if given is not None and (not isinstance(given, str) or not given):
            return _failed(f"_meta[{CALL_ID_META!r}] must be a non-empty string, the call's id.")
        call_id, result = self._run(name, arguments or {}, given, request_id)
        answer: Json = {"content": content(result), "isError": not result.success}
        structured = _structured(self._registry.get(name), result)
        if structured is not None:
            answer["structuredContent"] = structured
        if call_id is not None:
            answer["_meta"] = {CALL_ID_META: call_id}
        return answer

    def _run(
        self, name: str, arguments: Json, given: str | None, request_id: int | str
    ) -> tuple[str | None, ToolResult[Any]]:
        """The id the call ran under, and its result."""
        toolset = self._toolset
        try:
            if isinstance(toolset, UndoableToolset):
                call = toolset.run(name, arguments, context=self._context, call_id=given)
                return call.call_id, call.result
            call_id = given or f"mcp-{request_id}"
            context = dataclasses.replace(self._context, call_id=call_id)
            return call_id, toolset.call(name, arguments, context=context)
        except AlreadyExistsError:
            return given, ToolResult.fail(
                f"The call id {given!r} is recorded already; give each call an id of its own."
            )
        except Exception as exc:  # a bug must not take the server down
            log.exception("tool %s failed", name)
            return given, ToolResult.fail(f"{name} failed with an internal error: {exc!r}")


def serve_stdio(
    filesystem: Filesystem,
    *,
    tools: ToolRegistry | UndoableToolset | None = None,
    name: str = "workspacefs",
) -> None:
    """Serve the tools over MCP on stdin/stdout until the client closes stdin.

    Args:
        filesystem: The workspace.
        tools: As ``ServedTools`` takes them (default: the built-in tools, recorded
            where the workspace can).
        name: The server name clients see.
    """
    serve_mcp_stdio(ServedTools(filesystem, tools=tools, name=name))
