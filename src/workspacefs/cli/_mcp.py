"""mcp: the agent tools over MCP (stdio)."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from ._app import app


@app.command(
    epilog="Examples (in an MCP client's config): workspacefs mcp /home/me/ws; "
    "workspacefs mcp --hydrate /home/me/project"
)
def mcp(
    mountpoint: Annotated[
        str | None,
        typer.Argument(help="A running workspace; default: a fresh in-memory one."),
    ] = None,
    hydrate: Annotated[
        list[str] | None,
        typer.Option(
            "--hydrate",
            metavar="DIR",
            help="Copy this host directory into the fresh workspace's root first (repeatable).",
        ),
    ] = None,
    mount_point: Annotated[
        str | None,
        typer.Option(
            "--mount-point",
            metavar="PATH",
            help="The absolute path agents see the fresh workspace at (default: /workspace).",
        ),
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Refuse every write to the fresh workspace.")
    ] = False,
) -> None:
    """Serve the agent tools (ls, read_file, edit_file, grep, snapshot, ...) over MCP on
    stdin/stdout, on a running workspace or on a fresh in-memory one."""
    from ..daemon import connect
    from ..fs import Filesystem, HostMount, InMemoryFilesystem
    from ..tools import serve_stdio

    fs: Filesystem
    if mountpoint is not None:
        # A running workspace was shaped when it was mounted (`workspacefs mount --from,
        # --read-only`); these options cannot reshape it, so they are refused, not ignored.
        given = [
            name
            for name, value in (
                ("--hydrate", hydrate),
                ("--mount-point", mount_point is not None),
                ("--read-only", read_only),
            )
            if value
        ]
        if given:
            raise typer.BadParameter(
                f"{', '.join(given)} shape a fresh in-memory workspace, not the running one "
                f"at {mountpoint}"
            )
        fs = connect(mountpoint)
    else:
        point = "/workspace" if mount_point is None else mount_point
        memory = InMemoryFilesystem(mount_point=point, read_only=read_only)
        for directory in hydrate or ():
            source = HostMount(directory, mount_path=".")
            memory.hydrate_from_host(source, allowed_roots=[directory])
        fs = memory
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # stdout is the protocol
    serve_stdio(fs)
