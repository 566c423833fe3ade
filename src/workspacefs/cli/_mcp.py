"""mcp: the agent tools over MCP (stdio)."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from ._app import app


@app.command(epilog="Example (in an MCP client's config): workspacefs mcp /home/me/ws")
def mcp(
    mountpoint: Annotated[
        str | None,
        typer.Argument(help="A running workspace; default: a fresh in-memory one."),
    ] = None,
) -> None:
    """Serve the agent tools (ls, read_file, edit_file, grep, snapshot, ...) over MCP on
    stdin/stdout, on a running workspace or on a fresh in-memory one."""
    from ..daemon import connect
    from ..fs import Filesystem, InMemoryFilesystem
    from ..tools import serve_stdio

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # stdout is the protocol
    fs: Filesystem = connect(mountpoint) if mountpoint is not None else InMemoryFilesystem()
    serve_stdio(fs)
