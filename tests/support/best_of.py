"""A small project for best-of-N tests: a function, its tests, three candidate changes
(only the second passes), and a barrier that holds every attempt until all run at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

STUB = "def median(values):\n    raise NotImplementedError\n"
TESTS = """import unittest

from stats import median


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_empty(self):
        with self.assertRaises(ValueError):
            median([])
"""
SCORE = "python3 -m unittest -q test_stats"
"""The project's test command: each attempt's score."""

# Three candidate changes: only the second passes the tests.
LOWER_MIDDLE = """def median(values):
    if not values:
        raise ValueError("median of nothing")
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]
"""
CORRECT = """def median(values):
    if not values:
        raise ValueError("median of nothing")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
"""
NO_CHECK = """def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
"""
CANDIDATES = (LOWER_MIDDLE, CORRECT, NO_CHECK)

# Each command first waits until every attempt has started (the test lets them go
# once it sees all of them waiting, each in its own fork): they run at once, or
# not at all. The barrier's files are gone before the change is made.
BARRIER = (
    ": > .started; n=0; until [ -e .go ] || [ $n -ge 1200 ]; do sleep 0.05; n=$((n+1)); "
    "done; [ -e .go ] || exit 99; rm .started .go; "
)


def write_candidate(text: str) -> str:
    return f"cat > stats.py <<'EOF'\n{text}EOF"


PROJECT = {"stats.py": STUB, "test_stats.py": TESTS}


def write_project(directory: Path) -> Path:
    """The project's files in ``directory``; the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in PROJECT.items():
        (directory / name).write_text(text)
    return directory


def attempts() -> list[str]:
    """The three attempts' commands: each waits at the barrier, then writes its candidate."""
    return [BARRIER + write_candidate(candidate) for candidate in CANDIDATES]


def release_when_all_started(paths: list[Path], errors: list[str]) -> threading.Thread:
    """A thread that lets every attempt go once each waits at the barrier."""

    def run() -> None:
        deadline = time.monotonic() + 60
        while not all((path / ".started").exists() for path in paths):
            if time.monotonic() > deadline:
                errors.append("the attempts never all waited at once")
                return
            time.sleep(0.05)
        for path in paths:
            (path / ".go").write_text("")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
