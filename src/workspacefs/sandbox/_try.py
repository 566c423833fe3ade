"""Try-run: a command run in a fork of the sandbox's workspace, kept only if accepted.

``PodmanSandbox.try_exec`` forks the workspace (O(1)), adds the fork to the
sandbox's own mount (``<mountpoint>/.forks/try-<n>``) and runs the command
in a container of its own whose ``/workspace`` is that directory: the same
paths, options and root filesystem as the sandbox's container, but nothing
it writes reaches the workspace. The container goes when the command ends, and
what it left is frozen then (``result.after``, the state the decision is
about); the fork waits, mounted, for a decision:

* ``accept`` brings the workspace to the fork's state. If the workspace has
  not changed since the fork (the usual case: nobody else wrote meanwhile),
  that is a fast-forward, O(1) plus what changed: the workspace adopts the
  fork's tree. Otherwise the fork is merged three-way
  (``workspacefs.git.merge``), which keeps what was written to the workspace
  meanwhile; a conflict applies nothing, and the try stays pending. With
  ``hold``, a conflicting merge is held open instead
  (``workspacefs.git.WorkspaceMerges``): continuing it accepts the try,
  aborting it leaves the try pending.
* ``reject`` drops the fork.

Either way a snapshot of the workspace is taken first, so an accept can be
undone with ``restore``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .._errors import BackendUnavailableError, InvalidArgumentError, NotFoundError
from ..fs import InMemoryFilesystem
from ..fuse import Mount
from ..git import MergeResult, OpenMerge, WorkspaceMerges
from ._container import Container
from ._exec import CheckedCommand, Completed, caused
from ._result import ExecResult, changes_and_after
from ._rootfs import RootFilesystem
from ._state import remove_state_dir

log = logging.getLogger(__name__)

MAX_PENDING_TRIES = 16
"""Tries a sandbox (or a daemon) keeps waiting for a decision; more are refused."""

TryState = Literal["pending", "accepted", "rejected"]
"""Where a try stands: waiting for a decision, or decided."""


class TryRun:
    """A command that ran in a fork of a sandbox's workspace, waiting for a decision.

    Made by ``PodmanSandbox.try_exec``. As a context manager it rejects on
    exit unless ``accept`` or ``reject`` was called.

    Attributes:
        id: Names the try (``try-<n>``): its fork on the sandbox's mount and
            what the ``accept_try``/``reject_try`` tools take.
        result: How the command went, and in ``changes`` what it would change
            (the diff from the fork point to its end). ``before`` and ``after``
            are snapshots of the fork, not of the workspace; ``after`` is what
            ``accept`` applies.
        filesystem: The fork the command ran in, to look at (a process the
            command left behind may write there until its container is
            removed, just after; ``accept`` applies ``result.after`` all the same).
        path: The fork's directory on the host while the try is pending.
    """

    def __init__(
        self,
        try_id: str,
        result: ExecResult,
        fork: InMemoryFilesystem,
        origin: InMemoryFilesystem,
        path: str,
        release: Callable[[TryRun], None],
    ) -> None:
        self.id = try_id
        self.result = result
        self.filesystem = fork
        self.path = path
        self._origin = origin
        self._release = release
        self._state: TryState = "pending"
        self._lock = threading.Lock()
        self._held: OpenMerge | None = None

    @property
    def state(self) -> TryState:
        """``pending`` until ``accept`` applied it or ``reject`` (or the sandbox's close)
        dropped it."""
        return self._state

    def accept(self, *, hold: bool = False) -> MergeResult:
        """Bring the workspace to the fork's state; the fork then goes.

        A fast-forward if the workspace has not changed since the fork (O(1)
        plus what changed), else a three-way merge that keeps what the
        workspace got meanwhile. Either way ``snapshot`` of the result is the
        workspace just before (restore it to undo), and ``changed`` lists the
        paths the workspace got from the try.

        Args:
            hold: Hold a merge with conflicts open (``result.held``; the
                workspace's ``WorkspaceMerges``): once it is continued the try
                is accepted, aborted it stays pending.

        Returns:
            The merge's result. With conflicts nothing is applied
            (``applied`` False) and the try stays pending: ``reject`` it, or
            change the fork (``filesystem``) or the workspace and accept again.

        Raises:
            InvalidArgumentError: The try was decided already.
            BusyError: ``hold``, and a merge is held open already.
        """
        with self._lock:
            self._check_pending()
            origin = self._origin
            # Exactly what was reported: the fork as the command left it.
            reported = self.filesystem.fork(self.result.after)
            # No write slips in between the snapshot, the check and the diff, which
            # then names what the try changed and nothing written just after.
            with origin.tree.lock:
                before = origin.snapshot(tag=f"before-{self.id}")
                fast = origin.fast_forward(reported)
                if fast:
                    diff = origin.diff(before)
                else:
                    origin.delete_snapshot(before)
            if fast:
                changed = tuple(sorted({*diff.added, *diff.modified, *diff.deleted}))
                outcome = MergeResult(changed, (), applied=True, snapshot=before)
            else:
                merges = WorkspaceMerges.of(origin)
                outcome = merges.merge(
                    reported, base=self.filesystem.fork_point, hold=hold, source=self.id
                )
                if outcome.held is not None and merges.open is not None:
                    self._held = merges.open
                    self._held.on_close(self._merge_closed)
                if outcome.conflicts:
                    return outcome  # a merge with nothing to change accepts, as one applied
            self._state = "accepted"
        self._release(self)
        log.info(
            "%s accepted (%s): %d paths",
            self.id,
            "fast-forward" if fast else "merged",
            len(outcome.changed),
        )
        return outcome

    def _merge_closed(self, continued: bool) -> None:
        """Its merge held open was continued (the try is accepted) or aborted."""
        with self._lock:
            self._held = None
            if not continued or self._state != "pending":
                return
            self._state = "accepted"
        self._release(self)
        log.info("%s accepted: its merge held open was continued", self.id)

    def reject(self) -> None:
        """Drop the fork (and a merge of it held open): the workspace stays as it is.

        Raises:
            InvalidArgumentError: The try was decided already.
        """
        with self._lock:
            self._check_pending()
            self._state = "rejected"
        self._abort_held()
        self._release(self)

    def drop(self) -> None:
        """Reject it if it is still pending (the sandbox's close does this)."""
        with self._lock:
            if self._state != "pending":
                return
            self._state = "rejected"
        self._abort_held()
        self._release(self)

    def _abort_held(self) -> None:
        held = self._held
        if held is not None and held.is_open:
            with contextlib.suppress(NotFoundError):  # continued or aborted meanwhile
                held.abort()

    def _check_pending(self) -> None:
        if self._state != "pending":
            raise InvalidArgumentError(f"{self.id} was {self._state} already", None)

    def __enter__(self) -> TryRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.drop()

    def __repr__(self) -> str:
        return f"<TryRun {self.id} {self._state}, exit {self.result.exit_code}>"


@dataclass(frozen=True, slots=True)
class TrySite:
    """Where tries run: what ``start`` needs besides the command.

    Attributes:
        origin: The workspace the tries are forks of (what ``accept`` changes).
        mount: Serves the tries' forks (the workspace's own mount).
        root: The root filesystem each try's container starts on a branch of.
        run_args: ``podman run``'s arguments for (container name, fork path, root).
        state: A private directory; each try's goes in it, named by its id.
        prefix: Each try's container is named ``<prefix>-<try id>``.
        later: Runs a try's cleanup once its command (and score) ended.
        release: Called with a try once it is decided (its fork leaves the mount).
    """

    origin: InMemoryFilesystem
    mount: Mount
    root: RootFilesystem
    run_args: Callable[[str, str, RootFilesystem], list[str]]
    state: str
    prefix: str
    later: Callable[[Callable[[], None]], None]
    release: Callable[[TryRun], None]

    def start(
        self,
        try_id: str,
        fork: InMemoryFilesystem,
        command: CheckedCommand,
        score: CheckedCommand | None = None,
    ) -> tuple[TryRun, Completed | None]:
        """Run ``command`` (then ``score``) in ``fork``, a fork of ``origin`` (``run_try``);
        the try, pending, and how ``score`` went. What the commands write is attributed
        to the try (``caused``)."""
        result, path, scored = run_try(
            try_id,
            f"{self.prefix}-{try_id}",
            fork,
            self.mount,
            self.root,
            self.run_args,
            os.path.join(self.state, try_id),
            caused(command, try_id),
            self.later,
            score=None if score is None else caused(score, try_id),
        )
        return TryRun(try_id, result, fork, self.origin, path, self.release), scored


def run_try(
    try_id: str,
    container_name: str,
    fork: InMemoryFilesystem,
    mount: Mount,
    root: RootFilesystem,
    run_args: Callable[[str, str, RootFilesystem], list[str]],
    state: str,
    command: CheckedCommand,
    later: Callable[[Callable[[], None]], None],
    *,
    score: CheckedCommand | None = None,
) -> tuple[ExecResult, str, Completed | None]:
    """Serve ``fork`` (a fork of the workspace) on ``mount`` as ``try_id`` and run
    ``command`` in a container of its own; (its result, the fork's path, how ``score``
    went).

    The container ``container_name`` starts on ``root.branch`` (its files in
    the new directory ``state``), with ``run_args(container name, fork path,
    root)``. Once the command has ended, what it left is frozen (``after``) and
    ``score``, if given, runs in the same container and fork: what it writes is
    not part of the result. Then the container, the branch and ``state`` are
    removed by ``later(cleanup)`` (in the background: removing a container
    costs a Podman call, and what the try reports, ``after``, is frozen
    already). On any error they go at once, and the fork leaves the mount too.
    """
    path = mount.add_fork(try_id, fork)
    cleanups: list[Callable[[], object]] = []

    def clean_up() -> None:
        for cleanup in reversed(cleanups):
            cleanup()

    try:
        before = fork.snapshot(tag=f"{try_id}-before")
        os.mkdir(state, 0o700)
        cleanups.append(lambda: remove_state_dir(state))
        branch = root.branch(state)
        cleanups.append(branch.close)
        log_path = os.path.join(state, "podman-run.log")
        container = Container(container_name, run_args(container_name, path, branch), log_path)
        cleanups.append(container.stop)
        done = command.run(container)
        _check_running(container)
        changes, after = changes_and_after(fork, before, f"{try_id}-after")
        scored = None
        if score is not None:
            scored = score.run(container)
            _check_running(container)
    except BaseException:
        try:
            clean_up()
        finally:
            with contextlib.suppress(OSError):  # the mount stopped serving meanwhile
                mount.remove_fork(try_id)
        raise
    later(clean_up)
    result = ExecResult.of(done, changes, before=before, after=after)
    return result, path, scored


def _check_running(container: Container) -> None:
    """A command that took its container down is an error, not a result."""
    if not container.running:
        raise BackendUnavailableError(f"the try's container stopped: {container.log()}", None)
