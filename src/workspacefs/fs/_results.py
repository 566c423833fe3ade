"""The value objects the protocol returns: frozen, slotted, comparable."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

WriteMode = Literal["create", "overwrite", "append"]
"""``create`` fails if the file exists; ``overwrite`` replaces; ``append`` adds."""


@dataclass(frozen=True, slots=True)
class FileStat:
    """Metadata of a file, directory or symlink (symlinks are not followed)."""

    path: str
    is_file: bool
    is_directory: bool
    size_bytes: int
    created_at: datetime | None
    modified_at: datetime | None
    is_symlink: bool = False
    mode: int = 0


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One entry of a directory listing."""

    name: str
    path: str
    is_file: bool
    is_directory: bool
    is_symlink: bool = False


@dataclass(frozen=True, slots=True)
class GlobMatch:
    """A path matched by a glob pattern."""

    path: str
    is_file: bool


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """The first match on one line; offsets are characters within ``line_content``."""

    path: str
    line_number: int
    line_content: str
    match_start: int
    match_end: int


def _lines_of(content: str) -> tuple[str, ...]:
    """The lines of ``content`` split at ``\\n``, without it (a final one ends the last line)."""
    lines = content.split("\n")
    if not lines[-1]:
        lines.pop()
    return tuple(lines)


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A page of lines of a text file.

    ``offset`` and ``limit`` are in lines; ``truncated`` says more lines follow.
    ``lines`` is ``content`` split into its lines, without their ``\\n`` (a
    ``\\r`` before it stays): the read splits the file anyway, so a caller that
    works line by line (numbering, say) need not split the page again. Left
    out, it is split from ``content``; it takes no part in comparisons.
    """

    content: str
    path: str
    total_lines: int
    offset: int
    limit: int
    truncated: bool
    lines: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.content and not self.lines:
            object.__setattr__(self, "lines", _lines_of(self.content))


@dataclass(frozen=True, slots=True)
class ReadBytesResult:
    """A byte range of a file; ``truncated`` says more bytes follow."""

    content: bytes
    path: str
    size_bytes: int
    offset: int
    limit: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did."""

    path: str
    bytes_written: int
    mode: WriteMode
