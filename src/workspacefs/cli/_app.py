"""The typer application, its exit codes, and how a command finds its workspace."""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_command_name

if TYPE_CHECKING:
    from typer._click import Command  # typer vendors click

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

COMMANDS: dict[str, str] = {
    "apply": "._apply",
    "rules": "._rules",
    "denials": "._rules",
    "blame": "._blame",
    "debug": "._debug",
    "doctor": "._doctor",
    "fork": "._forks",
    "forks": "._forks",
    "merge": "._forks",
    "mcp": "._mcp",
    "snapshot": "._snapshots",
    "restore": "._snapshots",
    "diff": "._snapshots",
    "log": "._snapshots",
    "prune": "._snapshots",
    "mount": "._mounts",
    "unmount": "._mounts",
    "list": "._mounts",
    "discard": "._mounts",
    "status": "._mounts",
    "history": "._rewind",
    "rewind": "._rewind",
    "run": "._run",
    "persist": "._storage",
    "push": "._storage",
    "fetch": "._storage",
    "export": "._storage",
    "import": "._storage",
    "try": "._try",
    "watch": "._watch",
}
"""Every command, in the order help lists them, and the module that defines it (with
``@app.command``): a command line loads and builds its own command alone, as git's
``commands[]`` table runs one builtin (tests/daemon/test_cli_imports.py checks the
table against what the modules define)."""


class _Commands(MutableMapping[str, "Command"]):
    """The commands of ``app`` by name, each built the first time it is looked up: the
    names (for help, usage errors and their suggestions) are ``COMMANDS``'s."""

    def __init__(self, built: MutableMapping[str, Command]) -> None:
        self._built = dict(built)

    def __getitem__(self, name: str) -> Command:
        command = self._built.get(name)
        if command is None:
            if name not in COMMANDS:
                raise KeyError(name)
            command = self._built[name] = _build(name)
        return command

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self._built if name not in COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS.keys() | self._built.keys())

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self._built


def _build(name: str) -> Command:
    """Import the module of command ``name`` and build that command (typer builds every
    registered command when the application is called: this builds none until needed)."""
    import_module(COMMANDS[name], __package__)
    for info in app.registered_commands:
        assert info.callback is not None, "a command has a function"
        if (info.name or get_command_name(info.callback.__name__)) == name:
            return get_command_from_info(
                info,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
            )
    raise AssertionError(f"{COMMANDS[name]} defines no command {name!r}")


class _LazyGroup(TyperGroup):
    """The ``workspacefs`` group: its commands are ``_Commands``."""

    def __init__(self, *, commands: Any = None, **options: Any) -> None:
        # TyperGroup keeps any mapping as it is (it declares a dict).
        super().__init__(commands=_Commands(commands or {}), **options)  # type: ignore[arg-type]


app = typer.Typer(
    name="workspacefs",
    cls=_LazyGroup,
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
