"""history, rewind: the tool calls a running workspace records, and going back to one."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import JsonOption, app, split_mountpoint, workspace
from ._history import MARKS, name, when
from ._output import emit_json, say


@app.command(epilog="Example: workspacefs history ./ws")
def history(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT]")] = None,
    as_json: JsonOption = False,
) -> None:
    """List the recorded tool calls (agent tools, MCP, shell), oldest first: call id,
    tool, the snapshot before it, when, and whether it changed the workspace."""
    from ..fs import to_json

    point, _ = split_mountpoint(args or [], 0, 0)
    with workspace(point) as fs:
        calls = fs.call_history()
    if as_json:
        emit_json([to_json(call) for call in calls])
        return
    if not calls:
        say("No recorded tool call.")
        return
    for call in calls:
        effect = "changed nothing" if call.after is None else "changed"
        print(f"{call.call_id}\t{call.tool}\t{name(call.before)}\t{when(call.before)}\t{effect}")


@app.command(epilog="Example: workspacefs rewind ./ws toolu_01AbC")
def rewind(
    args: Annotated[list[str], typer.Argument(metavar="[MOUNTPOINT] CALL_ID")],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Also discard what other writers changed after the call (refused without).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Return the workspace to just before a recorded tool call; print the calls undone,
    oldest first (the cut point), then the files the rewind changed."""
    from ..fs import to_json

    point, rest = split_mountpoint(args, 1, 1)
    with workspace(point) as fs:
        result = fs.rewind(rest[0], force=force)
    if as_json:
        emit_json(to_json(result))
        return
    count = len(result.undone)
    say(f"Rewound to before {result.call_id}: {count} call{'' if count == 1 else 's'} undone")
    for call_id in result.undone:
        print(f"undone\t{call_id}")
    changes = result.changes
    for mark, paths in (
        (MARKS["added"], changes.added),
        (MARKS["modified"], changes.modified),
        (MARKS["deleted"], changes.deleted),
    ):
        for path in paths:
            print(f"{mark}\t{path}")
    for path in result.discarded:
        print(f"discarded\t{path}")
