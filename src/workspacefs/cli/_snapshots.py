"""snapshot, restore, diff, log, prune."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._errors import InvalidArgumentError
from ._app import JsonOption, app, split_mountpoint, workspace
from ._history import changes_json, print_files
from ._output import emit_json, say, size, stdout

if TYPE_CHECKING:
    from ..fs import SpaceUsage


@app.command(epilog="Example: workspacefs snapshot ./ws --tag before-refactor")
def snapshot(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT]")] = None,
    tag: Annotated[str | None, typer.Option("--tag", "-t", help="Name it.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Take an O(1) snapshot of the live workspace."""
    from ..fs import snapshot_label

    point, _ = split_mountpoint(args or [], 0, 0)
    with workspace(point) as fs:
        record = fs.snapshot(tag=tag)
    if as_json:
        emit_json(record.to_dict())
    else:
        say(
            f"Snapshot {snapshot_label(record)}: {record.file_count:,} files, "
            f"{size(record.total_bytes)}"
        )


@app.command(epilog="Example: workspacefs restore ./ws before-refactor")
def restore(
    args: Annotated[list[str], typer.Argument(metavar="[MOUNTPOINT] SNAPSHOT")],
    as_json: JsonOption = False,
) -> None:
    """Return the workspace to a snapshot (by tag, id or id prefix); the mount shows it at once."""
    from ..fs import find_snapshot, snapshot_label

    point, rest = split_mountpoint(args, 1, 1)
    with workspace(point) as fs:
        record = find_snapshot(fs.snapshots(), rest[0])
        fs.restore(record)
    if as_json:
        emit_json(record.to_dict())
    else:
        say(f"Restored {snapshot_label(record)}")


def _write_lines(lines: Iterable[str]) -> None:
    """Print a patch as it is made; names that are not UTF-8 go out as their bytes."""
    sys.stdout.flush()
    out = sys.stdout.buffer
    for line in lines:
        out.write(line.encode("utf-8", "surrogateescape") + b"\n")
    out.flush()


@app.command(epilog="Example: workspacefs diff ./ws before-refactor --patch")
def diff(
    args: Annotated[list[str], typer.Argument(metavar="[MOUNTPOINT] BASE [TARGET]")],
    patch: Annotated[bool, typer.Option("--patch", "-p", help="Print a unified diff.")] = False,
    as_json: JsonOption = False,
) -> None:
    """What changed from snapshot BASE to TARGET (default: the live workspace)."""
    from ..fs import FilesystemSource, find_snapshot, patch_lines

    point, rest = split_mountpoint(args, 1, 2)
    with workspace(point) as fs:
        records = fs.snapshots()
        base = find_snapshot(records, rest[0])
        target = find_snapshot(records, rest[1]) if len(rest) > 1 else None
        changes = fs.diff(base, target)
        lines: Iterator[str] | None = None
        if patch:
            after = fs if target is None else fs.at(target)
            paths = sorted([*changes.added, *changes.modified, *changes.deleted])
            # Made file by file while it is printed: a file over PATCH_TEXT_LIMIT is
            # named with its sizes, never read, so memory stays bounded.
            lines = patch_lines(FilesystemSource(fs.at(base)), FilesystemSource(after), paths)
        if as_json:
            result: dict[str, Any] = {
                "base": str(base.snapshot_id),
                "target": None if target is None else str(target.snapshot_id),
                "added": list(changes.added),
                "modified": list(changes.modified),
                "deleted": list(changes.deleted),
                "unchanged_count": changes.unchanged_count,
            }
            if lines is not None:
                result["patch"] = "".join(line + "\n" for line in lines)
            emit_json(result)
        elif lines is not None:
            _write_lines(lines)
        else:
            for mark, names in (
                ("A", changes.added),
                ("M", changes.modified),
                ("D", changes.deleted),
            ):
                for name in names:
                    print(f"{mark}\t{name}")


