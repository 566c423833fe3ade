"""``best_of``, ``accept_attempt`` and ``drop_trial``: best-of-N as tools.

A model runs several candidate commands at once (``best_of``), each in a fork
of the workspace and a container of its own, scored by a command it chooses
(the project's tests); it reads how each did, then merges the one it wants
(``accept_attempt``: the others are dropped) or drops them all
(``drop_trial``). The tools take anything with the four verbs (``Trials``):
a ``PodmanSandbox``, or a daemon's ``RemoteFilesystem`` (the daemon runs the
containers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from .._errors import InvalidArgumentError, NotFoundError
from ..fs import Attempt, MergeReport, Trial, conflict_lines, snapshot_label
from ..tools import Tool, ToolAnnotations, ToolContext, ToolParams, ToolResult
from ._try import MAX_PENDING_TRIES

MAX_LISTED = 20
"""Changed paths an attempt's line lists before counting the rest."""
TAIL_LINES = 20
"""Lines of a failed attempt's output its description quotes."""


@runtime_checkable
class Trials(Protocol):
    """What runs and decides trials: a ``PodmanSandbox``, a daemon's ``RemoteFilesystem``."""

    def best_of(
        self, commands: Sequence[str], *, score: str | None = None, timeout: float | None = None
    ) -> Trial:
        """Run each command at once in a fork and a container of its own, then ``score``."""
        ...

    def trials(self) -> list[Trial]:
        """The trials, pending and recently decided."""
        ...

    def accept_attempt(self, attempt_id: str, *, hold: bool = False) -> MergeReport:
        """Merge an attempt into the workspace and drop its trial's others."""
        ...

    def drop_trial(self, trial_id: str) -> Trial:
        """Drop every attempt of a pending trial."""
        ...


class BestOfParams(ToolParams):
    """Arguments of ``best_of``."""

    commands: list[str] = Field(
        min_length=1,
        max_length=MAX_PENDING_TRIES,
        description="Shell command lines, one per attempt, run at once in /workspace, each "
        "in its own copy of the workspace; repeat one to try it several times.",
    )
    score: str | None = Field(
        None,
        description="A command run after each attempt in its copy, e.g. the tests: the "
        "attempt passes if it exits 0; its score is the number it prints last, else 1 "
        "(passed) or 0. Without it, each command's own exit status decides.",
        max_length=4096,
    )
    timeout: float | None = Field(
        None, gt=0, le=3600, description="Seconds each command (and score) may run."
    )


class AcceptAttemptParams(ToolParams):
    """Arguments of ``accept_attempt``."""

    attempt_id: str = Field(
        min_length=1, max_length=64, description='The attempt to keep, e.g. "try-2".'
    )
    hold: bool = Field(
        False,
        description="If merging it conflicts with changes made to the workspace since, hold "
        "the merge open to settle with the conflicts, resolve and abort_merge tools.",
    )


class DropTrialParams(ToolParams):
    """Arguments of ``drop_trial``."""

    trial_id: str = Field(
        min_length=1, max_length=64, description='The trial to drop, e.g. "trial-1".'
    )


def _listed(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:MAX_LISTED])
    more = len(paths) - MAX_LISTED
    return shown + (f" and {more:,} more" if more > 0 else "")


def attempt_lines(attempt: Attempt) -> list[str]:
    """How one attempt did, for a model: its result, what it changed, and (failed) the
    end of what it printed."""
    run, scoring = attempt.run, attempt.scoring
    status = "timed out" if run.timed_out else f"exit {run.exit_code}"
    if scoring is not None:
        scored = "timed out" if scoring.timed_out else f"exit {scoring.exit_code}"
        status += f", score command {scored}"
    verdict = "passed" if attempt.passed else "failed"
    changes = attempt.changes
    changed = [*changes.added, *changes.modified, *changes.deleted]
    what = (
        f"changed {len(changed)} path(s): {_listed(sorted(changed))}"
        if changed
        else ("changed nothing")
    )
    lines = [
        f"- {attempt.id} ({verdict}, score {attempt.score:g}, {status}, {attempt.state}): "
        f"`{run.command}` {what}"
    ]
    if not attempt.passed:
        shown = scoring if run.ok and scoring is not None else run
        text = (shown.stdout.rstrip() + "\n" + shown.stderr.rstrip()).strip()
        lines += [f"    {line}" for line in text.splitlines()[-TAIL_LINES:]]
    return lines


def describe_trial(trial: Trial) -> str:
    """The ``best_of`` message: each attempt, then which to accept and how."""
    lines = [f"{trial.id}: {len(trial.attempts)} attempt(s) in {trial.duration:.1f} s."]
    for attempt in trial.attempts:
        lines += attempt_lines(attempt)
    if trial.state != "pending":
        lines.append(f"{trial.id} is {trial.state}.")
        return "\n".join(lines)
    best = trial.best
    if best is not None:
        lines.append(
            f"Best: {best.id}. The workspace is unchanged: call accept_attempt("
            f'attempt_id="{best.id}") to merge it (the other attempts are dropped), or '
            f'drop_trial(trial_id="{trial.id}") to drop them all.'
        )
    else:
        lines.append(
            f"No attempt passed; the workspace is unchanged. Call drop_trial("
            f'trial_id="{trial.id}") to drop them (or accept_attempt one anyway).'
        )
    return "\n".join(lines)


