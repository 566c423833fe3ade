"""mcp: the agent tools over MCP (stdio), on a running workspace, a fresh in-memory
one (empty, or loaded ``--from`` a directory, ZIP or git snapshot as ``mount --from``
loads it), or a host directory in place (``--host``)."""

from __future__ import annotations

import functools
import os
import signal
import sys
import tempfile
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import EXIT_FAILED, app

if TYPE_CHECKING:
    from ..daemon import Source
    from ..fs import Filesystem, FilesystemSnapshot, InMemoryFilesystem
    from ..host import HostFilesystem
    from ..tools import ServedTools


def _refuse_mixed(mountpoint: str | None, source: str | None, host: str | None) -> None:
    """One workspace at a time: a running one, one loaded --from, or --host."""
    chosen = [
        name
        for name, value in (("MOUNTPOINT", mountpoint), ("--from", source), ("--host", host))
        if value is not None
    ]
    if len(chosen) > 1:
        raise typer.BadParameter(f"{' and '.join(chosen)} name two workspaces; give one")


def _handback(fs: InMemoryFilesystem, base: FilesystemSnapshot, directory: str) -> int:
    """``--apply``: write the session's work into ``directory``; if it changed underneath,
    keep the work as a patch file instead and say where."""
    from .._errors import ContentChangedError
    from ._apply import handback, patch_since, summary, write_patch

    # A client stops its server with SIGTERM a few seconds after closing stdin (the
    # SDK's: 2 s); a hand-back under way finishes rather than stopping half written.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        result = handback(fs, base, directory)
    except ContentChangedError as exc:
        handle, path = tempfile.mkstemp(prefix="workspacefs-", suffix=".patch")
        with os.fdopen(handle, "wb") as out:
            write_patch(patch_since(fs, base), out)
        print(
            f"workspacefs: error: not applied: {exc.strerror}: {exc.filename}; the changes "
            f"are kept in {path} (git apply takes it)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(f"workspacefs: {summary(result)}", file=sys.stderr)
    return 0


@app.command(
    epilog="Examples (in an MCP client's config): workspacefs mcp /home/me/ws; "
    "workspacefs mcp --from /home/me/project --apply; workspacefs mcp --host /home/me/project"
)
def mcp(
    mountpoint: Annotated[
        str | None,
        typer.Argument(help="A running workspace; default: a fresh in-memory one."),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="SOURCE",
            help="Load the fresh workspace from DIR, FILE.zip, REPO.git or REPO.git#REF, "
            "as mount --from does.",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            metavar="DIR",
            help="Work on DIR itself, in place (its snapshots are git commits kept outside it).",
        ),
    ] = None,
    handback: Annotated[
        bool,
        typer.Option(
            "--apply",
            help="With --from DIR: when the client disconnects, write the session's changes "
            "into DIR (as workspacefs apply does); if DIR changed them meanwhile, keep them "
            "as a patch file instead.",
        ),
    ] = False,
    mount_point: Annotated[
        str | None,
        typer.Option(
            "--mount-point",
            metavar="PATH",
            help="The absolute path agents see the workspace at (default: /workspace).",
        ),
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Refuse every write to the workspace.")
    ] = False,
    best_of: Annotated[
        bool,
        typer.Option(
            "--best-of",
            help="With a running workspace: also offer best_of, accept_attempt and "
            "drop_trial (several commands at once, each in a fork and a Podman container "
            "of its own, run by the workspace's daemon; one is merged).",
        ),
    ] = False,
    rewind: Annotated[
        bool | None,
        typer.Option(
            "--rewind/--no-rewind",
            help="Record every change-making call for history and rewind (the default, "
            "but with --host: there each recorded call commits DIR's whole state to its "
            "snapshot repository, tens of milliseconds a call).",
        ),
    ] = None,
) -> None:
    """Serve the agent tools (ls, read_file, edit_file, grep, snapshot, ...) over MCP on
    stdin/stdout, on a running workspace, a fresh in-memory one or a host directory."""
    _refuse_mixed(mountpoint, source, host)
    recording = rewind if rewind is not None else host is None
    if best_of and mountpoint is None:
        raise typer.BadParameter(
            "--best-of runs its containers in a running workspace's daemon: give its MOUNTPOINT"
        )
    if mountpoint is not None:
        _on_running(
            mountpoint,
            mount_point=mount_point,
            read_only=read_only,
            rewind=recording,
            best_of=best_of,
        )
        return
    import logging  # not for a running workspace: its daemon serves, and logs

    from ..daemon import LOADED_TAG, parse_source
    from ..tools import DeferredTools, serve_mcp_stdio

    loaded = parse_source(source)
    if handback and loaded.kind != "directory":
        raise typer.BadParameter("--apply writes back to the directory --from DIR names")
    made = _Made()
    if host is not None:
        from ..host import HostFilesystem

        point = mount_point or "/workspace"
        # Made here, so what cannot be served is said before anything is.
        made.directory = HostFilesystem(host, read_only=read_only, mount_point=point)
        make = functools.partial(_served, made.directory, recording)
    else:
        from ..fs import normalize_mount_point

        point = "/workspace" if mount_point is None else mount_point
        normalize_mount_point(point)  # refused now, as the workspace would refuse it
        make = functools.partial(made.memory_tools, loaded, point, read_only, recording)
    # The workspace and its tools are made while the session starts (DeferredTools).
    kind = "host" if host is not None else "memory"
    configuration = f"{kind}:read_only={read_only}:rewind={recording}"
    served = DeferredTools(make, configuration=configuration)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # stdout is the protocol
    try:
        serve_mcp_stdio(served)
        served.made()  # a workspace that could not be made fails the command
    finally:
        if made.directory is not None:
            made.directory.cleanup()
    memory = made.memory
    if handback and memory is not None and loaded.path is not None:
        base = next(s for s in memory.snapshots() if s.tag == LOADED_TAG)
        raise typer.Exit(_handback(memory, base, loaded.path))


