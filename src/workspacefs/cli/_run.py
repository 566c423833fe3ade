"""run: the main job in one line."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Annotated

import typer

from ._app import EXIT_CONTAINER, app, is_mountpoint
from ._output import stderr, working


@app.command(
    context_settings={"allow_interspersed_args": False},
    epilog="Example: workspacefs run --from ./src -- python3 -m pytest -q",
)
def run(
    command: Annotated[list[str], typer.Argument(metavar="-- COMMAND...")],
    image: Annotated[str | None, typer.Option("--image", help="Container image.")] = None,
    rootfs: Annotated[
        str | None,
        typer.Option(
            "--rootfs",
            help="Root directory, through an overlay (default: the host's /, its own state "
            "hidden).",
        ),
    ] = None,
    memory: Annotated[
        str, typer.Option("--memory", help="The container's memory limit (swap off).")
    ] = "2g",
    source: Annotated[
        str | None, typer.Option("--from", help="Start from DIR, FILE.zip or REPO.git[#REF].")
    ] = None,
    mountpoint: Annotated[
        str | None,
        typer.Option("--mountpoint", "-m", help="Use (or mount) this one; default: a new one."),
    ] = None,
) -> None:
    """Run COMMAND in a Podman container on a workspace at /workspace, and leave the
    workspace mounted for inspection (diff, log, unmount). Exits with COMMAND's status.

    The container has the sandbox's defaults (docs/sandbox.md): no network, no new
    privileges, memory, CPU and process limits, and the host's own state (home
    directories, /tmp, services' data, /etc/shadow) hidden from its overlay of /."""
    from ..daemon import connect, start
    from ..fs import short_id
    from ..sandbox import run_command

    if image is not None and rootfs is not None:
        raise typer.BadParameter("give --image or --rootfs, not both")
    if mountpoint is None:
        mountpoint = tempfile.mkdtemp(prefix="workspacefs-run-")
    if not is_mountpoint(mountpoint):
        if not os.path.isdir(mountpoint):
            os.makedirs(mountpoint)
        with working(f"mounting {mountpoint}"):
            start(mountpoint, source=source)
    elif source is not None:
        raise typer.BadParameter(f"{mountpoint} is mounted already; --from applies to new ones")
    with connect(mountpoint) as fs:
        before = fs.snapshot(tag=None)
        try:
            status = run_command(
                fs.mountpoint,
                command,
                terminal=sys.stdin.isatty(),
                image=image,
                rootfs=rootfs,
                memory=memory,
            )
        except OSError as exc:
            stderr.print(f"workspacefs: error: {exc}")
            raise typer.Exit(EXIT_CONTAINER) from exc
        changes = fs.diff(before)
        counts = (len(changes.added), len(changes.modified), len(changes.deleted))
        stderr.print(
            f"workspacefs: exit status {status}; {counts[0]} added, {counts[1]} modified, "
            f"{counts[2]} deleted since snapshot {short_id(before.snapshot_id)}; "
            f"the workspace stays mounted at {fs.mountpoint}"
        )
    raise typer.Exit(status)
