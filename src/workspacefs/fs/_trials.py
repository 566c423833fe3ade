"""What a best-of-N trial reports: one set of types for the sandbox and the daemon.

A *trial* runs N commands (or one command N times) at once, each in a fork of
the workspace and a container of its own, and scores each with a command the
caller chooses (``PodmanSandbox.best_of``; a daemon's ``best_of`` verb). Each
run is an *attempt*: a try-run (``TryRun``) waiting for a decision, its fork
served at ``<mountpoint>/.forks/<attempt id>``. Accepting one merges it into
the workspace and drops the others.

The sandbox runs trials and the daemon's client reads them (without the
sandbox), so the types live here, where both reach them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ._snapshots import FilesystemDiff

AttemptState = Literal["pending", "accepted", "rejected"]
"""Where an attempt stands: waiting for a decision (its fork served), merged into the
workspace, or dropped."""

TrialState = Literal["pending", "accepted", "dropped"]
"""Where a trial stands: an attempt waits for a decision, one was accepted, or every
one was dropped."""

OUTPUT_TAIL = 4000
"""Characters of each output stream an attempt keeps: the end, where a test run says
how it went."""


def output_tail(text: str, limit: int = OUTPUT_TAIL) -> str:
    """The last ``limit`` characters of ``text``, from a line's start where one is near,
    after a line saying how much came before."""
    if len(text) <= limit:
        return text
    kept = text[-limit:]
    newline = kept.find("\n")
    if 0 <= newline < limit // 4:  # start at a whole line unless that loses too much
        kept = kept[newline + 1 :]
    return f"[... {len(text) - len(kept):,} characters before]\n{kept}"


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """How one command of an attempt ended.

    Attributes:
        command: The command line (``/bin/sh -c``).
        exit_code: Its exit status (128 + n if signal n ended it).
        timed_out: It ran past its timeout and was killed with its process group.
        duration: Seconds it ran.
        stdout: The end of its standard output (``OUTPUT_TAIL`` characters).
        stderr: The end of its standard error, likewise.
    """

    command: str
    exit_code: int
    timed_out: bool
    duration: float
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """True if it exited 0 within its time."""
        return self.exit_code == 0 and not self.timed_out


def score_value(scoring: CommandOutcome) -> float:
    """The score a score command gives: the number on the last line it printed, if that
    line is one number (a coverage, a count of tests passed); else 1 if it exited 0
    within its time, 0 otherwise (a test command's result)."""
    lines = scoring.stdout.strip().splitlines()
    if lines:
        try:
            value = float(lines[-1].strip())
        except ValueError:
            pass
        else:
            if math.isfinite(value):
                return value
    return 1.0 if scoring.ok else 0.0


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of a trial: a command run in a fork of its own, then scored there.

    Attributes:
        id: Names the attempt (a try's id, ``try-<n>``): what ``accept_attempt``
            takes, and its fork's name on the mount.
        number: Its place in the trial, from 1 (the order the commands were given).
        run: How its command went.
        changes: What it changed in its fork: what accepting it applies (the fork
            as the command left it, before the score command ran).
        scoring: How the score command went, in the same fork and container, after
            the command (None without one). What it writes is not part of ``changes``.
        score: ``score_value`` of ``scoring``; without a score command, 1 if the
            command exited 0 within its time, 0 otherwise.
        passed: The command and the score command both exited 0 within their time.
        state: Waiting, accepted or rejected.
        path: Where its fork is served on the host while it is pending (None after).
    """

    id: str
    number: int
    run: CommandOutcome
    changes: FilesystemDiff
    scoring: CommandOutcome | None
    score: float
    passed: bool
    state: AttemptState
    path: str | None


@dataclass(frozen=True, slots=True)
class Trial:
    """N attempts run at once on the same state of a workspace, and how each did.

    Attributes:
        id: Names the trial (``trial-<n>``): what ``drop_trial`` takes.
        attempts: Its attempts, in the order of their commands.
        score_command: The command that scored each (None: each command's own result).
        started_at: When it started (UTC).
        duration: Seconds from its start until the last attempt was scored: the
            attempts' wall time, containers started and scored included.
        state: ``pending`` while an attempt waits for a decision, ``accepted`` once
            one was accepted, ``dropped`` once every one was dropped.
    """

    id: str
    attempts: tuple[Attempt, ...]
    score_command: str | None
    started_at: datetime
    duration: float
    state: TrialState

    @property
    def best(self) -> Attempt | None:
        """The attempt with the highest score among those that passed, the first of
        them on a tie; None if none passed."""
        passed = [attempt for attempt in self.attempts if attempt.passed]
        if not passed:
            return None
        top = max(attempt.score for attempt in passed)
        return next(attempt for attempt in passed if attempt.score == top)

    @property
    def accepted(self) -> Attempt | None:
        """The attempt accepted, if one was."""
        return next((a for a in self.attempts if a.state == "accepted"), None)

    def attempt(self, attempt_id: str) -> Attempt | None:
        """Its attempt ``attempt_id`` (None if it has none of that id)."""
        return next((a for a in self.attempts if a.id == attempt_id), None)
