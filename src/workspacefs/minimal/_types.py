"""Seed 003's value types and its 8-method ``Filesystem`` protocol."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable


@dataclass(slots=True, frozen=True)
class FileEntry:
    """A file or directory, as ``list`` and ``glob`` report it."""

    path: str
    kind: Literal["file", "directory"]
    size_bytes: int | None = None


@dataclass(slots=True, frozen=True)
class FileContent:
    """A page of a text file, as ``read`` returns it."""

    path: str
    content: str
    total_lines: int
    offset: int
    limit: int


@dataclass(slots=True, frozen=True)
class GrepMatch:
    """One line ``grep`` found."""

    path: str
    line_number: int
    line_content: str


@runtime_checkable
class Filesystem(Protocol):
    """Seed 003's minimal filesystem interface for tool handlers: eight methods."""

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> FileContent:
        """Read file content. Raises FileNotFoundError if missing."""
        ...

    def write(self, path: str, content: str) -> int:
        """Write content to file. Creates parent directories. Returns bytes written."""
        ...

    def delete(self, path: str) -> int:
        """Delete file or directory recursively. Returns count of deleted entries."""
        ...

    def list(self, path: str = "") -> tuple[FileEntry, ...]:
        """List directory entries. Empty path means root."""
        ...

    def glob(self, pattern: str) -> tuple[FileEntry, ...]:
        """Find files matching glob pattern."""
        ...

    def grep(self, pattern: str, *, file_glob: str | None = None) -> tuple[GrepMatch, ...]:
        """Search file contents with regex."""
        ...

    def export_archive(self, path: Path) -> int:
        """Write current state to ZIP file. Returns file count."""
        ...

    def import_archive(self, path: Path) -> int:
        """Replace state from ZIP file. Returns file count."""
        ...
