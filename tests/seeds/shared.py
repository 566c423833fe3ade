"""Code blocks that seeds 000, 001 and 002 share word for word: the handlers, the
adapter's ``_build_tool_context`` and ``rollback_to``, as written. ``ReadFileParams`` and
``ReadFileResult`` are the handler author's own types: defined with the fields used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workspacefs import FilesystemSnapshot, SnapshotableFilesystem
from workspacefs.tools import ToolContext, ToolResult

from .framework import Prompt, RenderedPrompt, Session, Snapshot


@dataclass(frozen=True)
class ReadFileParams:
    path: str
    offset: int = 0
    limit: int | None = None


@dataclass(frozen=True)
class ReadFileResult:
    content: str
    path: str
    truncated: bool


def read_file_handler(
    params: ReadFileParams,
    *,
    context: ToolContext,
) -> ToolResult[ReadFileResult]:
    if context.filesystem is None:
        return ToolResult(
            message="No filesystem available in this context.",
            value=None,
            success=False,
        )

    try:
        result = context.filesystem.read(
            params.path,
            offset=params.offset,
            limit=params.limit,
        )
    except FileNotFoundError:
        return ToolResult(
            message=f"File not found: {params.path}",
            value=None,
            success=False,
        )

    return ToolResult(
        message=f"Read {result.total_lines} lines from {result.path}",
        value=ReadFileResult(
            content=result.content,
            path=result.path,
            truncated=result.truncated,
        ),
    )


class Adapter:
    def _build_tool_context(
        self,
        prompt: Prompt[Any],
        rendered: RenderedPrompt[Any],
        session: Session,
    ) -> ToolContext:
        return ToolContext(
            prompt=prompt,
            rendered_prompt=rendered,
            adapter=self,
            session=session,
            deadline=rendered.deadline,
            filesystem=prompt.filesystem(),  # Propagate from workspace section
        )


def my_handler(params: ReadFileParams, *, context: ToolContext) -> ToolResult[ReadFileResult]:
    fs = context.filesystem
    if fs is None:
        return ToolResult(message="No filesystem available", value=None, success=False)

    try:
        # Filesystem operations
        result = fs.read(params.path)
    except FileNotFoundError:
        return ToolResult(message=f"File not found: {params.path}", value=None, success=False)
    except PermissionError as e:
        return ToolResult(message=str(e), value=None, success=False)

    return ToolResult(
        message="Success",
        value=ReadFileResult(content=result.content, path=result.path, truncated=False),
    )


def rollback_to(
    session: Session,
    session_snapshot: Snapshot,
    filesystem: SnapshotableFilesystem,
) -> None:
    """Restore both session state and filesystem."""
    # Find the filesystem snapshot from that session state
    fs_snapshots = session_snapshot.slices.get(FilesystemSnapshot, ())
    if fs_snapshots:
        filesystem.restore(fs_snapshots[-1])

    # Restore session state
    session.restore(session_snapshot)
