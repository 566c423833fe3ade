"""The crash harness (after CrashMonkey and ALICE): run a workload on a named
workspace's mount, SIGKILL its daemon at a random point, detach the dead mount
(``fusermount3 -uz``), resume the workspace with ``workspacefs mount --name``, and
check what came back against what the workload recorded.

A workload records its steps in a ``History``: the state after each step (or what
checking it needs), when each step was seen to end, and the last step a durability
point acknowledged (an fsync, a snapshot, a sqlite commit; every step that ended,
under ``always``). After a kill the workspace must be the state after some step k:

- k at or after the last acknowledged step (nothing promised is lost);
- under ``interval``, k at or after every step that ended more than the interval
  plus ``SLACK`` before the kill;
- k at most the last step planned (begun or about to be);

and exactly that state, except that a path step k+1 writes in several requests
(``Step.touched``) may be caught midway: as before, absent, or a prefix of what the
step wrote. Never a mix of two states, never a torn file.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from support import logs
from support.consistency import check_consistent
from support.daemon import cli_json, stop
from support.polling import eventually
from workspacefs import connect
from workspacefs.daemon import MountRecord
from workspacefs.fuse import is_stale
from workspacefs.store import Durability, open_workspace

S = TypeVar("S")
O = TypeVar("O")  # noqa: E741 (what a workload observes)

SLACK = 1.0
"""Seconds past the interval a change may still be on its way to the disk under
``interval`` (the journal thread's own write and fdatasync, a busy machine)."""

STEP_TIMEOUT = 60.0
"""Seconds a workload may take to reach its kill point, or to stop after the kill."""


# -- what a workload recorded ------------------------------------------------------------


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


# -- file trees --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Directory:
    """A directory (its entries are paths of their own)."""


@dataclass(frozen=True, slots=True)
class Link:
    """A symbolic link."""

    target: str


Entry = bytes | Directory | Link
Files = dict[str, Entry]
"""A file tree: relative path -> what is there."""

DIRECTORY = Directory()


def read_files(root: Path, skip: Sequence[str] = ()) -> Files:
    """Every path under ``root``, as it serves it (``skip``: top-level names left out)."""
    found: Files = {}
    for directory, names, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        if relative == ".":
            names[:] = [name for name in names if name not in skip]
            files = [name for name in files if name not in skip]
        for name in names + files:
            path = os.path.normpath(os.path.join(relative, name))
            full = os.path.join(directory, name)
            info = os.lstat(full)
            if stat.S_ISDIR(info.st_mode):
                found[path] = DIRECTORY
            elif stat.S_ISLNK(info.st_mode):
                found[path] = Link(os.readlink(full))
            else:
                with open(full, "rb") as handle:
                    found[path] = handle.read()
    return found


def _midway(found: Entry | None, before: Entry | None, after: Entry | None) -> bool:
    """Whether a path a step writes may read ``found`` while the step runs: as before,
    absent, or part of what the step writes."""
    if found is None or found in (before, after):
        return True
    return isinstance(found, bytes) and isinstance(after, bytes) and after.startswith(found)


def files_match(observed: Files, step: Step[Files], following: Step[Files] | None) -> bool:
    """Whether ``observed`` is ``step``'s tree, with ``following``'s paths maybe midway."""
    state = step.state
    touched = frozenset() if following is None else following.touched
    if any(observed.get(p) != state.get(p) for p in (observed.keys() | state.keys()) - touched):
        return False
    after = {} if following is None else following.state
    return all(_midway(observed.get(p), state.get(p), after.get(p)) for p in touched)


def describe_files(observed: Files, state: Files) -> str:
    """What differs between two trees, briefly."""
    lines = []
    for path in sorted(observed.keys() | state.keys()):
        found, wanted = observed.get(path), state.get(path)
        if found != wanted:
            lines.append(f"{path}: {_brief(found)}, expected {_brief(wanted)}")
    return "; ".join(lines[:8]) + (f" (and {len(lines) - 8} more)" if len(lines) > 8 else "")


def _brief(entry: Entry | None) -> str:
    if isinstance(entry, bytes):
        return f"{len(entry)} bytes {entry[:24]!r}"
    return "absent" if entry is None else repr(entry)


# -- the workspace, killed and resumed ---------------------------------------------------


class Workspace:
    """A named workspace served through the command line: mounted, SIGKILLed, detached
    and resumed.

    Args:
        mountpoint: Where it is mounted (outside pytest's directories: a dead mount
            there would be detached by any pytest session starting meanwhile).
        name: Its name.
        options: Further ``workspacefs mount`` options (its durability policy).
    """

    def __init__(self, mountpoint: Path, name: str, *options: str) -> None:
        self.mountpoint = mountpoint
        self.name = name
        self.options = options
        self.record: MountRecord | None = None
        self.kills = 0

    @property
    def window(self) -> float | None:
        """Under ``interval``, how old a change may be and still be lost (None: other
        policies promise nothing by time)."""
        policy = dict(zip(self.options[::2], self.options[1::2], strict=False))
        if policy.get("--durability", "interval") != "interval":
            return None
        return float(policy.get("--interval", "1")) + SLACK

    @property
    def store(self) -> Path:
        assert self.record is not None
        assert self.record.store is not None
        return Path(self.record.store)

    def mount(self) -> MountRecord:
        """Mount (the first time) or resume it; a resumed journal may end torn (the kill
        cut its last record short), never damaged."""
        self.mountpoint.mkdir(exist_ok=True)
        found = cli_json("mount", str(self.mountpoint), "--name", self.name, *self.options)
        assert isinstance(found, dict)
        self.record = MountRecord.from_dict(found)
        with connect(self.mountpoint) as fs:
            journal = fs.status()["journal"]
        damage = journal["damage"]
        assert damage is None or damage["torn"], f"kill {self.kills}: journal damaged: {damage}"
        return self.record

    def kill(self) -> float:
        """SIGKILL the daemon; when."""
        assert self.record is not None
        killed_at = time.monotonic()
        os.kill(self.record.pid, signal.SIGKILL)
        self.kills += 1
        return killed_at

    def detach(self) -> None:
        """Detach the dead daemon's mount, as ``doctor --fix`` would; what the daemon
        logged as errors before it died goes to the log guard."""
        assert self.record is not None
        eventually(lambda: is_stale(str(self.mountpoint)), 10, "the killed daemon's mount is dead")
        subprocess.run(
            ["fusermount3", "-uz", str(self.mountpoint)], capture_output=True, check=False
        )
        logs.ERRORS.add(logs.daemon_logged(self.record.log, self.record.pid))

    def check_store(self) -> None:
        """The tree a copy of the store replays to keeps every invariant of a tree
        (``support.consistency``), and its journal ends at most torn."""
        with tempfile.TemporaryDirectory(prefix="wsfs-crash-store-") as scratch:
            copy = os.path.join(scratch, "store")
            shutil.copytree(self.store, copy)
            durable, recovery = open_workspace(copy, durability=Durability.REQUESTED)
            with durable:
                assert not recovery.lost_records, f"kill {self.kills}: {recovery.damage}"
                with durable.fs.tree.lock:
                    check_consistent(durable.fs.tree)

    def stop(self) -> None:
        """Unmount it (the store stays)."""
        if self.record is not None:
            stop(self.record)


class Workload(Protocol[O, S]):
    """What the harness runs: rounds of steps recorded in ``history``."""

    history: History[S]

    def setup(self, mountpoint: Path) -> None:
        """Prepare the new workspace (mounted, not yet killed)."""

    def round(self, mountpoint: Path) -> None:
        """Run steps until the round is done; return early when the daemon is gone
        (its error is raised, or swallowed: the harness knows when it killed it)."""

    def kill_point(self) -> tuple[int, float]:
        """Where to kill in the next round: once this step has ended, after this many
        seconds."""

    def observe(self, mountpoint: Path) -> O:
        """What the resumed workspace holds, as ``matches`` compares it."""

    def matches(self, observed: O, step: Step[S], following: Step[S] | None) -> bool:
        """Whether ``observed`` is ``step``'s state (see ``Matches``)."""

    def describe(self, observed: O, state: S) -> str:
        """How ``observed`` differs from ``state``, for a failure."""

    def recovered(self, mountpoint: Path, step: int) -> None:
        """After the workspace came back at ``step``: further checks (snapshots,
        fsck), and whatever the next round needs."""


@dataclass
class Outcome:
    """One kill and what came back."""

    kill: int
    killed_after: int
    """The last step seen ended when the daemon was killed."""
    planned: int
    required: int
    recovered: int


@dataclass
class _Round:
    error: BaseException | None = None
    failed_at: float = math.inf
    done: threading.Event = field(default_factory=threading.Event)


def _run_round(workload: Workload[Any, Any], mountpoint: Path, outcome: _Round) -> None:
    try:
        workload.round(mountpoint)
    except BaseException as exc:  # the daemon died under it, or a defect: decided by when
        outcome.failed_at = time.monotonic()
        outcome.error = exc
    finally:
        workload.history.finish()
        outcome.done.set()


def kill_during(workspace: Workspace, workload: Workload[Any, Any]) -> tuple[float, int]:
    """Run one round of ``workload`` and SIGKILL the daemon at its kill point; once the
    round stopped, detach the mount. When the kill was, and the last step ended then.

    Raises:
        BaseException: What the round raised before the kill (a defect: the daemon
            was alive).
    """
    history = workload.history
    step, delay = workload.kill_point()
    history.restart()
    outcome = _Round()
    runner = threading.Thread(
        target=_run_round, args=(workload, workspace.mountpoint, outcome), daemon=True
    )
    runner.start()
    history.wait_ended(step, STEP_TIMEOUT)
    time.sleep(delay)
    killed_after = history.last_ended
    killed_at = workspace.kill()
    if not outcome.done.wait(STEP_TIMEOUT):
        raise AssertionError(f"the workload did not stop within {STEP_TIMEOUT} s of the kill")
    workspace.detach()
    if outcome.error is not None and outcome.failed_at < killed_at:
        raise outcome.error
    return killed_at, killed_after


def crash_loop(workspace: Workspace, workload: Workload[Any, Any], kills: int) -> list[Outcome]:
    """Mount ``workspace`` and set ``workload`` up; kill the daemon ``kills`` times
    during rounds of ``workload``, each time resuming the workspace and checking what
    came back (the module docstring says what); then unmount it. What each kill found,
    also printed (pytest shows it with a failure)."""
    outcomes = []
    history = workload.history
    workspace.mount()
    try:
        workload.setup(workspace.mountpoint)
        for kill in range(1, kills + 1):
            killed_at, killed_after = kill_during(workspace, workload)
            workspace.check_store()
            workspace.mount()
            observed = workload.observe(workspace.mountpoint)
            required = history.required(killed_at, workspace.window)
            planned = len(history.steps) - 1
            try:
                step = recovered_step(
                    history, observed, workload.matches, killed_at, workspace.window,
                    workload.describe,
                )  # fmt: skip
            except AssertionError as exc:
                raise AssertionError(f"kill {kill}: {exc}") from None
            outcome = Outcome(kill, killed_after, planned, required, step)
            print(outcome)
            outcomes.append(outcome)
            history.recovered(step)
            workload.recovered(workspace.mountpoint, step)
    finally:
        with contextlib.suppress(OSError):
            workspace.stop()
    return outcomes
