"""``MountTrials``: best-of-N trials on a workspace served by a mount this process holds,
without a sandbox of its own (what a daemon runs for its ``best_of`` verb).

A daemon owns the workspace and its mount; a trial's attempts are tries whose
forks that mount serves, as a sandbox's mount serves its own (``TrySite``).
What a sandbox keeps for its life, a trial here makes for itself: the
options (``SandboxConfig.build``: the defaults of every container the project
starts), a private directory and a root filesystem, all gone once its
containers are (removed in the background once it has answered). Its attempts'
forks stay served until they are decided.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Unpack

from .._errors import BusyError, ReadOnlyError
from ..fs import InMemoryFilesystem, Trial
from ..fuse import Mount
from ..git import MergeResult
from ._config import SandboxConfig, SandboxOptions
from ._exec import CheckedCommand, Completed, check_command
from ._rootfs import RootFilesystem, root_filesystem
from ._run import run_arguments
from ._state import make_state_dir, remove_state_dir
from ._trial import TrialBook, check_commands, run_trial
from ._try import MAX_PENDING_TRIES, TryRun, TrySite

log = logging.getLogger(__name__)


class MountTrials:
    """The trials of ``origin``, whose forks ``mount`` serves.

    Trials run one at a time (a second waits for the first); the attempts of
    each run at once.

    Args:
        origin: The workspace (what an accepted attempt changes).
        mount: Its mount, which serves the attempts' forks at
            ``<mountpoint>/.forks/<try id>``.
    """

    def __init__(self, origin: InMemoryFilesystem, mount: Mount) -> None:
        self._origin = origin
        self._mount = mount
        self._book = TrialBook()
        self._tries: dict[str, TryRun] = {}  # pending, by id
        self._lock = threading.Lock()
        self._running = threading.Lock()
        self._numbers = itertools.count(1)
        self._cleanups: list[threading.Thread] = []

    def best_of(
        self,
        commands: Sequence[str],
        *,
        score: str | None = None,
        **options: Unpack[SandboxOptions],
    ) -> Trial:
        """Run each command at once in a fork of the workspace and a container of its
        own, then ``score`` after each (see ``PodmanSandbox.best_of``).

        Args:
            commands: The command lines, one per attempt.
            score: The command that scores each attempt, in its fork.
            **options: The containers' options, as ``PodmanSandbox`` takes them
                (``image``, ``rootfs``, ``memory``...; ``timeout``: seconds each
                command and score command may run).

        Raises:
            InvalidArgumentError: A bad command or option.
            ReadOnlyError: The workspace is read-only.
            BusyError: The attempts would pass ``MAX_PENDING_TRIES`` pending tries.
            BackendUnavailableError: An attempt's container did not start or
                stopped; the other attempts are dropped.
        """
        if self._origin.read_only:
            raise ReadOnlyError("a read-only workspace accepts no try", None)
        config = SandboxConfig.build(**options)
        checked = [self._check(config, c) for c in check_commands(commands)]
        scoring = None if score is None else self._check(config, score)
        with self._running:
            try_ids = self._reserve(len(checked))
            state = make_state_dir()
            name = os.path.basename(state)
            try:
                root = root_filesystem(
                    config.image, config.rootfs, config.podman_overlay, state, config.disk, name
                )
            except BaseException:
                remove_state_dir(state)
                raise
            cleanups: list[Callable[[], None]] = []
            site = TrySite(
                self._origin,
                self._mount,
                root,
                self._arguments(config),
                state,
                name,
                cleanups.append,  # each try's container, once the trial has ended
                self._release,
            )
            try:
                run = run_trial(
                    self._book.next_id(),
                    try_ids,
                    self._origin,
                    checked,
                    scoring,
                    lambda try_id, fork, command, then: self._start(
                        site, try_id, fork, command, then
                    ),
                )
            finally:
                self._clean_up(cleanups, root, state)
            self._book.add(run)
        return run.report()

    def _clean_up(
        self, cleanups: list[Callable[[], None]], root: RootFilesystem, state: str
    ) -> None:
        """Remove a trial's containers (at once: each is a Podman call), then its root
        filesystem and directory, in the background; ``close`` waits for it."""

        def run() -> None:
            try:
                threads = [threading.Thread(target=cleanup) for cleanup in cleanups]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                root.close()
                remove_state_dir(state)
            except Exception:
                log.exception("cleaning up after a trial failed")

        thread = threading.Thread(target=run, name="trial-cleanup", daemon=True)
        with self._lock:
            self._cleanups = [t for t in self._cleanups if t.is_alive()]
            self._cleanups.append(thread)
        thread.start()

    def _check(self, config: SandboxConfig, command: str) -> CheckedCommand:
        return check_command(config, self._origin, command, None, None, None, None)

    @staticmethod
    def _arguments(config: SandboxConfig) -> Callable[[str, str, RootFilesystem], list[str]]:
        def arguments(name: str, source: str, root: RootFilesystem) -> list[str]:
            return run_arguments(config, name=name, volume=source, read_only=False, root=root)

        return arguments

    def _reserve(self, wanted: int) -> list[str]:
        """Ids for ``wanted`` new tries, free on the mount; BusyError past the limit."""
        with self._lock:
            pending = len(self._tries)
            if pending + wanted > MAX_PENDING_TRIES:
                raise BusyError(
                    f"{pending} tries wait for a decision and at most {MAX_PENDING_TRIES} "
                    "may: accept an attempt or drop a trial first",
                    None,
                )
            taken = {*self._mount.forks(), *self._tries}
            names = (f"try-{n}" for n in self._numbers)
            return list(itertools.islice((n for n in names if n not in taken), wanted))

    def _start(
        self,
        site: TrySite,
        try_id: str,
        fork: InMemoryFilesystem,
        command: CheckedCommand,
        score: CheckedCommand | None,
    ) -> tuple[TryRun, Completed | None]:
        run, scored = site.start(try_id, fork, command, score)
        with self._lock:
            self._tries[try_id] = run
        return run, scored

    def _release(self, run: TryRun) -> None:
        """A try was decided: its fork leaves the mount."""
        with self._lock:
            self._tries.pop(run.id, None)
        with contextlib.suppress(OSError):  # the mount stopped serving
            self._mount.remove_fork(run.id)

    def trials(self) -> list[Trial]:
        """The trials, oldest first: the pending and the last few decided."""
        return self._book.list()

    def accept_attempt(self, attempt_id: str, *, hold: bool = False) -> MergeResult:
        """Accept an attempt and drop its trial's others (``TrialBook.accept``)."""
        return self._book.accept(attempt_id, hold=hold)

    def drop_trial(self, trial_id: str) -> Trial:
        """Drop every attempt of a pending trial (``TrialBook.drop``)."""
        return self._book.drop(trial_id)

    def close(self) -> None:
        """Drop every pending trial, and wait for the containers of the last to go."""
        self._book.drop_all()
        with self._lock:
            threads, self._cleanups = self._cleanups, []
        for thread in threads:
            thread.join()
