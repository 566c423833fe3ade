"""persist, push, fetch, export, import."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import JsonOption, app, split_mountpoint, workspace
from ._output import emit_json, stdout, working
from ._snapshots import size_option

if TYPE_CHECKING:
    from ..fs import TransferResult


@app.command(epilog="Example: workspacefs persist ./ws --tag reviewed --remote ../backup.git")
def persist(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT]")] = None,
    tag: Annotated[str | None, typer.Option("--tag", "-t", help="Tag the new snapshot.")] = None,
    snapshot: Annotated[
        str | None, typer.Option("--snapshot", "-s", help="Persist this snapshot, not a new one.")
    ] = None,
    remote: Annotated[
        str | None, typer.Option("--remote", metavar="URL", help="Then push to this git remote.")
    ] = None,
    max_file_size: Annotated[
        str | None,
        typer.Option(
            "--max-file-size",
            metavar="SIZE",
            help="Refuse files larger than this (e.g. 8G; default: the workspace's memory "
            "budget). Git stores a sparse file at its full size.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Snapshot the workspace and write it to its git repository (incremental)."""
    from ..fs import find_snapshot, snapshot_label, to_json

    point, _ = split_mountpoint(args or [], 0, 0)
    limit = None if max_file_size is None else size_option(max_file_size, "--max-file-size")
    with workspace(point) as fs:
        record = None if snapshot is None else find_snapshot(fs.snapshots(), snapshot)
        with working("persisting", quiet=as_json):
            result = fs.persist(record, tag=tag, remote=remote, max_file_bytes=limit)
    if as_json:
        emit_json(to_json(result))
        return
    stdout.print(
        f"Persisted {snapshot_label(result.snapshot)} as {result.ref} "
        f"(commit {result.commit[:12]}, {result.objects_written} objects) in {result.repository}"
    )
    stdout.print(
        f"Receipt: {result.snapshot.file_count:,} files, {result.snapshot.total_bytes:,} bytes, "
        f"tree {result.tree}"
    )
    if result.pushed:
        stdout.print(f"Pushed to {result.pushed.url}")
        _report(result.pushed, "the remote")


def _remote(verb: str, args: list[str], as_json: bool) -> None:
    from ..fs import to_json

    point, rest = split_mountpoint(args, 1, 1)
    with workspace(point) as fs:
        with working(f"{verb} {rest[0]}", quiet=as_json):
            result = (fs.push if verb == "push" else fs.fetch)(rest[0])
        repository = fs.info()["repository"]
    if as_json:
        emit_json({"repository": repository, **to_json(result)})
        return
    where = f"to {rest[0]} from {repository}" if verb == "push" else f"{repository} from {rest[0]}"
    stdout.print(f"{'Pushed' if verb == 'push' else 'Fetched'} {where}")
    _report(result, "the remote" if verb == "push" else "the repository")


def _report(result: TransferResult, receiving: str) -> None:
    """What moved, what took a new number, and what was refused (each with why)."""
    stdout.print(
        f"{len(result.written):,} refs written, {result.unchanged:,} already there, "
        f"{len(result.refused):,} refused (nothing {receiving} kept was replaced)"
    )
    for write in result.written:
        if write.name != write.source:
            stdout.print(f"  {_short(write.source)} -> {_short(write.name)} (the number was taken)")
    for refusal in result.refused:
        stdout.print(f"  {_short(refusal.name)} refused: {refusal.reason}")


def _short(ref: str) -> str:
    """``snapshots/3`` for ``refs/workspacefs/<workspace>/snapshots/3``."""
    parts = ref.split("/")
    return "/".join(parts[3:]) if ref.startswith("refs/workspacefs/") and len(parts) > 4 else ref


@app.command(epilog="Example: workspacefs push ./ws ssh://host/backup.git")
def push(
    args: Annotated[list[str], typer.Argument(metavar="[MOUNTPOINT] URL")],
    as_json: JsonOption = False,
) -> None:
    """Push the workspace's persisted snapshots to a git remote."""
    _remote("push", args, as_json)


@app.command(epilog="Example: workspacefs fetch ./ws ssh://host/backup.git")
def fetch(
    args: Annotated[list[str], typer.Argument(metavar="[MOUNTPOINT] URL")],
    as_json: JsonOption = False,
) -> None:
    """Fetch the workspace's persisted snapshots from a git remote into its repository."""
    _remote("fetch", args, as_json)


@app.command(name="export", epilog="Example: workspacefs export ./ws ws.zip --snapshot before")
def export_(
    args: Annotated[list[str], typer.Argument(metavar="[MOUNTPOINT] FILE.zip")],
    snapshot: Annotated[
        str | None, typer.Option("--snapshot", "-s", help="Export this snapshot, not the live one.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Write the workspace (or a snapshot) as a ZIP archive."""
    from ..fs import find_snapshot

    point, rest = split_mountpoint(args, 1, 1)
    path = os.path.abspath(rest[0])
    with workspace(point) as fs:
        source = fs if snapshot is None else fs.at(find_snapshot(fs.snapshots(), snapshot))
        with working(f"exporting to {path}", quiet=as_json):
            files = source.export_archive(path)
    if as_json:
        emit_json({"path": path, "files": files})
    else:
        stdout.print(f"Exported {files:,} files to {path}")


@app.command(name="import", epilog="Example: workspacefs import ./ws ws.zip")
def import_(
    args: Annotated[list[str], typer.Argument(metavar="[MOUNTPOINT] FILE.zip")],
    as_json: JsonOption = False,
) -> None:
    """Replace the workspace's content with a ZIP archive (all or nothing)."""
    point, rest = split_mountpoint(args, 1, 1)
    path = os.path.abspath(rest[0])
    with workspace(point) as fs, working(f"importing {path}", quiet=as_json):
        files = fs.import_archive(path)
    if as_json:
        emit_json({"path": path, "files": files})
    else:
        stdout.print(f"Imported {files:,} files from {path}")
