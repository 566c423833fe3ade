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
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from support import logs
from support.consistency import check_consistent
from support.daemon import SOURCE_ROOT, cli_json, stop
from support.polling import eventually
from workspacefs import connect
from workspacefs.daemon import MountRecord
from workspacefs.fuse import fuse_mounts, is_stale
from workspacefs.store import Durability, open_workspace

from .history import History, O, S, Step, recovered_step

SLACK = 1.0
"""Seconds past the interval a change may still be on its way to the disk under
``interval`` (the journal thread's own write and fdatasync, a busy machine)."""

STEP_TIMEOUT = 60.0
"""Seconds a workload may take to reach its kill point, or to stop after the kill."""

LONG_FORM = pytest.mark.skipif(
    "WORKSPACEFS_CRASH_KILLS" not in os.environ,
    reason="the long form: set WORKSPACEFS_CRASH_KILLS (60 kills take a few minutes)",
)
"""The long forms run where asked (``scripts/test.sh`` and CI run the short ones)."""


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

    def interrupt_resume(self, delay: float) -> None:
        """Start resuming it, and SIGKILL the new daemon ``delay`` seconds after it took
        the store (while it replays the journal, cuts a torn tail off, mounts, or
        serves already); detach what it left. What comes back later must not differ."""
        assert self.record is not None
        lock, dead = self.store / "lock", self.record.pid

        def taker() -> int | None:  # the pid the new daemon wrote (no flock: it would race)
            text = lock.read_text().strip()
            return int(text) if text.isdigit() and int(text) != dead else None

        command = [sys.executable, "-m", "workspacefs.cli", "mount", str(self.mountpoint),
                   "--name", self.name, *self.options]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
        with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL):  # fmt: skip
            eventually(
                lambda: taker() is not None, 60, "the new daemon took the store", interval=0.001
            )
            pid = taker()
            assert pid is not None
            time.sleep(delay)
            os.kill(pid, signal.SIGKILL)
        point = str(self.mountpoint)
        eventually(lambda: is_stale(point) or point not in fuse_mounts(), 10, "it died")
        if is_stale(point):
            subprocess.run(["fusermount3", "-uz", point], capture_output=True, check=False)
        logs.ERRORS.add(logs.daemon_logged(self.record.log, pid))

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

    def keep_evidence(self) -> str:
        """Copy the store and the daemons' log to a directory of their own (for a
        failure to point at: pytest's directories go); its path."""
        assert self.record is not None
        kept = tempfile.mkdtemp(prefix="wsfs-crash-failed-")
        shutil.copytree(self.store, os.path.join(kept, "store"))
        with contextlib.suppress(FileNotFoundError):
            shutil.copy(self.record.log, os.path.join(kept, "daemons.log"))
        return kept

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
    acknowledged: int
    required: int
    """The first step it could come back at: ``acknowledged``, or later by the interval."""
    recovered: int
    interrupted: bool
    """The first resume was killed midway."""


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


def crash_loop(
    workspace: Workspace,
    workload: Workload[Any, Any],
    kills: int,
    rng: random.Random,
    interrupted: float = 0.2,
) -> list[Outcome]:
    """Mount ``workspace`` and set ``workload`` up; kill the daemon ``kills`` times
    during rounds of ``workload``, each time resuming the workspace (after a resume
    killed midway, with probability ``interrupted``) and checking what came back (the
    module docstring says what); then unmount it. What each kill found, also printed
    (pytest shows it with a failure)."""
    outcomes = []
    history = workload.history
    workspace.mount()
    try:
        workload.setup(workspace.mountpoint)
        for kill in range(1, kills + 1):
            killed_at, killed_after = kill_during(workspace, workload)
            workspace.check_store()
            interrupting = rng.random() < interrupted
            if interrupting:
                workspace.interrupt_resume(rng.uniform(0, 0.05))
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
                kept = workspace.keep_evidence()
                raise AssertionError(f"kill {kill}: {exc} (store and log kept in {kept})") from None
            outcome = Outcome(
                kill, killed_after, planned, history.acknowledged, required, step, interrupting
            )
            print(outcome)
            outcomes.append(outcome)
            history.recovered(step)
            workload.recovered(workspace.mountpoint, step)
    finally:
        with contextlib.suppress(OSError):
            workspace.stop()
    return outcomes