def describe_accepted(attempt_id: str, report: MergeReport) -> str:
    """The ``accept_attempt`` message for ``report``."""
    if report.held is not None:
        lines = [
            f"{attempt_id} conflicts with changes made to the workspace since: "
            f"{len(report.conflicts)} path(s). The merge is held open; the other attempts "
            "are dropped. Call conflicts to see where it stands, then resolve (which "
            f"accepts {attempt_id}) or abort_merge."
        ]
        return "\n".join(lines)
    if report.conflicts:
        lines = [
            f"{attempt_id} was not merged: the workspace changed since the trial, and "
            f"{len(report.conflicts)} path(s) changed on both sides in ways that do not merge:"
        ]
        for conflict in report.conflicts:
            lines += conflict_lines(conflict)
        lines.append(
            "Nothing changed and every attempt is still pending: accept another, accept "
            "this one with hold=true to settle the conflicts, or drop_trial."
        )
        return "\n".join(lines)
    undo = ""
    if report.snapshot is not None:
        undo = f" Restore snapshot {snapshot_label(report.snapshot)} to undo it."
    if not report.changed:
        return f"Accepted {attempt_id}: it changed nothing; the other attempts are dropped.{undo}"
    return (
        f"Accepted {attempt_id}: the workspace now has its changes to "
        f"{len(report.changed):,} path(s): {_listed(report.changed)}. The other attempts "
        f"are dropped.{undo}"
    )


class _Handlers:
    """The three tools' handlers, over one ``Trials``."""

    def __init__(self, trials: Trials) -> None:
        self._trials = trials

    def best_of(self, params: BestOfParams, *, context: ToolContext) -> ToolResult[Trial]:
        trial = self._trials.best_of(params.commands, score=params.score, timeout=params.timeout)
        return ToolResult.ok(describe_trial(trial), trial)

    def accept_attempt(
        self, params: AcceptAttemptParams, *, context: ToolContext
    ) -> ToolResult[MergeReport]:
        try:
            report = self._trials.accept_attempt(params.attempt_id, hold=params.hold)
        except (NotFoundError, InvalidArgumentError) as exc:
            return ToolResult.fail(f"accept_attempt: {exc.strerror}.")
        settled = not report.conflicts or report.held is not None
        return ToolResult(describe_accepted(params.attempt_id, report), report, settled)

    def drop_trial(self, params: DropTrialParams, *, context: ToolContext) -> ToolResult[Trial]:
        try:
            trial = self._trials.drop_trial(params.trial_id)
        except (NotFoundError, InvalidArgumentError) as exc:
            return ToolResult.fail(f"drop_trial: {exc.strerror}.")
        return ToolResult.ok(
            f"Dropped every attempt of {trial.id}; the workspace is as it was.", trial
        )


def trial_tools(trials: Trials) -> tuple[Tool[Any, Any], ...]:
    """The tools ``best_of``, ``accept_attempt`` and ``drop_trial`` over ``trials`` (a
    ``PodmanSandbox``, or a daemon's ``RemoteFilesystem``)::

        for tool in trial_tools(box):
            registry.add(tool)
    """
    handlers = _Handlers(trials)
    run = Tool(
        name="best_of",
        description=(
            "Try several candidate commands at once (or one command several times), each "
            "in its own copy of the workspace and its own container, and score each with a "
            "command such as the tests. Reports each attempt's exit status, the paths it "
            "changed, its score and the end of its output. The workspace is unchanged "
            "until you accept_attempt one (the others are dropped) or drop_trial."
        ),
        params=BestOfParams,
        handler=handlers.best_of,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=False, title="Best of N"
        ),
        output=Trial,
    )
    accept = Tool(
        name="accept_attempt",
        description=(
            "Merge one attempt of a best_of trial into the workspace and drop the trial's "
            "other attempts. If the workspace changed since, the two are merged; paths that "
            "conflict are listed and nothing changes (hold=true holds the merge open)."
        ),
        params=AcceptAttemptParams,
        handler=handlers.accept_attempt,
        annotations=ToolAnnotations(
            read_only=False, destructive=True, idempotent=False, title="Accept an attempt"
        ),
        output=MergeReport,
    )
    drop = Tool(
        name="drop_trial",
        description=("Drop every attempt of a best_of trial; the workspace stays as it is."),
        params=DropTrialParams,
        handler=handlers.drop_trial,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=False, title="Drop a trial"
        ),
        output=Trial,
    )
    return run, accept, drop
