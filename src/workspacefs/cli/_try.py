"""try: best of N, run by the workspace's daemon.

``workspacefs try -n 3 --score 'make test' -- CMD`` runs CMD three times at
once, each in a fork of the workspace and a Podman container of its own, then
the score command in each fork; each attempt waits, its fork served at
``<mountpoint>/.forks/<attempt>``, until ``--accept`` merges one (and drops
the others) or ``--drop`` drops them all. See docs/agents.md, "Best of N".
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import EXIT_FAILED, JsonOption, app
from ._forks import OfOption, origin
from ._output import emit_json, stderr, stdout, working

if TYPE_CHECKING:
    from ..daemon import RemoteFilesystem
    from ..fs import Attempt, Trial

BEST = "best"
TAIL_LINES = 3
"""Lines of a failed attempt's output printed under the table."""


def _command_lines(command: list[str] | None, commands: list[str] | None, count: int) -> list[str]:
    """The attempts' shell command lines: ``-c`` ones, or COMMAND ``count`` times."""
    if command and commands:
        raise typer.BadParameter("give -- COMMAND or --command/-c, not both")
    if commands:
        if count != 1:
            raise typer.BadParameter("-n repeats -- COMMAND; with -c each command runs once")
        return list(commands)
    if not command:
        raise typer.BadParameter("name the command: -- COMMAND, or -c CMD (repeatable)")
    if count < 1:
        raise typer.BadParameter("-n must be at least 1")
    # One argument is a shell command line as it is; several are one command's words.
    line = command[0] if len(command) == 1 else shlex.join(command)
    return [line] * count


