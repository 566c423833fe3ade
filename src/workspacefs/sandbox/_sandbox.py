"""``PodmanSandbox``: an in-memory workspace mounted into one long-lived Podman container.

The workspace's live tree is mounted with FUSE on a private host directory
(or, for a running workspace reached with ``connect()``, its daemon's mount is
used) and bound into the container at ``workdir`` (``/workspace``); the container
runs until the sandbox closes, and each ``exec`` is a request to the runner
it runs (``_container``). The Python API and the container share one tree: a write on either side
is seen by the other at once, and a ``restore`` is seen by the container's
processes on their next system call (files they hold open stay readable: the
tree keeps unlinked inodes the kernel still holds).

pyfuse3 serves one FUSE mount per process, so a process runs one sandbox at
a time; a second one is refused with ``BusyError`` until the first closes.
The sandbox's mount also serves the forks of its try-runs (``try_exec``,
see ``_try``) and of its best-of-N trials (``best_of``, see ``_trial``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Unpack, overload

from .._errors import (
    BackendUnavailableError,
    BusyError,
    InvalidArgumentError,
    NotPermittedError,
    NotSupportedError,
    ReadOnlyError,
)
from ..fs import (
    FilesystemSnapshot,
    InMemoryFilesystem,
    SnapshotableFilesystem,
    Trial,
)
from ..fuse import Mount, mount
from ..git import MergeResult
from ..tools import WorkspaceSnapshots
from ._config import SandboxConfig, SandboxOptions
from ._container import Container
from ._exec import CheckedCommand, Completed, caused, check_command
from ._podman import PodmanError, run_podman
from ._preflight import preflight
from ._result import ExecResult, SandboxSnapshot, SnapshotStrategy, changes_and_after
from ._rootfs import COMMIT_REFUSED, RootFilesystem, root_filesystem
from ._run import run_arguments
from ._state import cleanup_stale, make_state_dir, remove_state_dir
from ._trial import TrialBook, check_commands, run_trial
from ._try import MAX_PENDING_TRIES, TryRun, TrySite

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    # A default (PEP 696) keeps a bare ``PodmanSandbox`` the in-memory kind for type
    # checkers; ``typing``'s own ``TypeVar`` takes one from Python 3.13.
    from typing_extensions import TypeVar

    W = TypeVar("W", bound=SnapshotableFilesystem, default=InMemoryFilesystem)
else:
    from typing import TypeVar

    W = TypeVar("W", bound=SnapshotableFilesystem)

_one_per_process = threading.Lock()
_open: list[str] = []  # the name of the sandbox holding the process's one mount

_exec_numbers: weakref.WeakKeyDictionary[SnapshotableFilesystem, Iterator[int]] = (
    weakref.WeakKeyDictionary()
)
_numbers_lock = threading.Lock()


def _next_exec_number(filesystem: SnapshotableFilesystem) -> int:
    """Numbers for exec snapshot tags, unique per filesystem across its sandboxes."""
    with _numbers_lock:
        numbers = _exec_numbers.setdefault(filesystem, itertools.count(1))
        return next(numbers)


class _Resources:
    """What a sandbox holds, released in reverse order of acquisition.

    The sandbox's finalizer calls ``close`` and must not hold the sandbox
    itself, so everything to release lives here.
    """

    def __init__(self) -> None:
        self.stack = contextlib.ExitStack()
        self.container: Container | None = None
        self.mount: Mount | None = None
        self.tries: dict[str, TryRun] = {}  # pending, by id
        self.tries_lock = threading.Lock()
        self.cleanups: list[threading.Thread] = []  # tries' containers being removed
        self.closed = False

    def later(self, cleanup: Callable[[], None]) -> None:
        """Run ``cleanup`` in the background; ``join_cleanups`` waits for it."""

        def run() -> None:
            try:
                cleanup()
            except Exception:
                log.exception("cleaning up after a try failed")

        thread = threading.Thread(target=run, name="try-cleanup", daemon=True)
        with self.tries_lock:
            self.cleanups = [t for t in self.cleanups if t.is_alive()]
            self.cleanups.append(thread)
        thread.start()

    def join_cleanups(self) -> None:
        """Wait for every background cleanup."""
        with self.tries_lock:
            threads, self.cleanups = self.cleanups, []
        for thread in threads:
            thread.join()

    def end_try(self, run: TryRun) -> None:
        """A try was decided: its fork leaves the mount."""
        with self.tries_lock:
            self.tries.pop(run.id, None)
        if self.mount is not None:
            with contextlib.suppress(OSError):  # the mount stopped serving
                self.mount.remove_fork(run.id)

    def drop_tries(self) -> None:
        """Reject every pending try (before the unmount, which would strand their forks)."""
        with self.tries_lock:
            pending = list(self.tries.values())
        for run in pending:
            run.drop()

    def stop_container(self) -> None:
        if self.container is not None:
            self.container.stop()
            self.container = None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.stack.close()
        except ValueError:
            # mount() restores its SIGTERM handler on exit, which only the main
            # thread may do; everything else has been released by then.
            if threading.current_thread() is threading.main_thread():
                raise
            log.debug("sandbox closed outside the main thread", exc_info=True)


def served_mountpoint(filesystem: object) -> str | None:
    """Where a running workspace (a daemon's, reached with ``connect()``) is mounted,
    or None for any other filesystem."""
    if isinstance(filesystem, InMemoryFilesystem) or not isinstance(
        filesystem, SnapshotableFilesystem
    ):
        return None
    mountpoint = getattr(filesystem, "mountpoint", None)
    return mountpoint if isinstance(mountpoint, str) else None


class PodmanSandbox(Generic[W]):
    """A workspace mounted at ``workdir`` in one long-lived Podman container.

    Use it as a context manager, or call ``close``; it is also closed when
    garbage-collected and at interpreter exit. Closing removes the container,
    the mount and the private directory; the filesystem object lives on.

    Args:
        filesystem: The workspace (default: a new empty one). Its
            ``mount_point`` must equal ``workdir``, so the paths a command
            prints are the paths the API takes. Or a running workspace
            (``connect()``): the container binds its daemon's mount, and this
            process mounts nothing (give the API paths relative to the root);
            such a sandbox runs no try (``try_exec``, ``best_of``: the daemon
            runs trials itself, ``connect(...).best_of``).
        image: A local image to run (never pulled), instead of ``rootfs``.
        rootfs: A host directory to run on, through a copy-on-write overlay
            (never written). Default: the host's ``/``, with the host's own
            state hidden (see ``docs/sandbox.md``). As root the sandbox mounts
            the overlay itself (bounded by ``disk``, and ``container_commit``
            works); a ``:O`` suffix (``"/:O"``), or running as another user,
            leaves it to Podman.
        workdir: Where the workspace appears in the container, and the
            commands' working directory (default ``/workspace``).
        network: Podman's network mode; ``none`` (the default) has only loopback.
        memory: Memory limit of the container (swap is off): bytes or a size
            such as ``"512m"`` (default ``"2g"``).
        cpus: CPUs the container may use (default: 2, or all of a smaller machine).
        pids_limit: Most processes and threads in the container (default 1024).
        user: The user commands run as (``uid[:gid]`` or a name in the root
            filesystem); default the root filesystem's root, without any
            capability beyond Podman's defaults.
        env: Environment variables of every command.
        read_only: Mount the workspace read-only: writes in the container fail
            with EROFS. A new filesystem is read-only for the API too; one
            passed in keeps its own setting (a harness may write, the agent's
            commands may not).
        disk: Bytes the container may write outside the workspace, with the
            sandbox's own overlay (root only; default ``"4g"``).
        workspace_size: Bytes the workspace may hold while the sandbox runs:
            the filesystem's memory budget is lowered to it if it is higher
            (and put back on close), so writes past it fail with ENOSPC
            (default ``"8g"``).
        output_limit: Bytes of each output stream ``exec`` keeps, head and tail
            (default 256 KiB).
        timeout: Default seconds an ``exec`` may run (default 120).

    The defaults are ``SandboxConfig.build``'s, shared with ``workspacefs run``.

    Raises:
        BusyError: Another sandbox (or FUSE mount) is open in this process.
        InvalidArgumentError: An option is invalid.
        PodmanError: The container did not start; the message says what
            Podman said and what ``preflight`` finds missing.
    """

    @overload
    def __init__(
        self: PodmanSandbox[InMemoryFilesystem],
        filesystem: None = None,
        **options: Unpack[SandboxOptions],
    ) -> None: ...
    @overload
    def __init__(self, filesystem: W, **options: Unpack[SandboxOptions]) -> None: ...
    def __init__(self, filesystem: Any = None, **options: Unpack[SandboxOptions]) -> None:
        config = SandboxConfig.build(**options)
        self._served = served_mountpoint(filesystem)
        if filesystem is None:
            filesystem = InMemoryFilesystem(mount_point=config.workdir, read_only=config.read_only)
        elif self._served is not None:
            pass  # a daemon's workspace: its mount point is the host's path, not workdir
        elif not isinstance(filesystem, InMemoryFilesystem):
            raise InvalidArgumentError(
                "a sandbox mounts an InMemoryFilesystem's live tree, or binds a running "
                "workspace's mount (connect())",
                None,
            )
        elif filesystem.mount_point != config.workdir:
            raise InvalidArgumentError(
                f"the filesystem's mount_point is {filesystem.mount_point!r} but the container "
                f"sees it at {config.workdir!r}; make them equal so paths agree",
                None,
            )
        self._fs: W = filesystem
        self._config = config
        self._read_only = config.read_only or filesystem.read_only
        self._lock = threading.RLock()
        self._commits = itertools.count(1)
        self._try_numbers = itertools.count(1)
        self._trials = TrialBook()
        self._resources = _Resources()
        self._finalize = weakref.finalize(self, self._resources.close)
        try:
            self._start()
        except BaseException:
            self._finalize()
            raise

    # -- lifecycle --------------------------------------------------------------------

    def _start(self) -> None:
        stack = self._resources.stack
        if self._served is not None:
            self._state = make_state_dir()
            stack.callback(remove_state_dir, self._state)
            self._name = os.path.basename(self._state)
            self._mountpoint = self._served
        else:
            self._mount_own()
        stack.callback(self._resources.drop_tries)  # runs before the unmount
        self._root: RootFilesystem = root_filesystem(
            self._config.image,
            self._config.rootfs,
            self._config.podman_overlay,
            self._state,
            self._config.disk,
            self._name,
        )
        stack.callback(self._root.close)
        stack.callback(self._resources.join_cleanups)  # tries' branches of the root first
        stack.callback(self._resources.stop_container)
        self._resources.container = self._start_container()

    def _mount_own(self) -> None:
        """Mount the in-memory workspace on the sandbox's private directory (one mount a
        process: pyfuse3's)."""
        stack = self._resources.stack
        assert isinstance(self._fs, InMemoryFilesystem)
        if not _one_per_process.acquire(blocking=False):
            raise BusyError(
                f"sandbox {_open[0] if _open else '?'} is open in this process; pyfuse3 serves "
                "one FUSE mount per process, so close it first (or use another process)",
                None,
            )
        stack.callback(_one_per_process.release)
        stack.callback(_open.clear)
        cleanup_stale(containers=False)
        self._state = make_state_dir()
        stack.callback(remove_state_dir, self._state)
        self._name = os.path.basename(self._state)
        _open[:] = [self._name]
        self._mountpoint = os.path.join(self._state, "workspace")
        os.mkdir(self._mountpoint, 0o755)
        budget = self._fs.memory_budget
        if budget > self._config.workspace_size:
            self._fs.memory_budget = self._config.workspace_size
            stack.callback(setattr, self._fs, "memory_budget", budget)
        try:
            self._resources.mount = stack.enter_context(
                mount(self._fs, self._mountpoint, allow_other=True, read_only=self._read_only)
            )
        except BusyError as exc:
            raise BusyError(
                "another workspacefs mount is active in this process; pyfuse3 serves one FUSE "
                "mount per process, so the sandbox cannot mount its workspace",
                self._mountpoint,
            ) from exc

    def _run_args(
        self, name: str | None = None, source: str | None = None, root: RootFilesystem | None = None
    ) -> list[str]:
        """``podman run``'s arguments: the sandbox's container, or (with all three)
        a try's, with the fork's directory ``source`` at ``workdir`` on ``root``."""
        return run_arguments(
            self._config,
            name=name or self._name,
            volume=source or self._mountpoint,
            read_only=self._read_only,
            root=root or self._root,
        )

    def _start_container(self) -> Container:
        log_path = os.path.join(self._state, "podman-run.log")
        try:
            return Container(self._name, self._run_args(), log_path)
        except PodmanError as exc:
            problems = preflight(image=self._config.image, rootfs=self._config.rootfs)
            found = "".join(f"\n- {problem}" for problem in problems)
            raise PodmanError(f"{exc.strerror}{found}", None) from exc

    def close(self) -> None:
        """Remove the container, the mount and the private directory; safe to call twice."""
        with self._lock:
            self._finalize()

    def __enter__(self) -> PodmanSandbox[W]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once the sandbox is closed."""
        return not self._finalize.alive

    def _container(self) -> Container:
        container = self._resources.container
        if not self._finalize.alive or container is None:
            raise BackendUnavailableError("the sandbox is closed", None)
        if not container.running:
            raise BackendUnavailableError(
                f"the sandbox's container has stopped: {container.log()}", None
            )
        return container

    # -- what it is -------------------------------------------------------------------

    @property
    def filesystem(self) -> W:
        """The workspace (an in-memory one's ``mount_point`` is ``workdir``)."""
        return self._fs

    @property
    def config(self) -> SandboxConfig:
        """The options, validated."""
        return self._config

    @property
    def name(self) -> str:
        """The container's name (and the private directory's)."""
        return self._name

    @property
    def mountpoint(self) -> str:
        """Where the workspace is mounted on the host."""
        return self._mountpoint

    @property
    def root_description(self) -> str:
        """What the container runs on (an image or an overlay of a host directory)."""
        return self._root.description

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<PodmanSandbox {self._name} on {self._root.description}, {state}>"

    # -- commands ---------------------------------------------------------------------

    def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``/bin/sh -c`` in the container.

        An O(1) snapshot is taken before and after (tagged ``exec-<n>-before``
        and ``exec-<n>-after``); ``changes`` is the diff between them, so it
        holds what the command changed, and what was written through the API
        meanwhile. Commands run one at a time.

        What the command writes is attributed to its processes (``blame``)
        and to this command: the call in effect (a ``shell`` tool call's name
        and id, else ``exec-<n>``) and the command line reach the mount
        through the ``WORKSPACEFS_CAUSE`` environment variable.

        Args:
            command: A shell command line.
            timeout: Seconds before the command and its process group are
                killed (default: the sandbox's ``timeout``).
            cwd: The working directory, relative to ``workdir`` or absolute.
            env: Environment variables for this command only.
            stdin: What the command reads on stdin (default: nothing).

        Raises:
            InvalidArgumentError: An empty command or a bad argument.
            FileNotFoundError, NotADirectoryError: ``cwd`` is in the workspace and is
                not a directory there.
            BackendUnavailableError: The sandbox is closed or its container stopped.
        """
        checked = self._command(command, timeout, cwd, env, stdin)
        with self._lock:
            container = self._container()
            number = _next_exec_number(self._fs)
            running = caused(checked, f"exec-{number}")
            before = self._fs.snapshot(tag=f"exec-{number}-before")
            try:
                done = running.run(container)
            finally:
                changes, after = changes_and_after(self._fs, before, f"exec-{number}-after")
            self._container()  # a command that took the container down is an error, not a result
        return ExecResult.of(done, changes, before=before, after=after)

    def _command(
        self,
        command: str,
        timeout: float | None,
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: str | bytes | None,
    ) -> CheckedCommand:
        """``exec``'s arguments, checked (the raises of ``exec``)."""
        return check_command(self._config, self._fs, command, timeout, cwd, env, stdin)

    # -- try-runs ---------------------------------------------------------------------

    def try_exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
    ) -> TryRun:
        """Run ``command`` in a fork of the workspace, leaving the workspace as it is.

        The fork (O(1)) is served by the sandbox's mount at
        ``<mountpoint>/.forks/try-<n>`` and the command runs in a container of
        its own, with the fork at ``workdir`` and the sandbox's options and
        root filesystem (see docs/sandbox.md for what it sees of the
        sandbox's container). The container goes when the command ends.
        ``TryRun.result`` says how it went and what it would change;
        ``accept()`` applies that to the workspace (a fast-forward, or a
        merge if the workspace changed meanwhile), ``reject()`` drops it.
        Used as a context manager, a try still pending at the end is
        rejected; the sandbox's close rejects those left pending.

        Arguments and raises as for ``exec``; besides:

        Raises:
            ReadOnlyError: The workspace is read-only (nothing could be accepted).
            BusyError: ``MAX_PENDING_TRIES`` tries wait for a decision.
        """
        checked = self._command(command, timeout, cwd, env, stdin)
        self._check_tries()
        assert isinstance(self._fs, InMemoryFilesystem)
        with self._lock:
            self._container()
            self._check_room(1)
            try_id = f"try-{next(self._try_numbers)}"
            run, _ = self._start_try(try_id, self._fs.fork(), checked, None)
        return run

    def _check_tries(self) -> None:
        """Refuse tries where none could be accepted or served."""
        if self._read_only:
            raise ReadOnlyError("a read-only workspace accepts no try", self._config.workdir)
        if not isinstance(self._fs, InMemoryFilesystem):
            raise NotSupportedError(
                "a try runs in a fork this process mounts: a sandbox on a running "
                "workspace runs none (fork it with the daemon's fork verb instead, or "
                "its best_of verb)",
                None,
            )

    def _check_room(self, wanted: int) -> None:
        """Refuse ``wanted`` more tries if they would pass ``MAX_PENDING_TRIES``."""
        pending = self.tries()
        if len(pending) + wanted > MAX_PENDING_TRIES:
            waiting = f" ({', '.join(pending)})" if pending else ""
            raise BusyError(
                f"{len(pending)} tries wait for a decision{waiting} and at most "
                f"{MAX_PENDING_TRIES} may: accept or reject some first",
                None,
            )

    def _start_try(
        self,
        try_id: str,
        fork: InMemoryFilesystem,
        command: CheckedCommand,
        score: CheckedCommand | None,
    ) -> tuple[TryRun, Completed | None]:
        """Run one try on the sandbox's mount and root filesystem, and keep it pending."""
        resources = self._resources
        assert resources.mount is not None, "a running sandbox is mounted"
        assert isinstance(self._fs, InMemoryFilesystem)
        site = TrySite(
            self._fs,
            resources.mount,
            self._root,
            self._run_args,
            self._state,
            self._name,
            resources.later,
            resources.end_try,
        )
        run, scored = site.start(try_id, fork, command, score)
        with resources.tries_lock:
            resources.tries[try_id] = run
        return run, scored

    def tries(self) -> dict[str, TryRun]:
        """The tries waiting for a decision, by id."""
        with self._resources.tries_lock:
            return dict(self._resources.tries)

    # -- best of N --------------------------------------------------------------------

    def best_of(
        self,
        commands: Sequence[str],
        *,
        score: str | None = None,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Trial:
        """Run each command at once in a fork of the workspace and a container of its
        own (a try each, as ``try_exec`` runs one), then ``score`` after each in the
        same fork; the workspace stays as it is.

        Every fork is taken in one step, so all start from the same state. Each
        attempt's report has its exit status, the end of its output, the paths
        it changed, and its score (``Attempt``); ``Trial.best`` is the highest
        scoring attempt that passed. ``accept_attempt`` merges one and drops the
        others; ``drop_trial`` drops them all (the sandbox's close drops those left).

        Args:
            commands: The command lines, one per attempt (the same one N times for
                N attempts of it).
            score: A command run after each, in its fork (what it writes is not
                kept): a test command, say. Its exit status decides whether the
                attempt passed; the score is the number its last line of output
                is, if it is one, else 1 for passed and 0 for failed
                (``workspacefs.fs.score_value``). None: each command's own result.
            timeout: Seconds each command, and each score command, may run
                (default: the sandbox's).
            cwd: The working directory of every command, as for ``exec``.
            env: Environment variables of every command.

        Raises:
            InvalidArgumentError: No command, more than ``MAX_PENDING_TRIES``, or a
                bad one (as ``exec`` checks them).
            ReadOnlyError: The workspace is read-only.
            BusyError: The attempts would pass ``MAX_PENDING_TRIES`` pending tries.
            BackendUnavailableError: An attempt's container did not start or
                stopped; the other attempts are dropped.
        """
        checked = [self._command(c, timeout, cwd, env, None) for c in check_commands(commands)]
        scoring = None if score is None else self._command(score, timeout, cwd, env, None)
        self._check_tries()
        assert isinstance(self._fs, InMemoryFilesystem)
        with self._lock:
            self._container()
            self._check_room(len(checked))
            try_ids = [f"try-{next(self._try_numbers)}" for _ in checked]
            run = run_trial(
                self._trials.next_id(), try_ids, self._fs, checked, scoring, self._start_try
            )
            self._trials.add(run)
        return run.report()

    def trials(self) -> list[Trial]:
        """The trials, oldest first: those waiting for a decision, and the last few
        decided (``KEPT_DECIDED``)."""
        return self._trials.list()

    def accept_attempt(self, attempt_id: str, *, hold: bool = False) -> MergeResult:
        """Accept an attempt of a pending trial (``TryRun.accept``: a fast-forward, or a
        merge if the workspace changed meanwhile), and drop the trial's other attempts.

        A merge that conflicts applies nothing and leaves every attempt pending
        (accept another, or drop the trial); with ``hold`` it is held open
        instead (``result.held``), and continuing it accepts the attempt.

        Raises:
            NotFoundError: No pending trial has an attempt of that id.
            InvalidArgumentError: Its trial was decided already.
            BusyError: ``hold``, and a merge is held open already.
        """
        return self._trials.accept(attempt_id, hold=hold)

    def drop_trial(self, trial_id: str) -> Trial:
        """Drop every attempt of a pending trial; the workspace stays as it is.

        Raises:
            NotFoundError: No trial of that id.
            InvalidArgumentError: It was decided already.
        """
        return self._trials.drop(trial_id)

    # -- snapshots --------------------------------------------------------------------

    def snapshot(
        self, *, tag: str | None = None, strategy: SnapshotStrategy = "workspace"
    ) -> SandboxSnapshot:
        """Snapshot the workspace (O(1)), and with ``container_commit`` the container too.

        ``container_commit`` also records the container's own files, what
        commands changed outside the workspace (packages installed, files in
        ``/etc`` or ``/tmp``): ``podman commit`` for an image, a copy of the
        overlay's upper layer otherwise. The container is paused meanwhile,
        so the two parts agree. Running processes are not recorded (see
        docs/sandbox.md on CRIU).

        Args:
            tag: A name for the workspace snapshot; must be new.
            strategy: ``workspace`` or ``container_commit``.

        Raises:
            NotPermittedError: ``container_commit`` on Podman's own overlay
                (a sandbox not run as root on a host directory).
        """
        if strategy not in ("workspace", "container_commit"):
            raise InvalidArgumentError(f"unknown snapshot strategy {strategy!r}", None)
        snapshots = WorkspaceSnapshots.of(self._fs)
        with self._lock:
            if strategy == "workspace":
                return SandboxSnapshot(snapshots.snapshot(tag), "workspace", None, self._name)
            if not self._root.commits:
                raise NotPermittedError(COMMIT_REFUSED, None)
            container = self._container()
            run_podman("pause", container.name)
            try:
                workspace = snapshots.snapshot(tag)
                state = self._root.commit(container.name, str(next(self._commits)))
            finally:
                run_podman("unpause", container.name, check=False)
            return SandboxSnapshot(workspace, "container_commit", state, self._name)

    def restore(self, snapshot: SandboxSnapshot | FilesystemSnapshot) -> None:
        """Return to a snapshot.

        The workspace is restored in O(1) and the running container sees it
        on its next system call. A ``container_commit`` snapshot also
        recreates the container from its recorded state: every process in
        the container is stopped, and the next ``exec`` runs in the new one.

        Raises:
            InvalidArgumentError: A container commit of another sandbox.
        """
        if isinstance(snapshot, FilesystemSnapshot):
            self._fs.restore(snapshot)
            return
        if snapshot.container_state is None:
            self._fs.restore(snapshot.workspace)
            return
        if snapshot.sandbox != self._name:
            raise InvalidArgumentError(
                f"a container commit restores only in its sandbox ({snapshot.sandbox})", None
            )
        with self._lock:
            self._container()
            self._resources.stop_container()
            self._resources.join_cleanups()  # no try's overlay stacks on the layer replaced
            self._fs.restore(snapshot.workspace)
            self._root.restore(snapshot.container_state)
            self._resources.container = self._start_container()
