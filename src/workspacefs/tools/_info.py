"""``stat`` and ``mkdir``: what a path is, and making a directory.

``stat`` says what an agent needs to choose its next call: the kind, size,
mode and times, a link's target, a directory's entry count, and for a file
whether read_file or read_bytes reads it (its first block's encoding, or its
media type), so no call is spent on a refusal.
"""

from __future__ import annotations

import stat as _stat
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import Field

from ..fs import FileStat, Filesystem
from ._context import ToolContext
from ._encoding import detect_encoding
from ._files import PATH_HELP
from ._media import media_type
from ._messages import count, failure, parts, quote
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

SNIFF_BYTES = 8_192
"""Bytes of a file read to tell text from binary."""

Kind = Literal["file", "directory", "symlink"]


class StatParams(ToolParams):
    """Arguments of ``stat``."""

    path: str = Field(description=PATH_HELP)


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What ``stat`` found.

    Attributes:
        path: The path.
        kind: What the path itself is.
        target_kind: What a symlink leads to inside the workspace (None: nothing).
        link_target: A symlink's target as written.
        size_bytes: A file's size (of what a symlink leads to).
        mode: Permission bits (``0o644``).
        modified_at: Last change of content.
        created_at: Creation, where the backend records it.
        entries: A directory's entry count.
        content: A file's content: ``text (<encoding>)``, a media type, or ``binary``.
    """

    path: str
    kind: Kind
    target_kind: Literal["file", "directory"] | None
    link_target: str | None
    size_bytes: int
    mode: int
    modified_at: datetime | None
    created_at: datetime | None
    entries: int | None = None
    content: str | None = None


def _content(fs: Filesystem, path: str, size: int) -> str:
    head = fs.read_bytes(path, offset=0, limit=min(size, SNIFF_BYTES)).content
    mime = media_type(head)
    if mime is not None:
        return f"{mime}: read_bytes shows it"
    if not size:
        return "empty"
    encoding = detect_encoding(head, whole=size <= SNIFF_BYTES)
    if encoding is None:
        return "binary: read_bytes reads it"
    return f"text ({encoding.label}): read_file reads it"


def _info(fs: Filesystem, path: str, found: FileStat) -> FileInfo:
    target: Literal["file", "directory"] | None = (
        "directory" if found.is_directory else "file" if found.is_file else None
    )
    kind: Kind = "symlink" if found.is_symlink else (target or "file")
    link = fs.readlink(path) if found.is_symlink else None
    entries = len(fs.list(path)) if found.is_directory else None
    content = _content(fs, path, found.size_bytes) if found.is_file else None
    return FileInfo(
        path=found.path,
        kind=kind,
        target_kind=target if found.is_symlink else None,
        link_target=link,
        size_bytes=found.size_bytes if found.is_file else 0,
        mode=_stat.S_IMODE(found.mode),
        modified_at=found.modified_at,
        created_at=found.created_at,
        entries=entries,
        content=content,
    )


def _when(moment: datetime | None) -> str:
    return "unknown" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def stat(params: StatParams, *, context: ToolContext) -> ToolResult[FileInfo]:
    """Kind, size, mode and times of a path."""
    fs, path = context.workspace(), params.path
    try:
        info = _info(fs, path, fs.stat(path))
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("stat", path, exc))
    lines = [f"{quote(info.path)}: {_what(info)}"]
    if info.kind == "symlink":
        leads = {"file": "a file", "directory": "a directory", None: "nothing in the workspace"}
        lines.append(f"target: {info.link_target} (leads to {leads[info.target_kind]})")
    if info.content is not None:
        lines.append(f"content: {info.content}")
    if info.kind != "symlink" or info.target_kind is not None:
        kind = "-" if info.kind == "file" or info.target_kind == "file" else "d"
        lines.append(f"mode: {info.mode:04o} ({kind}{_stat.filemode(info.mode)[1:]})")
    lines.append(f"modified: {_when(info.modified_at)}")
    if info.created_at is not None:
        lines.append(f"created: {_when(info.created_at)}")
    return ToolResult.ok("\n".join(lines), info)


def _what(info: FileInfo) -> str:
    if info.kind == "directory":
        return f"directory, {count(info.entries or 0, 'entry', 'entries')}"
    if info.kind == "file":
        return f"file, {count(info.size_bytes, 'byte')}"
    if info.target_kind == "directory":
        return f"symlink to a directory, {count(info.entries or 0, 'entry', 'entries')}"
    if info.target_kind == "file":
        return f"symlink to a file, {count(info.size_bytes, 'byte')}"
    return "symlink that leads nowhere in the workspace"


class MkdirParams(ToolParams):
    """Arguments of ``mkdir``."""

    path: str = Field(description="Directory to make. " + PATH_HELP)


@dataclass(frozen=True, slots=True)
class MadeDirectory:
    """What ``mkdir`` did: the path, and how many directories it made (0: it existed)."""

    path: str
    created: int


def _missing(fs: Filesystem, path: str) -> list[str]:
    """The directories of ``path`` that do not exist yet, outermost first."""
    parts_ = [part for part in path.strip("/").split("/") if part not in ("", ".")]
    missing: list[str] = []
    for depth in range(len(parts_), 0, -1):
        prefix = "/".join(parts_[:depth])
        if fs.exists(prefix if not path.startswith("/") else "/" + prefix):
            break
        missing.append(prefix)
    return missing[::-1]


def mkdir(params: MkdirParams, *, context: ToolContext) -> ToolResult[MadeDirectory]:
    """Make a directory and any missing parents."""
    fs, path = context.workspace(), params.path
    try:
        missing = _missing(fs, path)
        fs.mkdir(path, parents=True, exist_ok=True)
        made = fs.stat(path).path
    except FileExistsError:
        return ToolResult.fail(
            f"Cannot make directory {quote(path)}: a file is there (or on the way there)."
        )
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("make directory", path, exc))
    result = MadeDirectory(made, len(missing))
    if not missing:
        return ToolResult.ok(f"{quote(made)} is already a directory; nothing was done.", result)
    more = len(missing) - 1
    also = f" (and {parts((more, 'parent directory', 'parent directories'))})" if more else ""
    return ToolResult.ok(f"Made directory {quote(made)}{also}.", result)


STAT = served(
    Tool(
        name="stat",
        description=(
            "Show what a path is: kind (file, directory, symlink and its target), size in "
            "bytes, permission mode, modification time, a directory's entry count, and whether "
            "a file is text (and its encoding) or binary, so you know which read tool to use."
        ),
        params=StatParams,
        handler=stat,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="File info"
        ),
    )
)

MKDIR = served(
    Tool(
        name="mkdir",
        description=(
            "Make a directory, with any missing parent directories. An existing directory "
            "is left as it is. (write_file makes parent directories by itself.)"
        ),
        params=MkdirParams,
        handler=mkdir,
        annotations=ToolAnnotations(
            read_only=False,
            destructive=False,
            idempotent=True,
            title="Make directory",
            changes_directories=True,
        ),
    )
)
