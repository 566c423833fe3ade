"""apply: hand a workspace's work back to the directory it was loaded from.

One concept for both front doors: ``workspacefs apply`` on a running
workspace (``mount --from DIR``), and ``workspacefs mcp --from DIR --apply``
when its in-memory workspace's server shuts down. Both write what changed
since the snapshot tagged ``from`` (taken when the directory was loaded) with
``host.apply_changes``, or print it as a patch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._app import JsonOption, app, split_mountpoint, workspace
from ._output import emit_json, stdout

if TYPE_CHECKING:
    from ..daemon import RemoteFilesystem
    from ..fs import Filesystem, FilesystemSnapshot, InMemoryFilesystem
    from ..host import ApplyResult

    Snapshots = InMemoryFilesystem | RemoteFilesystem
    """What apply reads: an in-memory workspace, or a daemon's client."""


def _since(fs: Snapshots, base: FilesystemSnapshot) -> tuple[Filesystem, Filesystem, list[str]]:
    """Views of ``base`` and of the state now (a new snapshot: one state is written),
    and the paths changed between them."""
    current = fs.snapshot(tag=None)
    changes = fs.diff(base, current)
    paths = sorted([*changes.added, *changes.modified, *changes.deleted])
    return fs.at(base), fs.at(current), paths


def handback(
    fs: Snapshots, base: FilesystemSnapshot, directory: str, *, dry_run: bool = False
) -> ApplyResult:
    """Write what ``fs`` changed since ``base`` into ``directory`` (``host.apply_changes``).

    Raises:
        ContentChangedError: ``directory`` changed paths the workspace changed too;
            nothing was written.
    """
    from ..host import apply_changes

    before, after, paths = _since(fs, base)
    return apply_changes(before, after, paths, directory, dry_run=dry_run)


def patch_since(fs: Snapshots, base: FilesystemSnapshot) -> Iterator[str]:
    """The changes since ``base`` as ``git diff`` prints them (``git apply`` takes them)."""
    from ..fs import FilesystemSource, patch_lines

    before, after, paths = _since(fs, base)
    return patch_lines(FilesystemSource(before), FilesystemSource(after), paths)


def summary(result: ApplyResult, *, dry_run: bool = False) -> str:
    """One line: what was (or would be) written where."""
    verb = "Would write" if dry_run else "Wrote"
    return (
        f"{verb} {len(result.written):,} and removed {len(result.deleted):,} paths in "
        f"{result.directory} ({len(result.unchanged):,} already as the workspace has them)"
    )


def write_patch(lines: Iterator[str], out: Any) -> None:
    """A patch to a binary stream; names that are not UTF-8 go out as their bytes."""
    for line in lines:
        out.write(line.encode("utf-8", "surrogateescape") + b"\n")


@app.command(
    epilog="Example: workspacefs mount ./ws --from ./project; (agents work in ./ws); "
    "workspacefs apply ./ws --to ./project"
)
def apply(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT]")] = None,
    to: Annotated[
        str,
        typer.Option("--to", metavar="DIR", help="The directory the workspace was loaded from."),
    ] = "",
    since: Annotated[
        str,
        typer.Option(
            "--since",
            metavar="SNAP",
            help="The state to hand back the changes since (default: `from`, the snapshot "
            "mount --from DIR takes of what it loaded).",
        ),
    ] = "from",
    patch: Annotated[
        bool, typer.Option("--patch", help="Print the changes as a patch; write nothing.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check and say what would be written.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Write the workspace's changes since it was loaded into DIR, in place.

    Every path the workspace changed must still hold in DIR what it held when
    the workspace was loaded; if DIR changed any of them meanwhile, nothing is
    written and those paths are named. Paths only DIR changed are kept.
    --patch prints the changes instead (for git apply)."""
    from ..fs import find_snapshot

    point, _ = split_mountpoint(args or [], 0, 0)
    if not to and not patch:
        raise typer.BadParameter("name the directory to write into with --to DIR (or --patch)")
    with workspace(point) as fs:
        base = find_snapshot(fs.snapshots(), since)
        if patch:
            sys.stdout.flush()
            write_patch(patch_since(fs, base), sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return
        result = handback(fs, base, os.path.abspath(to), dry_run=dry_run)
    if as_json:
        emit_json(
            {
                "directory": result.directory,
                "written": list(result.written),
                "deleted": list(result.deleted),
                "unchanged": list(result.unchanged),
                "dry_run": dry_run,
            }
        )
    else:
        stdout.print(summary(result, dry_run=dry_run))
