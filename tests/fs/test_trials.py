"""What a best-of-N trial reports: scores, the best attempt, output tails, the JSON form."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from workspacefs.fs import (
    OUTPUT_TAIL,
    Attempt,
    CommandOutcome,
    FilesystemDiff,
    Trial,
    from_json,
    output_tail,
    score_value,
    to_json,
)


def outcome(exit_code: int = 0, stdout: str = "", *, timed_out: bool = False) -> CommandOutcome:
    return CommandOutcome("make test", exit_code, timed_out, 0.5, stdout, "")


@pytest.mark.parametrize(
    ("scoring", "value"),
    [
        (outcome(0, "3 passed in 0.02s\n"), 1.0),  # a test run's last line: its exit status
        (outcome(1, "1 failed, 2 passed\n"), 0.0),
        (outcome(0, "coverage\n0.87\n"), 0.87),  # a number on the last line is the score
        (outcome(0, "  42  \n\n"), 42.0),  # blank lines after it do not count
        (outcome(3, "12\n"), 12.0),  # the number, whatever the status (passed says that)
        (outcome(0, "nan\n"), 1.0),  # not a finite number
        (outcome(0, "inf\n"), 1.0),
        (outcome(0, "1 2\n"), 1.0),  # two numbers are no number
        (outcome(0, "", timed_out=True), 0.0),
    ],
)
def test_a_score_is_the_last_number_printed_else_the_exit_status(
    scoring: CommandOutcome, value: float
) -> None:
    assert score_value(scoring) == value


def test_output_tail_keeps_the_end_from_a_whole_line() -> None:
    assert output_tail("short\n") == "short\n"
    text = "".join(f"line {n:05d}\n" for n in range(2000))  # 22,000 characters
    tail = output_tail(text)
    head, _, kept = tail.partition("\n")
    assert head == f"[... {len(text) - len(kept):,} characters before]"
    assert text.endswith(kept)
    assert kept.startswith("line ")  # a whole line
    assert OUTPUT_TAIL - 12 <= len(kept) <= OUTPUT_TAIL
    one_line = "x" * (OUTPUT_TAIL * 2)  # no line to start at: the last characters
    assert output_tail(one_line).endswith("x" * OUTPUT_TAIL)


def attempt(number: int, score: float, *, passed: bool) -> Attempt:
    run = outcome(0 if passed else 1)
    return Attempt(
        id=f"try-{number}",
        number=number,
        run=run,
        changes=FilesystemDiff(modified=("app.py",), unchanged_count=3),
        scoring=outcome(0 if passed else 1, f"{score}\n"),
        score=score,
        passed=passed,
        state="pending",
        path=f"/mnt/ws/.forks/try-{number}",
    )


def trial(*attempts: Attempt) -> Trial:
    return Trial("trial-1", attempts, "make test", datetime.now(UTC), 1.25, "pending")


def test_the_best_is_the_highest_score_that_passed_the_first_on_a_tie() -> None:
    assert trial(attempt(1, 0.5, passed=True), attempt(2, 0.9, passed=True)).best == attempt(
        2, 0.9, passed=True
    )
    # A failed attempt never wins, whatever its score.
    assert trial(attempt(1, 9.0, passed=False), attempt(2, 0.1, passed=True)).best == attempt(
        2, 0.1, passed=True
    )
    tied = trial(attempt(1, 1.0, passed=True), attempt(2, 1.0, passed=True))
    assert tied.best is not None
    assert tied.best.id == "try-1"
    assert trial(attempt(1, 1.0, passed=False)).best is None
    assert tied.accepted is None
    assert tied.attempt("try-2") == attempt(2, 1.0, passed=True)
    assert tied.attempt("try-3") is None


def test_a_trial_travels_as_json_and_back() -> None:
    sent = trial(attempt(1, 0.5, passed=True), attempt(2, 0.0, passed=False))
    data = to_json(sent, Trial)
    assert data["attempts"][1]["run"]["exit_code"] == 1
    assert data["attempts"][0]["changes"]["modified"] == ["app.py"]
    assert from_json(Trial, data) == sent
