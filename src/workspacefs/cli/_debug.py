"""debug: the web UI on an archive, a session dump, a git repository or a running mount."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import app
from ._output import stdout


@app.command(
    epilog="Examples: workspacefs debug session.fs.zip --open; workspacefs debug /home/me/ws"
)
def debug(
    target: Annotated[
        str,
        typer.Argument(
            help="A session dump (.jsonl), a workspace archive (.fs.zip), a directory of "
            "archives or checkpoints, a git repository of persisted workspaces, or the "
            "mount point of a running workspace."
        ),
    ],
    # None stands for the debug server's own default, which is not imported here: the
    # web stack loads only when this command runs.
    port: Annotated[int | None, typer.Option(help="TCP port (0: any free; default: 8765).")] = None,
    host: Annotated[
        str,
        typer.Option(
            help="Address to bind: a loopback one (127.0.0.1, ::1, localhost) unless --expose."
        ),
    ] = "127.0.0.1",
    expose: Annotated[
        bool,
        typer.Option(
            "--expose",
            help="Allow --host to be an address other machines reach (0.0.0.0, a LAN "
            "address): whoever reaches it with the printed URL, whose token travels "
            "unencrypted over HTTP, reads every file of the workspace, whatever its "
            "mode, and the command lines of its history.",
        ),
    ] = False,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page.")] = False,
    workspace: Annotated[
        str | None, typer.Option(help="Which workspace of a git repository.")
    ] = None,
    filesystem: Annotated[
        str | None, typer.Option(help="Which filesystem of session checkpoints.")
    ] = None,
) -> None:
    """Browse snapshots, trees, files and diffs in a browser, until Ctrl-C.

    Each run makes a secret and prints the page's URL with it (?token=...): the
    server answers nothing without it.
    """
    from ..daemon import connect
    from ..debug import DEFAULT_PORT, check_exposure, open_target, serve

    check_exposure(host, expose)  # before reading the target
    opened = open_target(target, workspace=workspace, filesystem=filesystem, connect=connect)

    def ready(url: str) -> None:
        stdout.print(f"Serving {target} at {url} (Ctrl-C stops)")

    try:
        serve(
            opened,
            host=host,
            port=DEFAULT_PORT if port is None else port,
            open_browser=open_browser,
            ready=ready,
            expose=expose,
        )
    finally:
        opened.close()
