"""An MCP server that answers before its workspace and tools are made.

A client starts a server and waits for its list of tools; the workspace (a
``--from`` tree read into memory) and the tools (their pydantic models) are
most of what a Python server does before it can answer. ``DeferredTools``
makes them in a thread of its own while the session starts: the handshake is
answered at once, and the list too when the listing of the same server made
from the same code is on disk (``$XDG_CACHE_HOME/workspacefs``, written after
the first start, keyed by the server's configuration and the size and time of
every file of this package and of pydantic: an edit makes it anew). A call
waits until the tools are made.

Standard library only: it is what a server loads before its first answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from ._mcp_session import INSTRUCTIONS, ToolService, server_version
from ._stdio import Json

log = logging.getLogger(__name__)

CACHE_ENTRIES = 16
"""Configurations whose listing is kept."""


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "workspacefs", "mcp-listing.json")


def _tree_stamp(root: str, out: list[str]) -> None:
    """Each ``.py`` file below ``root``: its path, size and modification time."""
    for top, directories, files in os.walk(root):
        directories[:] = [d for d in directories if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                found = os.stat(os.path.join(top, name))
                out.append(f"{top}/{name}:{found.st_size}:{found.st_mtime_ns}")


def code_stamp() -> str:
    """What the listing is made of: this package's code and pydantic's, and Python."""
    parts = [sys.version]
    _tree_stamp(os.path.dirname(os.path.dirname(__file__)), parts)
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "pydantic")
        if os.path.isdir(candidate):
            _tree_stamp(candidate, parts)
            break
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


class DeferredTools:
    """The tools ``make`` returns, made in a thread of their own (an ``_mcp_session``
    ``ToolService``; see the module docstring).

    Args:
        make: Makes the served tools (a ``ServedTools``).
        configuration: What besides the code decides the tools listed (which
            workspace, read-only or not, recorded or not): with the code, the key of
            the listing kept on disk.
        name: The server name clients see.
    """

    def __init__(
        self, make: Callable[[], ToolService], *, configuration: str, name: str = "workspacefs"
    ) -> None:
        self._make = make
        self._name = name
        self._key = f"{configuration}:{code_stamp()}"
        self._kept = self._read()
        self._made: ToolService | None = None
        self._failure: BaseException | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._build, name="tools", daemon=True).start()

    def _build(self) -> None:
        try:
            self._made = self._make()
        except BaseException as exc:  # reported to each call, and by ``made``
            self._failure = exc
            return
        finally:
            self._ready.set()
        made = self._made
        entry = {"version": made.version, "listing": made.listing()}
        if entry != self._kept:
            self._write(entry)

    def made(self) -> ToolService:
        """The tools, once made.

        Raises:
            BaseException: What making them raised.
        """
        self._ready.wait()
        if self._failure is not None:
            raise self._failure
        assert self._made is not None
        return self._made

    @property
    def name(self) -> str:
        """The server name clients see."""
        return self._name

    @property
    def version(self) -> str:
        """This package's version."""
        if self._kept is not None:
            return str(self._kept["version"])
        return server_version()

    @property
    def instructions(self) -> str:
        """What the client's model is told about the tools."""
        return INSTRUCTIONS

    def listing(self) -> list[Json]:
        """The tools as ``tools/list`` lists them: kept on disk, or once made."""
        if self._kept is not None:
            listing: list[Json] = self._kept["listing"]
            return listing
        return self.made().listing()

    def call(
        self, name: str, arguments: Json | None, meta: Json | None, request_id: int | str
    ) -> Json:
        """Run a tool once the tools are made; its ``tools/call`` result."""
        try:
            made = self.made()
        except Exception as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            text = f"The workspace could not be made, so no tool can run: {why}."
            return {"content": [{"type": "text", "text": text}], "isError": True}
        return made.call(name, arguments, meta, request_id)

    def _read(self) -> Json | None:
        entry = _entries(_cache_file()).get(self._key)
        if not isinstance(entry, dict) or not isinstance(entry.get("listing"), list):
            return None
        return entry

    def _write(self, entry: Json) -> None:
        """Keep ``entry`` for this key (and the newest others), replacing the file whole.
        A cache that cannot be written only costs the next start its speed."""
        path = _cache_file()
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            entries = _entries(path)
            entries.pop(self._key, None)
            entries[self._key] = entry
            entries = dict(list(entries.items())[-CACHE_ENTRIES:])
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".mcp-listing-")
        except OSError as exc:
            log.debug("the tool listing was not kept: %s", exc)
            return
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(entries, out)
            os.replace(temporary, path)
        except OSError as exc:
            log.debug("the tool listing was not kept: %s", exc)
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _entries(path: Path) -> Json:
    """The listings kept in ``path`` by key (none if it is missing or unreadable)."""
    try:
        with open(path, encoding="utf-8") as kept:
            entries = json.load(kept)
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}