@app.command(epilog="Example: workspacefs log ./ws --space")
def log(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT]")] = None,
    space: Annotated[
        bool,
        typer.Option(
            "--space",
            help="Also the memory each snapshot shares with others and holds alone "
            "(what deleting it frees); costs a pass over the workspace.",
        ),
    ] = False,
    files: Annotated[
        bool, typer.Option("--files", help="Each snapshot's changed files and who changed them.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List the workspace's snapshots: id, tag, parent, time, files, bytes (* = current)."""
    from ..fs import short_id

    point, _ = split_mountpoint(args or [], 0, 0)
    with workspace(point) as fs:
        records = fs.snapshots()
        current = fs.current_snapshot_id
        usage = fs.space_usage() if space else None
        if files and not as_json:
            print_files(fs, records, current)
            if usage is not None:
                say(space_summary(usage))
            return
        found = {r.snapshot_id: changes_json(fs.changes(r)) for r in records} if files else {}
    shares = {} if usage is None else {s.snapshot_id: s for s in usage.snapshots}
    if as_json:
        entries = []
        for r in records:
            entry = {**r.to_dict(), "current": r.snapshot_id == current}
            if r.snapshot_id in shares:
                held = shares[r.snapshot_id]
                entry["space"] = {"reached": held.reached, "shared": held.shared,
                                  "exclusive": held.exclusive}  # fmt: skip
            entry.update(found.get(r.snapshot_id, {}))
            entries.append(entry)
        emit_json(entries if usage is None else {"snapshots": entries, "space": usage.to_dict()})
        return
    if not records:
        say("No snapshots yet.")
    else:
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        columns = ["", "ID", "TAG", "PARENT", "TIME", "FILES", "BYTES"]
        numeric = {"FILES", "BYTES", "SHARED", "EXCLUSIVE"}
        for column in columns + (["SHARED", "EXCLUSIVE"] if usage else []):
            table.add_column(column, justify="right" if column in numeric else "left")
        for r in records:
            row = [
                "*" if r.snapshot_id == current else "",
                short_id(r.snapshot_id),
                r.tag or "",
                short_id(r.parent_id) if r.parent_id else "",
                r.created_at.astimezone().strftime("%Y-%m-%d %H:%M:%S"),
                f"{r.file_count:,}",
                size(r.total_bytes),
            ]
            if usage is not None:
                share = shares.get(r.snapshot_id)
                row += ["", ""] if share is None else [size(share.shared), size(share.exclusive)]
            table.add_row(*row)
        stdout.print(table)
    if usage is not None:
        say(space_summary(usage))


def space_summary(usage: SpaceUsage) -> str:
    """The lines under ``log --space``: the live tree, the snapshots, forks, the rest."""
    live = usage.live
    lines = [
        f"live tree: {size(live.reached)}, {size(live.exclusive)} of it held by nothing else",
        f"snapshots alone hold {size(usage.workspace.snapshots_exclusive)} "
        "(what deleting all of them frees)",
    ]
    for fork in usage.forks:
        lines.append(f"fork {fork.workspace_id[:8]}: {size(fork.reached)}, "
                     f"{size(fork.exclusive)} of it its alone")  # fmt: skip
    if usage.other.reached:
        lines.append(f"held elsewhere (persisted state, open views): {size(usage.other.reached)}, "
                     f"{size(usage.other.exclusive)} of it theirs alone")  # fmt: skip
    lines.append(f"memory held: {size(usage.held)}")
    return "\n".join(lines)


@app.command(epilog="Example: workspacefs prune ./ws --max-bytes 500MiB --dry-run")
def prune(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT]")] = None,
    keep: Annotated[
        int | None, typer.Option("--keep", metavar="N", help="Keep the newest N snapshots.")
    ] = None,
    max_age: Annotated[
        float | None,
        typer.Option("--max-age", metavar="HOURS", help="Delete snapshots older than this."),
    ] = None,
    max_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-bytes",
            metavar="SIZE",
            help="Delete the oldest snapshots until what only snapshots hold in memory "
            "is at most SIZE (e.g. 500MiB, 2G, 10000).",
        ),
    ] = None,
    include_tagged: Annotated[
        bool, typer.Option("--include-tagged", help="Tagged snapshots may go too.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="Only say what would go.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete snapshots by count, age or the memory only they hold, oldest first."""
    from ..fs import SnapshotRetentionPolicy, snapshot_label

    point, _ = split_mountpoint(args or [], 0, 0)
    if keep is None and max_age is None and max_bytes is None:
        raise typer.BadParameter("give --keep, --max-age or --max-bytes")
    policy = SnapshotRetentionPolicy(
        max_count=keep,
        max_age_hours=max_age,
        keep_tagged=not include_tagged,
        max_snapshot_bytes=None if max_bytes is None else size_option(max_bytes, "--max-bytes"),
    )
    with workspace(point) as fs:
        result = fs.prune(policy, dry_run=dry_run)
    if as_json:
        emit_json({**dataclasses.asdict(result),
                   "pruned": [record.to_dict() for record in result.pruned]})  # fmt: skip
        return
    count = len(result.pruned)
    noun = "snapshot" if count == 1 else "snapshots"
    if dry_run:
        say(f"Would prune {count} {noun}, freeing {size(result.freed_bytes)}")
    else:
        say(
            f"Pruned {count} {noun}, freed {size(result.freed_bytes)} "
            f"(memory held {size(result.held_before)} -> {size(result.held_after)})"
        )
    for record in result.pruned:
        say(f"  {snapshot_label(record)}")


def size_option(text: str, option: str) -> int:
    """A size given to ``option``: ``10000``, ``64K``, ``500MiB``, ``1.5G`` (binary
    units, as ``size`` prints them); 0 is a size."""
    from ..sandbox import parse_size

    try:
        return parse_size(text, option, minimum=0)
    except InvalidArgumentError as exc:
        raise typer.BadParameter(str(exc.strerror)) from None