def _served(fs: Filesystem, recording: bool) -> ServedTools:
    """The tools served on ``fs``, every call recorded if ``recording``."""
    from ..tools import ServedTools, filesystem_tools

    return ServedTools(fs, tools=None if recording else filesystem_tools(fs))


class _Made:
    """What the session's workspace was made of, for what follows it."""

    def __init__(self) -> None:
        self.memory: InMemoryFilesystem | None = None
        self.directory: HostFilesystem | None = None

    def memory_tools(
        self, loaded: Source, point: str, read_only: bool, recording: bool
    ) -> ServedTools:
        """A fresh in-memory workspace (loaded from ``loaded``, if it names anything)
        and its tools."""
        from ..daemon import load_source
        from ..fs import InMemoryFilesystem

        memory = load_source(loaded, point) if loaded.path is not None else None
        memory = self.memory = memory or InMemoryFilesystem(mount_point=point)
        fs = memory.at(memory.snapshot(tag=None)) if read_only else memory
        return _served(fs, recording)


def _on_running(
    mountpoint: str, *, mount_point: str | None, read_only: bool, rewind: bool, best_of: bool
) -> None:
    """Serve the running workspace at ``mountpoint``: the daemon serves the session on
    this process's stdin and stdout, its tools where its tree is (with ``best_of``, this
    process serves it, with the trial tools beside the others: each call one request)."""
    from ..daemon import connect, hand_over_stdio

    # A running workspace was shaped when it was mounted (`workspacefs mount --from,
    # --read-only`); these options cannot reshape it, so they are refused, not ignored.
    given = [
        name
        for name, value in (("--mount-point", mount_point is not None), ("--read-only", read_only))
        if value
    ]
    if given:
        raise typer.BadParameter(
            f"{', '.join(given)} shape a fresh workspace, not the running one at {mountpoint}"
        )
    with connect(mountpoint) as fs:
        if not best_of:
            hand_over_stdio(fs, rewind=rewind)
            return
        import logging

        from ..sandbox import trial_tools
        from ..tools import ServedTools, UndoableToolset, filesystem_tools, serve_mcp_stdio

        registry = filesystem_tools(fs, rewind=rewind)
        for tool in trial_tools(fs):
            registry.add(tool)
        tools = UndoableToolset(registry, fs) if rewind else registry
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # stdout is the protocol
        serve_mcp_stdio(ServedTools(fs, tools=tools))
