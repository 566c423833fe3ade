"""What a workload did, step by step, and which step a recovered workspace is at.

A ``History`` holds the state after each step (or what checking it needs), when
each step was seen to end, and the last step a durability point acknowledged;
``recovered_step`` finds the step an observed state is, within what the contract
allows (see ``harness``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S")
O = TypeVar("O")  # noqa: E741 (what a workload observes)


@dataclass
class Step(Generic[S]):
    """One state a workload reaches."""

    state: S
    touched: frozenset[str] = frozenset()
    """Paths the step writes in more than one request: a kill may catch them midway."""
    ended: float | None = None
    """When the step was seen to end (``time.monotonic``; None: not seen)."""


class History(Generic[S]):
    """The steps of a workload, across kills: ``steps[0]`` is where it began."""

    def __init__(self, initial: S) -> None:
        self.steps: list[Step[S]] = [Step(initial, ended=-math.inf)]
        self.acknowledged = 0
        """The last step a durability point acknowledged."""
        self.last_ended = 0
        self._changed = threading.Condition()
        self._finished = False

    @property
    def state(self) -> S:
        """The state after the last step planned."""
        return self.steps[-1].state

    def plan(self, state: S, touched: Sequence[str] = ()) -> int:
        """A step the workload is about to run; its number."""
        self.steps.append(Step(state, frozenset(touched)))
        return len(self.steps) - 1

    def end(self, through: int | None = None) -> None:
        """Steps up to ``through`` (default: every one planned) have ended."""
        through = len(self.steps) - 1 if through is None else through
        now = time.monotonic()
        with self._changed:
            for step in self.steps[self.last_ended + 1 : through + 1]:
                step.ended = now
            self.last_ended = max(self.last_ended, through)
            self._changed.notify_all()

    def acknowledge(self, through: int | None = None) -> None:
        """A durability point returned: steps up to ``through`` (default: every one
        ended before it) are on disk."""
        self.acknowledged = max(self.acknowledged, self.last_ended if through is None else through)

    def finish(self) -> None:
        """The workload's round stopped (done, or the daemon is gone)."""
        with self._changed:
            self._finished = True
            self._changed.notify_all()

    def wait_ended(self, step: int, timeout: float) -> None:
        """Return once ``step`` has ended or the round stopped."""
        with self._changed:
            self._changed.wait_for(lambda: self.last_ended >= step or self._finished, timeout)

    def restart(self) -> None:
        """A new round begins."""
        with self._changed:
            self._finished = False

    def required(self, killed_at: float, window: float | None) -> int:
        """The first step a recovery may come back at: the last acknowledged one, or
        under ``interval`` (``window``: the interval plus slack) a later one that ended
        longer than the window before the kill."""
        required = self.acknowledged
        if window is not None:
            for number, step in enumerate(self.steps):
                if step.ended is not None and step.ended < killed_at - window:
                    required = max(required, number)
        return required

    def recovered(self, step: int) -> None:
        """The workspace came back at ``step``: later steps never happened, and it is on
        disk (the journal it was replayed from holds it)."""
        del self.steps[step + 1 :]
        self.acknowledged = self.last_ended = step


Matches = Callable[[O, Step[S], Step[S] | None], bool]
"""Whether what was observed is a step's state (the following step may be midway)."""


def recovered_step(
    history: History[S],
    observed: O,
    matches: Matches[O, S],
    killed_at: float,
    window: float | None,
    describe: Callable[[O, S], str] = lambda observed, state: "",
) -> int:
    """The step the recovered workspace is at, checked as the module says."""
    low = history.required(killed_at, window)
    steps = history.steps
    for number in range(len(steps) - 1, low - 1, -1):
        following = steps[number + 1] if number + 1 < len(steps) else None
        if matches(observed, steps[number], following):
            return number
    earlier = [
        n
        for n in range(low)
        if matches(observed, steps[n], steps[n + 1] if n + 1 < len(steps) else None)
    ]
    why = (
        f"acknowledged work lost: the state after step {earlier[-1]}"
        if earlier
        else "the state after no step"
    )
    raise AssertionError(
        f"recovered {why}; expected one of steps {low}..{len(steps) - 1} "
        f"(acknowledged {history.acknowledged}, ended {history.last_ended}); "
        f"against step {low}: {describe(observed, steps[low].state)}"
    )
