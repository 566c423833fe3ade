"""``ToolHost``: a workspace that runs the built-in tools where it is, and ``ToolAnswer``.

A daemon's client is one: the tree is in the daemon, so a tool run in the
client would make a request of it for every step (a read, a stat, a snapshot
before the call and one after). ``Tool.invoke`` and ``UndoableToolset.call``
hand a built-in tool's call (``served``) to the host instead, as one request,
and make the same ``ToolResult`` of its answer.

Light on purpose (no pydantic): the daemon's verb table names these types,
and every client loads that table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..fs import FilesystemSnapshot
from ._result import Attachment


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """A tool call a ``ToolHost`` ran: its ``ToolResult`` as it travels, and its record.

    Attributes:
        message: The result's message.
        success: The result's ``success``.
        value: The result's value as JSON, written as its tool's handler declares its
            type (``fs.to_json``); None on failure, or when the result has none.
        attachments: The result's attachments.
        call_id: The id the call ran under: for a recorded call the one it is recorded
            under (the one asked for, or a new ``call-<n>``).
        before: A recorded call's snapshot before it (``ToolCall.before``).
        after: A recorded call's snapshot after it (``ToolCall.after``).
    """

    message: str
    success: bool = True
    value: Any = None
    attachments: tuple[Attachment, ...] = ()
    call_id: str | None = None
    before: FilesystemSnapshot | None = None
    after: FilesystemSnapshot | None = None


class ToolHost(Protocol):
    """A workspace that runs the built-in tools itself (a daemon: ``RemoteFilesystem``)."""

    def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        call_id: str | None = None,
        record: bool = False,
    ) -> ToolAnswer:
        """Run the built-in tool ``tool`` on ``arguments`` (a model's JSON) where the
        workspace is; what it answered.

        Every change it makes is attributed to the tool and ``call_id`` (with the call
        fields of the cause in effect in the caller's thread, as ``Tool.invoke`` does).

        Args:
            tool: The tool's name.
            arguments: Its raw arguments, checked there as ``Tool.invoke`` checks them.
            call_id: The call's id (None: a new ``call-<n>`` if recorded).
            record: Record it for ``rewind`` as ``UndoableToolset`` does: a snapshot
                before a call that may change the workspace, one after it if it did.

        Raises:
            AlreadyExistsError: ``record``, and the workspace records a call with this id.
        """
        ...
