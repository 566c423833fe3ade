"""watch: the change feed, as it happens."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import app, split_mountpoint, workspace
from ._history import MARKS, who
from ._output import say

if TYPE_CHECKING:
    from datetime import datetime


@app.command(epilog="Examples: workspacefs watch ./ws 'src/**' ; workspacefs watch --json '*.py'")
def watch(
    args: Annotated[list[str] | None, typer.Argument(metavar="[MOUNTPOINT] [PATH-GLOB]")] = None,
    after: Annotated[
        str | None,
        typer.Option("--after", help="Resume after this event id (a gap line if it is lost)."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Stop once no event came for this many seconds."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per event and line.")
    ] = False,
) -> None:
    """Print every change to the workspace as it happens: each path added, modified or
    deleted, and who did it (the tool call, or the process, command and container);
    each change an access rule refused ('!' denied ..., the rule and who tried).

    PATH-GLOB keeps the paths it matches, as grep's file filter: '*.py' matches
    names, 'src/**' paths. Changes are coalesced (a path written many times in a
    moment is one line); a 'gap' line says events were lost (a resumed id too old
    to keep) and the workspace must be rescanned. On exit, stderr says the last
    event's id, for --after."""
    point, rest = split_mountpoint(list(args or []), 0, 1)
    glob = rest[0] if rest else None
    with workspace(point) as fs, fs.events(after, glob=glob, timeout=timeout) as stream:
        try:
            for event in stream:
                if as_json:
                    sys.stdout.write(json.dumps(event.to_dict(), default=str) + "\n")
                elif event.kind in ("gap", "denied"):
                    sys.stdout.write(f"{_clock(event.time)} ! {event.describe()}\n")
                else:
                    mark, causes = MARKS[event.kind], who(event.causes)
                    stamp = _clock(event.time)
                    sys.stdout.writelines(f"{stamp} {mark} {p}\t{causes}\n" for p in event.paths)
                sys.stdout.flush()
        finally:
            if not as_json:
                say(f"workspacefs: last event {stream.last_id} (--after resumes there)", err=True)


def _clock(moment: datetime) -> str:
    return moment.astimezone().strftime("%H:%M:%S")
