"""blame: who changed a file."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import JsonOption, app, split_mountpoint, workspace
from ._history import MARKS, name, when, who
from ._output import emit_json, stdout
from ._rules import denial_line


@app.command(epilog="Example: workspacefs blame ./ws src/app.py")
def blame(
    args: Annotated[list[str], typer.Argument(metavar="[MOUNTPOINT] PATH")],
    snapshot: Annotated[
        str | None, typer.Option("--at", help="Start at this snapshot (tag, id or prefix).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Who changed a file: each change, newest first, with its snapshot and its cause
    (the tool call, or the command, process and container that wrote it)."""
    from ..fs import find_snapshot

    point, rest = split_mountpoint(args, 1, 1)
    with workspace(point) as fs:
        start = find_snapshot(fs.snapshots(), snapshot) if snapshot is not None else None
        entries = fs.blame(rest[0], snapshot=start)
        refused = fs.denials(rest[0])
    if as_json:
        emit_json([entry.to_dict() for entry in entries])
        return
    if not entries:
        stdout.print(f"No recorded change to {rest[0]}.")
    for entry in entries:
        print(
            f"{name(entry.snapshot):<24} {when(entry.snapshot):<19} "
            f"{MARKS[entry.kind]} {who(entry.causes)}"
        )
    if refused:
        print(f"Refused by access rules ({len(refused)}, oldest first; workspacefs denials):")
        for denial in refused:
            print(f"  {denial_line(denial)}")