@app.command(
    name="try",
    context_settings={"allow_interspersed_args": False},
    epilog="Examples: workspacefs try -n 3 --score 'python3 -m pytest -q' -- ./agent.sh; "
    "workspacefs try -c 'patch -p1 < a.diff' -c 'patch -p1 < b.diff' --score 'make test' "
    "--accept best; then: workspacefs try --accept try-2, or workspacefs try --drop trial-1",
)
def try_(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[-- COMMAND...]",
            help="The command and its arguments, or one shell command line.",
        ),
    ] = None,
    count: Annotated[
        int, typer.Option("-n", "--attempts", help="Run COMMAND this many times at once.")
    ] = 1,
    commands: Annotated[
        list[str] | None,
        typer.Option(
            "--command", "-c", metavar="CMD", help="A shell command line: one attempt each."
        ),
    ] = None,
    score: Annotated[
        str | None,
        typer.Option(
            "--score",
            metavar="CMD",
            help="Run after each attempt, in its fork: it passes if CMD exits 0; its score "
            "is the number CMD prints last, else 1 or 0.",
        ),
    ] = None,
    accept: Annotated[
        str | None,
        typer.Option(
            "--accept",
            metavar="ATTEMPT",
            help="Merge this attempt and drop the others ('best': the best that passed; "
            "if none did, all are dropped). Alone: decide a pending trial.",
        ),
    ] = None,
    hold: Annotated[
        bool,
        typer.Option("--hold", help="With --accept: hold a merge with conflicts open."),
    ] = False,
    drop: Annotated[
        str | None,
        typer.Option("--drop", metavar="TRIAL", help="Drop every attempt of a pending trial."),
    ] = None,
    status: Annotated[
        bool, typer.Option("--status", help="List the trials, pending and recently decided.")
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds each command may run (default: 120)."),
    ] = None,
    image: Annotated[str | None, typer.Option("--image", help="Container image.")] = None,
    rootfs: Annotated[
        str | None,
        typer.Option(
            "--rootfs", help="Root directory, through an overlay (default: the host's /)."
        ),
    ] = None,
    memory: Annotated[
        str | None, typer.Option("--memory", help="Each container's memory limit (default 2g).")
    ] = None,
    of: OfOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run COMMAND N times (or each --command once) at once, each in a fork of the
    workspace and a container of its own, score each, and keep the attempts pending
    until one is accepted (merged, the others dropped) or all are dropped.

    Exits 0 if an attempt passed (or was accepted), 1 otherwise."""
    if hold and accept is None:
        raise typer.BadParameter("--hold goes with --accept")
    if not (command or commands):
        _decide(status, drop, accept, hold=hold, of=of, as_json=as_json)
        return
    if status or drop is not None:
        raise typer.BadParameter("--status and --drop take no command")
    lines = _command_lines(command, commands, count)
    if image is not None and rootfs is not None:
        raise typer.BadParameter("give --image or --rootfs, not both")
    with origin(of) as fs:
        with working(f"running {len(lines)} attempt(s)", quiet=as_json):
            trial = fs.best_of(
                lines, score=score, timeout=timeout, image=image, rootfs=rootfs, memory=memory
            )
        if as_json and accept is None:
            emit_json(_trial_json(trial))
        elif not as_json:
            _print_trial(trial, fs.mountpoint, hints=accept is None)
        if accept is None:
            raise typer.Exit(0 if trial.best is not None else EXIT_FAILED)
        chosen = trial.best if accept == BEST else trial.attempt(accept)
        if chosen is None and accept == BEST:
            dropped = fs.drop_trial(trial.id)
            if as_json:
                emit_json({**_trial_json(dropped), "accepted": None})
            else:
                stdout.print(f"No attempt passed: dropped every attempt of {trial.id}.")
            raise typer.Exit(EXIT_FAILED)
        _accept(fs, chosen.id if chosen is not None else accept, hold=hold, as_json=as_json)


def _decide(
    status: bool, drop: str | None, accept: str | None, *, hold: bool, of: str | None, as_json: bool
) -> None:
    """--status, --drop TRIAL or --accept ATTEMPT, without a command."""
    given = [
        name
        for name, on in (("--status", status), ("--drop", drop is not None), ("--accept", accept))
        if on
    ]
    if len(given) != 1:
        raise typer.BadParameter(
            "name the command: -- COMMAND, or -c CMD (repeatable); or one of --status, "
            "--drop TRIAL, --accept ATTEMPT"
            if not given
            else f"{' and '.join(given)}: give one"
        )
    with origin(of) as fs:
        if status:
            _status(fs, as_json=as_json)
        elif drop is not None:
            _drop(fs, drop, as_json=as_json)
        else:
            assert accept is not None
            _accept(fs, accept, hold=hold, as_json=as_json)


def _trial_json(trial: Trial) -> dict[str, object]:
    from ..fs import Trial, to_json

    best = trial.best
    return {**to_json(trial, Trial), "best": None if best is None else best.id}


def _status(fs: RemoteFilesystem, *, as_json: bool) -> None:
    trials = fs.trials()
    if as_json:
        emit_json([_trial_json(trial) for trial in trials])
        return
    if not trials:
        stdout.print(f"No trials in {fs.mountpoint}.")
        return
    for trial in trials:
        _print_trial(trial, fs.mountpoint)


def _drop(fs: RemoteFilesystem, trial_id: str, *, as_json: bool) -> None:
    trial = fs.drop_trial(trial_id)
    if as_json:
        emit_json(_trial_json(trial))
    else:
        stdout.print(f"Dropped every attempt of {trial.id}; the workspace is as it was.")


def _accept(fs: RemoteFilesystem, attempt_id: str, *, hold: bool, as_json: bool) -> None:
    from ..fs import MergeReport, snapshot_label, to_json

    report = fs.accept_attempt(attempt_id, hold=hold)
    if as_json:
        emit_json({"accepted": attempt_id, **to_json(report, MergeReport)})
    elif report.held is not None:
        held = report.held
        print(
            f"{len(report.conflicts)} conflict(s): the merge of {attempt_id} is held open in "
            f"{held.path or held.fork}; resolve them there, then workspacefs merge --continue "
            "[--take PATH=base|ours|theirs] (which accepts it), or --abort",
            flush=True,
        )
    elif report.conflicts:
        for conflict in report.conflicts:
            print(f"CONFLICT ({conflict.kind}): {conflict.path}")
        print(
            f"{len(report.conflicts)} conflict(s): nothing merged; {attempt_id} and the "
            "other attempts are still pending (--accept another, --accept with --hold, or "
            "--drop the trial)",
            flush=True,
        )
    else:
        stdout.print(
            f"Accepted {attempt_id}: {len(report.changed)} path(s) changed; the other "
            "attempts are dropped",
            markup=False,
        )
        for path in report.changed:
            print(f"\t{path}")
        if report.snapshot is not None:
            stdout.print(f"Snapshot before the merge: {snapshot_label(report.snapshot)}")
    if report.conflicts and report.held is None:
        raise typer.Exit(EXIT_FAILED)


def _print_trial(trial: Trial, mountpoint: str, *, hints: bool = True) -> None:
    from rich.table import Table
    from rich.text import Text

    best = trial.best
    scored = f", scored by: {trial.score_command}" if trial.score_command else ""
    stdout.print(
        f"{trial.id} ({trial.state}): {len(trial.attempts)} attempt(s) in "
        f"{trial.duration:.1f} s{scored}",
        markup=False,
    )
    table = Table(box=None, pad_edge=False)
    for column in ("ATTEMPT", "EXIT", "SCORE", "PASSED", "TIME", "CHANGED", "STATE", "COMMAND"):
        table.add_column(column, justify="right" if column in ("EXIT", "CHANGED") else "left")
    for attempt in trial.attempts:
        changes = attempt.changes
        seconds = attempt.run.duration + (attempt.scoring.duration if attempt.scoring else 0)
        mark = " *" if best is not None and attempt.id == best.id else ""
        table.add_row(
            attempt.id + mark,
            "timeout" if attempt.run.timed_out else str(attempt.run.exit_code),
            f"{attempt.score:g}",
            "yes" if attempt.passed else "no",
            f"{seconds:.1f}s",
            f"{len(changes.added) + len(changes.modified) + len(changes.deleted):,}",
            attempt.state,
            Text(_one_line(attempt.run.command)),  # the caller's text, never rich markup
        )
    stdout.print(table)
    for attempt in trial.attempts:
        if not attempt.passed:
            _print_tail(attempt)
    if trial.state != "pending" or not hints:
        return
    if best is not None:
        stdout.print(
            f"Best: {best.id} (its fork: {mountpoint}/.forks/{best.id}). Accept it: "
            f"workspacefs try --accept {best.id}; drop them all: workspacefs try --drop {trial.id}"
        )
    else:
        stdout.print(
            f"No attempt passed. Drop them all: workspacefs try --drop {trial.id} (or accept "
            "one anyway: workspacefs try --accept ATTEMPT)"
        )


def _one_line(command: str) -> str:
    """A command line on one table row: its first line, marked if more follow."""
    lines = command.strip().splitlines() or [""]
    return lines[0] + (" ..." if len(lines) > 1 else "")


def _print_tail(attempt: Attempt) -> None:
    """The last lines a failed attempt printed: its score command's, or its own."""
    outcome = attempt.scoring if attempt.run.ok and attempt.scoring else attempt.run
    text = (outcome.stdout.rstrip() + "\n" + outcome.stderr.rstrip()).strip()
    lines = text.splitlines()[-TAIL_LINES:]
    if lines:
        where = f"{attempt.id}: {_one_line(outcome.command)}"
        stderr.print(f"{where}: exit {outcome.exit_code}", markup=False)
        for line in lines:
            stderr.print(f"    {line}", markup=False)
