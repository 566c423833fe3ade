"""``/api/trials``: a live workspace's best-of-N trials as the page reads them; none for
targets that run no trial."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from workspacefs import InMemoryFilesystem
from workspacefs.archive import ArchiveSnapshots
from workspacefs.debug import LiveTarget, open_target
from workspacefs.fs import Attempt, CommandOutcome, FilesystemDiff, Trial

from .conftest import client_for, json_of


def trial(passed: tuple[bool, ...]) -> Trial:
    attempts = tuple(
        Attempt(
            id=f"try-{n}",
            number=n,
            run=CommandOutcome(f"patch {n}", 0, False, 0.25, "", ""),
            changes=FilesystemDiff(modified=("stats.py",)),
            scoring=CommandOutcome("make test", 0 if ok else 1, False, 0.5, "", "FAILED\n"),
            score=1.0 if ok else 0.0,
            passed=ok,
            state="pending",
            path=f"/ws/.forks/try-{n}",
        )
        for n, ok in enumerate(passed, 1)
    )
    return Trial("trial-1", attempts, "make test", datetime.now(UTC), 1.5, "pending")


def test_a_live_workspace_lists_its_trials_and_the_best_of_each() -> None:
    fs = InMemoryFilesystem()
    fs.snapshot()
    ran = [trial((False, True, False))]
    with client_for(LiveTarget(fs, trials=lambda: ran)) as client:
        answer = json_of(client.get("/api/trials"))
        assert answer["available"] is True
        (shown,) = answer["trials"]
        assert shown["best"] == "try-2"
        assert [a["passed"] for a in shown["attempts"]] == [False, True, False]
        assert shown["attempts"][0]["scoring"]["stderr"] == "FAILED\n"
        ran.append(trial((False,)))  # read anew on every request
        assert [t["best"] for t in json_of(client.get("/api/trials"))["trials"]] == [
            "try-2",
            None,
        ]


def test_targets_that_run_no_trial_say_so(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "a\n")
    fs.snapshot()
    with client_for(LiveTarget(fs)) as client:  # an in-memory workspace has no trials
        assert json_of(client.get("/api/trials")) == {"available": False, "trials": []}
    ArchiveSnapshots(fs, tmp_path / "archives").snapshot("one")
    with client_for(open_target(tmp_path / "archives")) as client:
        assert json_of(client.get("/api/trials")) == {"available": False, "trials": []}
