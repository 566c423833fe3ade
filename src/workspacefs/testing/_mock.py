"""``MockFilesystem``: a test double for tool handlers, as the seeds describe it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..fs import InMemoryFilesystem, ReadResult, WriteMode, WriteResult


class MockFilesystem(InMemoryFilesystem):
    """An in-memory workspace holding the files given, that records what is read and
    written: ``read_calls`` (paths) and ``write_calls`` ((path, content) pairs).

    Every other verb is the real one, so a handler tested against it behaves as
    against any backend (no hand-written answers to drift from the protocol).

    Args:
        files: Path -> text or bytes, present from the start (not recorded).
        **options: ``InMemoryFilesystem``'s arguments (``read_only``, ``limits``, ...).
    """

    def __init__(self, files: Mapping[str, str | bytes] | None = None, **options: Any) -> None:
        # Read-only applies after the files are in (either spelling).
        read_only = bool(options.pop("read_only", False) or options.pop("_read_only", False))
        super().__init__(**options)
        for path, content in (files or {}).items():
            data = content if isinstance(content, bytes) else content.encode("utf-8")
            self.write_bytes(path, data)
        self._read_only = read_only
        self.read_calls: list[str] = []
        self.write_calls: list[tuple[str, str]] = []

    def read(
        self, path: str, *, offset: int = 0, limit: int | None = None, encoding: str = "utf-8"
    ) -> ReadResult:
        """Record ``path``, then read (see ``Filesystem.read``)."""
        self.read_calls.append(path)
        return super().read(path, offset=offset, limit=limit, encoding=encoding)

    def write(
        self,
        path: str,
        content: str,
        *,
        mode: WriteMode = "overwrite",
        create_parents: bool = True,
        if_match: str | None = None,
    ) -> WriteResult:
        """Record ``(path, content)``, then write (see ``Filesystem.write``)."""
        self.write_calls.append((path, content))
        return super().write(
            path, content, mode=mode, create_parents=create_parents, if_match=if_match
        )
