"""Best of N in a sandbox: N commands at once, each in a fork and a container of its own,
scored by the project's tests; one accepted, the others dropped."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.best_of import (
    CANDIDATES,
    CORRECT,
    PROJECT,
    SCORE,
    STUB,
    attempts,
    release_when_all_started,
)
from workspacefs import BusyError, InMemoryFilesystem, InvalidArgumentError, NotFoundError
from workspacefs.git import WorkspaceMerges
from workspacefs.sandbox import MAX_PENDING_TRIES, PodmanSandbox, Trials

from .conftest import closed_cleanly, container_names

pytestmark = pytest.mark.container


@pytest.fixture
def box() -> Iterator[PodmanSandbox]:
    fs = InMemoryFilesystem(mount_point="/workspace")
    for path, text in PROJECT.items():
        fs.write(path, text)
    with closed_cleanly(PodmanSandbox(fs)) as sandbox:
        yield sandbox
    name = sandbox.name
    assert not [c for c in container_names() if c.startswith(name)], "an attempt's container stayed"


def test_three_attempts_at_once_the_passing_one_is_accepted(box: PodmanSandbox) -> None:
    fs = box.filesystem
    forks = [Path(box.mountpoint, ".forks", f"try-{n}") for n in (1, 2, 3)]
    errors: list[str] = []
    releaser = release_when_all_started(forks, errors)
    trial = box.best_of(attempts(), score=SCORE)
    releaser.join()
    assert errors == []

    assert [a.id for a in trial.attempts] == ["try-1", "try-2", "try-3"]
    assert [a.number for a in trial.attempts] == [1, 2, 3]
    assert [a.run.exit_code for a in trial.attempts] == [0, 0, 0]
    assert [a.passed for a in trial.attempts] == [False, True, False]
    assert [a.score for a in trial.attempts] == [0.0, 1.0, 0.0]
    assert trial.best is not None
    assert trial.best.id == "try-2"
    assert trial.score_command == SCORE
    assert trial.state == "pending"
    for attempt in trial.attempts:
        # Only the change: not the barrier's files, not what the tests wrote (__pycache__).
        assert attempt.changes.modified == ("stats.py",), attempt
        assert attempt.changes.added == attempt.changes.deleted == ()
        assert attempt.scoring is not None
        assert attempt.scoring.command == SCORE
    lower, _, no_check = trial.attempts
    assert lower.scoring is not None
    assert "FAIL: test_even" in lower.scoring.stderr
    assert no_check.scoring is not None
    assert "ERROR: test_empty" in no_check.scoring.stderr
    assert "IndexError" in no_check.scoring.stderr

    # Nothing changed yet; each attempt waits in its fork, as it left it.
    assert fs.read("stats.py").content == STUB
    assert box.trials() == [trial]
    assert sorted(box.tries()) == ["try-1", "try-2", "try-3"]
    for attempt, fork, candidate in zip(trial.attempts, forks, CANDIDATES, strict=True):
        assert attempt.path == str(fork)
        assert (fork / "stats.py").read_text() == candidate

    host: Trials = box  # what the tools take (mypy checks that a sandbox is one)
    merged = host.accept_attempt("try-2")
    assert merged.applied
    assert merged.changed == ("stats.py",)
    assert fs.read("stats.py").content == CORRECT
    assert not fs.exists("__pycache__")  # the score's writes stayed in the fork
    assert not fs.exists(".started")
    assert box.tries() == {}
    assert not any(fork.exists() for fork in forks)
    (decided,) = box.trials()
    assert decided.state == "accepted"
    assert decided.accepted is not None
    assert decided.accepted.id == "try-2"
    assert [a.state for a in decided.attempts] == ["rejected", "accepted", "rejected"]
    assert [a.path for a in decided.attempts] == [None, None, None]
    assert box.exec(SCORE).exit_code == 0  # the workspace passes its tests now

    with pytest.raises(NotFoundError):
        box.accept_attempt("try-1")  # decided with its trial


def test_the_score_may_be_a_number_and_a_timeout_fails_an_attempt(box: PodmanSandbox) -> None:
    trial = box.best_of(
        ["echo 3 > n", "echo 7 > n", "echo 9 > n; sleep 60"], score="cat n", timeout=2
    )
    slow = trial.attempts[2]
    assert slow.run.timed_out
    assert not slow.passed
    assert [a.score for a in trial.attempts[:2]] == [3.0, 7.0]
    assert trial.best is not None
    assert trial.best.id == "try-2"
    assert slow.changes.added == ("n",)  # what it did before its time ran out
    box.drop_trial(trial.id)


def test_accept_merges_what_the_workspace_got_meanwhile_or_holds_a_conflict(
    box: PodmanSandbox,
) -> None:
    fs = box.filesystem
    fs.write("notes.txt", "a\n")
    trial = box.best_of(["echo b >> notes.txt", "echo c >> notes.txt"])
    assert [a.passed for a in trial.attempts] == [True, True]
    fs.write("notes.txt", "a\nmine\n")  # the same line, meanwhile
    refused = box.accept_attempt("try-1")
    assert not refused.applied
    assert [c.path for c in refused.conflicts] == ["notes.txt"]
    assert fs.read("notes.txt").content == "a\nmine\n"
    assert sorted(box.tries()) == ["try-1", "try-2"]  # every attempt still pending

    held = box.accept_attempt("try-2", hold=True)
    assert held.held is not None
    assert held.held.unresolved == ("notes.txt",)
    assert sorted(box.tries()) == ["try-2"]  # the choice is made: the other is dropped
    assert fs.read("notes.txt").content == "a\nmine\n"
    WorkspaceMerges.of(fs).continue_merge(choose={"notes.txt": "theirs"})
    assert fs.read("notes.txt").content == "a\nc\n"
    (decided,) = box.trials()
    assert decided.state == "accepted"
    assert [a.state for a in decided.attempts] == ["rejected", "accepted"]


def test_drop_leaves_the_workspace_as_it_was(box: PodmanSandbox) -> None:
    fs = box.filesystem
    trial = box.best_of(["echo one > stats.py", "rm stats.py"], score="false")
    assert trial.best is None  # nothing passed
    assert [a.score for a in trial.attempts] == [0.0, 0.0]
    dropped = box.drop_trial(trial.id)
    assert dropped.state == "dropped"
    assert [a.state for a in dropped.attempts] == ["rejected", "rejected"]
    assert fs.read("stats.py").content == STUB
    assert box.tries() == {}
    assert not os.path.exists(os.path.join(box.mountpoint, ".forks", "try-1"))
    with pytest.raises(InvalidArgumentError, match="decided already"):
        box.drop_trial(trial.id)
    with pytest.raises(NotFoundError):
        box.drop_trial("trial-9")


@pytest.mark.parametrize(
    ("commands", "message"),
    [
        ([], "1 to 16 commands"),
        (["true"] * (MAX_PENDING_TRIES + 1), "1 to 16 commands"),
        ("true", "a list of command lines"),
        (["true", "  "], "non-empty string"),
        (["true", "a\0b"], "without NUL"),
        (["true", 7], "every command must be a string"),
    ],
)
def test_bad_commands_are_refused_and_change_nothing(
    box: PodmanSandbox, commands: object, message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        box.best_of(commands)  # type: ignore[arg-type]
    assert box.tries() == {}
    assert box.trials() == []
    assert not os.path.exists(os.path.join(box.mountpoint, ".forks", "try-1"))


def test_more_attempts_than_may_wait_are_refused(box: PodmanSandbox) -> None:
    run = box.try_exec("true")
    with pytest.raises(BusyError, match="at most 16"):
        box.best_of(["true"] * MAX_PENDING_TRIES)
    assert box.tries() == {run.id: run}
    with pytest.raises(InvalidArgumentError, match="timeout must be positive"):
        box.best_of(["true"], timeout=0)
    run.reject()


def test_close_drops_the_pending_attempts() -> None:
    fs = InMemoryFilesystem(mount_point="/workspace")
    with closed_cleanly(PodmanSandbox(fs)) as box:
        box.best_of(["echo x > x", "echo y > y"])
        mountpoint = box.mountpoint
    assert not os.path.exists(mountpoint)
    assert not fs.exists("x")
    assert not fs.exists("y")
