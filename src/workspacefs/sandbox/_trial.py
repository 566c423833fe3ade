"""Best-of-N: N commands at once, each in a fork and a container of its own, scored; one
accepted, the others dropped.

A trial forks the workspace N times in one step (so every attempt starts from
the same state), then starts the N try-runs (``TrySite.start``) in N threads:
N containers start, run their command and then the score command, at once.
Each attempt is a ``TryRun`` waiting for a decision, its fork served at
``<mountpoint>/.forks/<try id>``; ``TrialRun.accept`` accepts one (a
fast-forward, or a merge as ``TryRun.accept`` does: conflicts apply nothing,
or with ``hold`` are held open) and drops the others.

``PodmanSandbox.best_of`` runs trials with the sandbox's root filesystem and
options; a daemon runs them on its own mount (``MountTrials``). Both keep
them in a ``TrialBook``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from .._errors import InvalidArgumentError, NotFoundError
from ..fs import (
    Attempt,
    CommandOutcome,
    InMemoryFilesystem,
    Trial,
    TrialState,
    output_tail,
    score_value,
)
from ..git import MergeResult
from ._exec import CheckedCommand, Completed
from ._result import ExecResult
from ._try import MAX_PENDING_TRIES, TryRun

log = logging.getLogger(__name__)

KEPT_DECIDED = 8
"""Decided trials a ``TrialBook`` keeps listing (their reports only), besides the pending."""

StartTry = Callable[
    [str, InMemoryFilesystem, CheckedCommand, CheckedCommand | None],
    tuple[TryRun, Completed | None],
]
"""Runs one attempt: (try id, its fork, the command, the score command) -> the try,
pending, and how the score command went (``TrySite.start``)."""


def check_commands(commands: Sequence[str]) -> list[str]:
    """A trial's command lines: 1 to ``MAX_PENDING_TRIES`` strings (each checked as
    ``exec`` checks a command, by the caller).

    Raises:
        InvalidArgumentError: Not a list of strings, none, or too many.
    """
    if isinstance(commands, str | bytes) or not isinstance(commands, Sequence):
        raise InvalidArgumentError("give the commands as a list of command lines", None)
    if not 0 < len(commands) <= MAX_PENDING_TRIES:
        raise InvalidArgumentError(
            f"a trial runs 1 to {MAX_PENDING_TRIES} commands, not {len(commands)}", None
        )
    if not all(isinstance(command, str) for command in commands):
        raise InvalidArgumentError("every command must be a string", None)
    return list(commands)


def command_outcome(command: str, done: ExecResult | Completed) -> CommandOutcome:
    """How ``command`` ended, with the tails of its output."""
    if isinstance(done, Completed):
        stdout, stderr = done.stdout.text, done.stderr.text
    else:
        stdout, stderr = done.stdout, done.stderr
    return CommandOutcome(
        command=command,
        exit_code=done.exit_code,
        timed_out=done.timed_out,
        duration=round(done.duration, 3),
        stdout=output_tail(stdout),
        stderr=output_tail(stderr),
    )


class TrialRun:
    """A trial whose attempts are tries waiting for a decision.

    Args:
        trial_id: Its name (``trial-<n>``).
        score_command: The command that scored each attempt (None: none did).
        started_at: When it started.
        duration: Seconds it took, wall time.
        attempts: Each attempt's try, command line and score command's end.
    """

    def __init__(
        self,
        trial_id: str,
        score_command: str | None,
        started_at: datetime,
        duration: float,
        attempts: Sequence[tuple[TryRun, str, Completed | None]],
    ) -> None:
        self.id = trial_id
        self._score_command = score_command
        self._started_at = started_at
        self._duration = duration
        self._tries = [run for run, _, _ in attempts]
        self._lock = threading.Lock()
        # What a try reports never changes; only its state does.
        self._outcomes: list[tuple[CommandOutcome, CommandOutcome | None]] = []
        for run, command, scored in attempts:
            scoring = None
            if scored is not None and score_command is not None:
                scoring = command_outcome(score_command, scored)
            self._outcomes.append((command_outcome(command, run.result), scoring))

    def report(self) -> Trial:
        """The trial as it stands."""
        attempts = []
        for number, (run, (outcome, scoring)) in enumerate(
            zip(self._tries, self._outcomes, strict=True), 1
        ):
            passed = outcome.ok and (scoring is None or scoring.ok)
            if scoring is None:
                score = 1.0 if outcome.ok else 0.0
            else:
                score = score_value(scoring)
            state = run.state
            attempts.append(
                Attempt(
                    id=run.id,
                    number=number,
                    run=outcome,
                    changes=run.result.changes,
                    scoring=scoring,
                    score=score,
                    passed=passed,
                    state=state,
                    path=run.path if state == "pending" else None,
                )
            )
        states = {attempt.state for attempt in attempts}
        trial_state: TrialState = "pending"
        if "accepted" in states:
            trial_state = "accepted"
        elif states == {"rejected"}:
            trial_state = "dropped"
        return Trial(
            id=self.id,
            attempts=tuple(attempts),
            score_command=self._score_command,
            started_at=self._started_at,
            duration=round(self._duration, 3),
            state=trial_state,
        )

    def holds(self, attempt_id: str) -> bool:
        """True if ``attempt_id`` is one of its attempts."""
        return any(run.id == attempt_id for run in self._tries)

    def accept(self, attempt_id: str, *, hold: bool = False) -> MergeResult:
        """Accept attempt ``attempt_id`` (``TryRun.accept``) and drop the others.

        If the merge conflicts, nothing changes and every attempt stays pending
        (accept another, or drop the trial); with ``hold`` the merge is held open
        instead, and the others are dropped: continuing it accepts the attempt.

        Raises:
            NotFoundError: The trial has no attempt of that id.
            InvalidArgumentError: The trial or the attempt was decided already.
        """
        with self._lock:
            chosen = next((run for run in self._tries if run.id == attempt_id), None)
            if chosen is None:
                raise NotFoundError(f"{self.id} has no attempt {attempt_id!r}", None)
            accepted = next((run for run in self._tries if run.state == "accepted"), None)
            if accepted is not None:
                raise InvalidArgumentError(
                    f"{self.id} was decided already: {accepted.id} was accepted", None
                )
            outcome = chosen.accept(hold=hold)
            if outcome.conflicts and outcome.held is None:
                return outcome
            for run in self._tries:
                if run is not chosen:
                    run.drop()
        log.info("%s: accepted %s", self.id, attempt_id)
        return outcome

    def drop(self) -> None:
        """Drop every attempt still pending (and a merge of one held open)."""
        with self._lock:
            for run in self._tries:
                run.drop()

    def __repr__(self) -> str:
        return f"<TrialRun {self.id}: {len(self._tries)} attempts>"


def run_trial(
    trial_id: str,
    try_ids: Sequence[str],
    origin: InMemoryFilesystem,
    commands: Sequence[CheckedCommand],
    score: CheckedCommand | None,
    start: StartTry,
) -> TrialRun:
    """Run ``commands[i]`` as try ``try_ids[i]``, all at once, each in a fork of
    ``origin`` taken in one step, then ``score`` after each (``start`` runs one).

    If one fails (a container that would not start, a command that took its
    container down), the others are dropped once they end, and its error raised.
    """
    assert len(try_ids) == len(commands) > 0
    with origin.tree.lock:  # one state for all: no write between the forks
        forks = [origin.fork() for _ in commands]
    started_at = datetime.now(UTC)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(commands), thread_name_prefix=trial_id) as pool:
        futures = [
            pool.submit(start, try_id, fork, command, score)
            for try_id, fork, command in zip(try_ids, forks, commands, strict=True)
        ]
    duration = time.monotonic() - started
    errors = [error for future in futures if (error := future.exception()) is not None]
    if errors:
        for future in futures:
            if future.exception() is None:
                future.result()[0].drop()
        raise errors[0]
    attempts = [
        (run, command.command, scored)
        for (run, scored), command in zip(
            (future.result() for future in futures), commands, strict=True
        )
    ]
    log.info("%s: %d attempts in %.2f s", trial_id, len(attempts), duration)
    score_command = None if score is None else score.command
    return TrialRun(trial_id, score_command, started_at, duration, attempts)


class TrialBook:
    """The trials of one workspace: those waiting for a decision, and the reports of
    the last ``KEPT_DECIDED`` decided (a decided trial keeps no fork)."""

    def __init__(self) -> None:
        self._trials: OrderedDict[str, TrialRun | Trial] = OrderedDict()
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def next_id(self) -> str:
        """A new trial's id: ``trial-<n>``."""
        with self._lock:
            return f"trial-{next(self._numbers)}"

    def add(self, run: TrialRun) -> None:
        """Keep ``run``."""
        with self._lock:
            self._trials[run.id] = run
        self._settle()

    def _settle(self) -> list[Trial]:
        """Every trial's report; a decided one's replaces its run, and the oldest
        decided beyond ``KEPT_DECIDED`` go."""
        with self._lock:
            reports = []
            for trial_id, kept in list(self._trials.items()):
                report = kept.report() if isinstance(kept, TrialRun) else kept
                if report.state != "pending":
                    self._trials[trial_id] = report
                reports.append(report)
            decided = [r.id for r in reports if r.state != "pending"]
            for trial_id in decided[: max(0, len(decided) - KEPT_DECIDED)]:
                del self._trials[trial_id]
            return [r for r in reports if r.id in self._trials]

    def list(self) -> list[Trial]:
        """The trials, oldest first: the pending and the last few decided."""
        return self._settle()

    def get(self, trial_id: str) -> Trial:
        """Trial ``trial_id`` as it stands.

        Raises:
            NotFoundError: No trial of that id is kept.
        """
        for report in self._settle():
            if report.id == trial_id:
                return report
        raise NotFoundError(f"no trial {trial_id!r} (kept: {self._names()})", None)

    def _names(self) -> str:
        with self._lock:
            return ", ".join(self._trials) or "none"

    def _pending(self, trial_id: str | None = None, attempt_id: str | None = None) -> TrialRun:
        self._settle()  # a trial decided attempt by attempt (reject_try) is decided
        with self._lock:
            for kept in self._trials.values():
                if not isinstance(kept, TrialRun):
                    continue
                if kept.id == trial_id or (attempt_id is not None and kept.holds(attempt_id)):
                    return kept
        if trial_id is not None and trial_id in self._trials:
            raise InvalidArgumentError(f"{trial_id} was decided already", None)
        if attempt_id is not None:
            raise NotFoundError(
                f"no pending trial has an attempt {attempt_id!r} (trials: {self._names()})", None
            )
        raise NotFoundError(f"no trial {trial_id!r} (trials: {self._names()})", None)

    def accept(self, attempt_id: str, *, hold: bool = False) -> MergeResult:
        """Accept attempt ``attempt_id`` of its trial and drop the others
        (``TrialRun.accept``).

        Raises:
            NotFoundError: No pending trial has an attempt of that id.
            InvalidArgumentError: Its trial or the attempt was decided already.
        """
        run = self._pending(attempt_id=attempt_id.strip())
        try:
            return run.accept(attempt_id.strip(), hold=hold)
        finally:
            self._settle()

    def drop(self, trial_id: str) -> Trial:
        """Drop every pending attempt of trial ``trial_id``; its report.

        Raises:
            NotFoundError: No trial of that id is kept.
            InvalidArgumentError: It was decided already.
        """
        run = self._pending(trial_id=trial_id.strip())
        run.drop()
        return self.get(run.id)

    def drop_all(self) -> None:
        """Drop every pending trial (the sandbox's or the mount's close)."""
        with self._lock:
            pending = [kept for kept in self._trials.values() if isinstance(kept, TrialRun)]
        for run in pending:
            with contextlib.suppress(OSError):  # a merge held open went meanwhile
                run.drop()
        self._settle()
