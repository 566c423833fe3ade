"""The typer application, its exit codes, and how a command finds its workspace."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from ..daemon import RemoteFilesystem

EXIT_OK = 0
EXIT_FAILED = 1
"""The operation failed; the error line says why."""
EXIT_USAGE = 2
"""Bad arguments (click's own code)."""
EXIT_NO_WORKSPACE = 3
"""No running workspace at that path, or its daemon does not answer."""
EXIT_PROBLEMS = 4
"""``doctor`` found something wrong (that ``--fix`` did not mend)."""
EXIT_MOUNTED_INSIDE = 5
"""``unmount``: something is mounted inside the workspace; nothing was unmounted."""
EXIT_CONTAINER = 125
"""``run``: the container could not be started (podman's own convention)."""

app = typer.Typer(
    name="workspacefs",
    help=(
        "Copy-on-write workspaces for agents: mount one, run containers on it, "
        "snapshot, diff, restore and persist it to git.\n\n"
        "Exit codes: 0 ok, 1 failed, 2 bad usage, 3 no workspace there, "
        "4 doctor found problems, 5 unmount refused: something is mounted inside; "
        "run passes the container's status (125: it did not start)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document.")]


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of errors.")] = False,
) -> None:
    """Options for every command (``--debug`` is accepted anywhere on the line)."""


def is_mountpoint(path: str) -> bool:
    """True if ``path`` is exactly the mount point of one of this user's workspaces:
    a running one, or one whose daemon died (the command then says so; its stale
    mount is no directory any more)."""
    from ..daemon import known_mounts
    from ..posix import canonical_mountpoint

    point = canonical_mountpoint(path)
    return any(
        known.record.mountpoint == point and (not known.alive or os.path.isdir(path))
        for known in known_mounts()
    )


def split_mountpoint(args: list[str], needed: int, most: int) -> tuple[str | None, list[str]]:
    """Tell an optional leading MOUNTPOINT from the ``needed``..``most`` other arguments.

    The first argument is the mount point when there is one argument too many,
    or when it is the mount point of a running workspace and enough remain. A
    running workspace's mount point followed by too few is an error that says
    so (not a snapshot or path of that name looked up in another workspace).
    """
    if len(args) > most:
        return args[0], args[1:]
    if args and is_mountpoint(args[0]):
        if len(args) > needed:
            return args[0], args[1:]
        raise typer.BadParameter(
            f"expected {needed} argument(s) after the mount point {args[0]}, got {len(args) - 1}"
        )
    if len(args) < needed:
        raise typer.BadParameter(f"expected at least {needed} argument(s) after the mount point")
    return None, args


def workspace(mountpoint: str | None) -> RemoteFilesystem:
    """The running workspace at ``mountpoint``, or the one containing the current directory."""
    from ..daemon import connect

    return connect(mountpoint if mountpoint is not None else os.getcwd())
