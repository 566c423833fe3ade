"""fork, forks, merge: forks served by the workspace's daemon beside it.

A fork lives in the daemon of its workspace (forks share memory only inside
one process) and is served by the same mount, at
``<mountpoint>/.forks/<name>``. ``fork MOUNTPOINT`` also binds it there
(``mount --bind``, root only); ``fork --drop`` and ``unmount`` of such a
path remove the binds and the fork.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from .._errors import BackendUnavailableError, InvalidArgumentError, NotPermittedError
from ._app import EXIT_FAILED, JsonOption, app, workspace
from ._output import emit_json, size, stdout

if TYPE_CHECKING:
    from ..daemon import RemoteFilesystem
    from ..fs import MergeReport, Side

FORKS_DIR = ".forks"

OfOption = Annotated[
    str | None,
    typer.Option(
        "--of",
        "--workspace",
        metavar="WORKSPACE",
        help="The workspace: its mount point or a path inside it (default: the one holding "
        "the current directory, else the only one running).",
    ),
]


# -- finding the workspace and the fork ----------------------------------------------------


def origin(of: str | None) -> RemoteFilesystem:
    """The workspace ``--of`` names, the one holding the current directory, or the only one."""
    from ..daemon import NoWorkspaceError, connect, running_mounts

    if of is not None:
        return workspace(of)
    try:
        return workspace(None)
    except NoWorkspaceError:
        running = running_mounts()
        if len(running) != 1:
            raise NoWorkspaceError(
                f"{len(running)} workspaces are running and none holds the current directory; "
                "name one with --of",
                os.getcwd(),
            ) from None
        return connect(running[0].socket)


@dataclass(frozen=True, slots=True)
class Bind:
    """A directory a fork is bound to (a mount whose root is ``/.forks/<name>``)."""

    point: str
    device: str  # major:minor of the workspace's FUSE connection
    name: str


def fork_binds() -> list[Bind]:
    """Every bind mount of a fork, from /proc/self/mountinfo."""
    from ..posix import mount_table

    return [
        Bind(entry.point, entry.device, entry.root.split("/")[2])
        for entry in mount_table()
        if entry.fs_type == "fuse.workspacefs" and entry.root.startswith(f"/{FORKS_DIR}/")
    ]


def _workspace_of_device(device: str) -> RemoteFilesystem:
    """The running workspace whose mount is the FUSE connection ``device``."""
    from ..daemon import NoWorkspaceError, connect, running_mounts

    for record in running_mounts():
        try:
            info = os.stat(record.mountpoint)
        except OSError:
            continue
        if f"{os.major(info.st_dev)}:{os.minor(info.st_dev)}" == device:
            return connect(record.socket)
    raise NoWorkspaceError("no running workspace serves this fork", device)


def resolve_fork(ref: str, of: str | None) -> tuple[RemoteFilesystem, str]:
    """(workspace, fork name) for FORK: a name, the fork's path under
    ``<mountpoint>/.forks/``, or a directory it is bound to."""
    if "/" not in ref and ref not in (".", ".."):
        return origin(of), ref
    from ..daemon import find_mount

    path = os.path.realpath(ref)
    for bind in fork_binds():
        if bind.point == path:
            return _workspace_of_device(bind.device), bind.name
    record = find_mount(path)
    parts = os.path.relpath(path, record.mountpoint).split(os.sep)
    if len(parts) != 2 or parts[0] != FORKS_DIR:
        raise InvalidArgumentError(f"not a fork: forks are at {record.mountpoint}/.forks/NAME", ref)
    return workspace(record.mountpoint), parts[1]


# -- binding ---------------------------------------------------------------------------------


def _bind(source: str, target: str) -> None:
    done = subprocess.run(["mount", "--bind", source, target], capture_output=True, text=True)
    if done.returncode != 0:
        raise BackendUnavailableError(f"mount --bind failed: {done.stderr.strip()}", target)


def _unbind(point: str) -> None:
    done = subprocess.run(["umount", point], capture_output=True, text=True)
    if done.returncode != 0:
        raise BackendUnavailableError(f"umount failed: {done.stderr.strip()}", point)


def _require_root(target: str, path: str | None) -> None:
    if os.geteuid() != 0:
        hint = f"; use the fork's own path instead: {path}" if path else ""
        raise NotPermittedError(f"binding a fork to a directory needs root{hint}", target)


def drop(fs: RemoteFilesystem, name: str) -> list[str]:
    """Unmount every bind of fork ``name`` of ``fs``, then drop the fork; the binds."""
    info = os.stat(fs.mountpoint)
    device = f"{os.major(info.st_dev)}:{os.minor(info.st_dev)}"
    points = [b.point for b in fork_binds() if b.device == device and b.name == name]
    for point in points:
        _unbind(point)
    fs.drop_fork(name)
    return points


def unmount_bound_fork(path: str) -> tuple[str, list[str]] | None:
    """If ``path`` is a directory a fork is bound to: unbind it and drop the fork;
    (the fork's name, the binds removed). None if it is no such directory."""
    real = os.path.realpath(path)
    bind = next((b for b in fork_binds() if b.point == real), None)
    if bind is None:
        return None
    with _workspace_of_device(bind.device) as fs:
        return bind.name, drop(fs, bind.name)


# -- commands --------------------------------------------------------------------------------


@app.command(
    epilog="Example: workspacefs fork --name experiment /srv/experiment   (then: workspacefs "
    "merge experiment; workspacefs fork --drop experiment)"
)
def fork(
    mountpoint: Annotated[
        str | None,
        typer.Argument(metavar="[MOUNTPOINT]", help="Also bind the fork here (root only)."),
    ] = None,
    source: Annotated[
        str | None, typer.Option("--from", metavar="SNAP", help="Fork this snapshot (tag or id).")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", "-n", help="Its name (default: fork-<n>).")
    ] = None,
    drop_name: Annotated[
        str | None,
        typer.Option("--drop", metavar="FORK", help="Drop this fork (and unbind it) instead."),
    ] = None,
    of: OfOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fork the workspace in O(1) in its daemon; print its path, <mountpoint>/.forks/NAME."""
    from ..fs import find_snapshot

    if drop_name is not None:
        if mountpoint or source or name:
            raise typer.BadParameter("--drop takes no other argument")
        fs, fork_name = resolve_fork(drop_name, of)
        with fs:
            points = drop(fs, fork_name)
        if as_json:
            emit_json({"dropped": fork_name, "unbound": points})
        else:
            stdout.print(f"Dropped fork {fork_name}" + "".join(f"; unbound {p}" for p in points))
        return
    if mountpoint is not None:
        _require_root(mountpoint, None)
        if not os.path.isdir(mountpoint):
            raise InvalidArgumentError("the bind target must be an existing directory", mountpoint)
    with origin(of) as fs:
        snapshot = find_snapshot(fs.snapshots(), source) if source is not None else None
        info = fs.fork(name, snapshot=snapshot)
        if mountpoint is not None:
            try:
                _bind(info.path, mountpoint)
            except BaseException:
                fs.drop_fork(info.name)
                raise
    bound = None if mountpoint is None else os.path.abspath(mountpoint)
    if as_json:
        emit_json({**info.to_dict(), "bound": bound})
        return
    print(info.path)  # alone on its line: path=$(workspacefs fork)
    if bound is not None:
        stdout.print(f"bound at {bound}")


@app.command(epilog="Example: workspacefs forks --of ./ws")
def forks(of: OfOption = None, as_json: JsonOption = False) -> None:
    """List the workspace's forks: name, path, files, bytes, paths changed since forked."""
    from rich.table import Table

    with origin(of) as fs:
        found = fs.forks()
        mountpoint = fs.mountpoint
    if as_json:
        emit_json([info.to_dict() for info in found])
        return
    if not found:
        stdout.print(f"No forks of {mountpoint}.")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("NAME", "PATH", "FILES", "BYTES", "CHANGED"):
        table.add_column(
            column, justify="right" if column in ("FILES", "BYTES", "CHANGED") else "left"
        )
    for info in found:
        table.add_row(
            info.name, info.path, f"{info.files:,}", size(info.bytes), f"{info.changed:,}"
        )
    stdout.print(table)


@app.command(
    epilog="Examples: workspacefs merge experiment --dry-run; workspacefs merge experiment "
    "--hold (then edit .forks/merge-1, and: workspacefs merge --continue [--take PATH=theirs], "
    "or workspacefs merge --abort)"
)
def merge(
    fork_ref: Annotated[
        str | None,
        typer.Argument(metavar="[FORK]", help="A fork's name, its path, or where it is bound."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only report.")] = False,
    markers: Annotated[
        bool, typer.Option("--markers", help="Print text conflicts with git's conflict markers.")
    ] = False,
    hold: Annotated[
        bool,
        typer.Option(
            "--hold",
            help="On conflicts, hold the merge open: its result in a fork "
            "(<mountpoint>/.forks/merge-<n>), text conflicts with markers, to resolve there.",
        ),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--continue",
            help="Finish the merge held open, all or nothing, once no path conflicts.",
        ),
    ] = False,
    take: Annotated[
        list[str] | None,
        typer.Option(
            "--take",
            metavar="PATH=SIDE",
            help="With --continue: take base, ours or theirs for a conflicting PATH (repeatable).",
        ),
    ] = None,
    abort: Annotated[
        bool, typer.Option("--abort", help="Drop the merge held open; the workspace is as before.")
    ] = False,
    status: Annotated[
        bool, typer.Option("--status", help="Show the merge held open, conflict by conflict.")
    ] = False,
    of: OfOption = None,
    as_json: JsonOption = False,
) -> None:
    """Merge a fork into its workspace, three-way: all or nothing, a snapshot before.

    Conflicts are printed per path and exit with status 1, changing nothing;
    with --hold the merge stays open in a fork until --continue or --abort.
    """
    steps = [
        name
        for name, on in (("--continue", resume), ("--abort", abort), ("--status", status))
        if on
    ]
    if len(steps) > 1 or (steps and (fork_ref or dry_run or markers or hold)):
        raise typer.BadParameter(f"{' and '.join(steps)} take(s) no FORK or merge option")
    if take and not resume:
        raise typer.BadParameter("--take goes with --continue")
    if not steps and fork_ref is None:
        raise typer.BadParameter("name the FORK to merge (or --continue, --abort, --status)")
    if steps:
        _held_step(steps[0], _sides(take or []), of, as_json=as_json)
        return
    assert fork_ref is not None
    _merge_fork(fork_ref, of, dry_run=dry_run, markers=markers, hold=hold, as_json=as_json)


def _sides(take: list[str]) -> dict[str, Side]:
    """``--take PATH=SIDE`` values as path -> side."""
    from ..fs import SIDES

    chosen: dict[str, Side] = {}
    for item in take:
        path, _, side = item.rpartition("=")
        if not path or side not in SIDES:
            raise typer.BadParameter(
                f"--take {item!r}: expected PATH=base, PATH=ours or PATH=theirs"
            )
        chosen[path] = side
    return chosen


def _merge_fork(
    fork_ref: str, of: str | None, *, dry_run: bool, markers: bool, hold: bool, as_json: bool
) -> None:
    from ..fs import MergeReport, to_json

    fs, name = resolve_fork(fork_ref, of)
    with fs:
        report = fs.merge_fork(name, dry_run=dry_run, markers=markers, hold=hold)
        mountpoint = fs.mountpoint
    if as_json:
        emit_json({"fork": name, **to_json(report, MergeReport)})
    else:
        _print_merge(report, name, mountpoint, dry_run=dry_run)
    if report.conflicts:
        raise typer.Exit(EXIT_FAILED)


def _held_step(step: str, choose: dict[str, Side], of: str | None, *, as_json: bool) -> None:
    """--continue, --abort or --status of the merge held open in the workspace."""
    from ..fs import HeldMerge, MergeReport, held_lines, to_json

    with origin(of) as fs:
        mountpoint = fs.mountpoint
        if step == "--status":
            held = fs.merge_status()
            if as_json:
                emit_json(to_json(held, HeldMerge | None))
            elif held is None:
                stdout.print(f"No merge is held open in {mountpoint}.")
            else:
                print("\n".join(held_lines(held)))
            return
        if step == "--abort":
            fs.abort_merge()
            if as_json:
                emit_json({"aborted": True})
            else:
                stdout.print(f"Aborted the merge held open in {mountpoint}; nothing changed.")
            return
        report = fs.continue_merge(choose=choose or None)
    if as_json:
        emit_json(to_json(report, MergeReport))
        return
    _print_applied(report, f"Merged the merge held open into {mountpoint}")


def _print_merge(report: MergeReport, fork: str, mountpoint: str, *, dry_run: bool) -> None:
    from ..fs import conflict_lines

    for conflict in report.conflicts:
        print(f"CONFLICT ({conflict.kind}): {conflict.path}")
        if conflict.markers is not None:
            text = conflict.markers.decode("utf-8", "replace")
            print(text, end="" if text.endswith("\n") else "\n")
        for line in conflict_lines(conflict, hunks=False)[1:]:  # the sides
            print(line)
    held = report.held
    if held is not None:
        print(
            f"{len(report.conflicts)} conflict(s): the merge of fork {fork} is held open in "
            f"{held.path or held.fork}; resolve them there (text conflicts carry markers), then "
            "workspacefs merge --continue [--take PATH=base|ours|theirs], or --abort",
            flush=True,
        )
        return
    if report.conflicts:
        print(
            f"{len(report.conflicts)} conflict(s): nothing merged from fork {fork}",
            flush=True,
        )
        return
    verb = "Would merge" if dry_run else "Merged"
    _print_applied(report, f"{verb} fork {fork} into {mountpoint}")


def _print_applied(report: MergeReport, head: str) -> None:
    from ..fs import snapshot_label

    stdout.print(f"{head}: {len(report.changed)} path(s) changed")
    for path in report.changed:
        print(f"\t{path}")
    if report.snapshot is not None:
        stdout.print(f"Snapshot before the merge: {snapshot_label(report.snapshot)}")
