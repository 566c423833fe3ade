"""Mount lifecycle: the trio loop in a dedicated thread, clean unmount on every exit.

pyfuse3 keeps one FUSE session per process, so one mount runs at a time.
``mount()`` starts ``pyfuse3.main`` in its own thread with its own trio loop
and returns once the kernel has finished INIT and a request has been
answered (before INIT, cache invalidations fail with ENOSYS); the caller
keeps using the filesystem object from its own thread. On exit (normal,
exception, Ctrl-C or SIGTERM) the loop is terminated from outside with
``trio.from_thread.run_sync(pyfuse3.terminate)`` (only while it runs:
terminating a finished loop crashes) and the kernel mount is removed.

If the loop dies while the owner still holds the mount (an exception inside
pyfuse3, the connection aborted, an unmount from outside), the mount point
is *not* unmounted: the connection is aborted so that everyone gets ENOTCONN
there, never the directory underneath, which writes would silently land in.
The owner learns at once: ``on_lost`` is called, and every call on the
filesystem raises ``MountLostError`` until the mount block is left. The tree
is intact; leaving the block detaches the dead mount, after which the
workspace can be persisted or mounted again.

A mount left by a process killed with SIGKILL answers ENOTCONN; ``recover``
(and ``mount`` itself, on the same path) detaches it with ``fusermount3 -uz``.

The same mount serves the forks added to it (``Mount.add_fork``) at
``<mountpoint>/.forks/<name>``: one FUSE session for a workspace and all its
live forks, since pyfuse3 allows one per process and forks share memory only
within one (see docs/forks.md).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType

import pyfuse3
import trio

from .._errors import (
    BackendUnavailableError,
    BusyError,
    InvalidArgumentError,
    MountedInsideError,
    MountLostError,
    NotADirectoryFsError,
    NotFoundError,
)
from ..fs import TreeFilesystem
from ..posix import canonical_mountpoint, mount_table, mounts_under
from ..tree import Tree
from ._allocator import Trimmer, tune
from ._attributes import DEFAULT_CACHE, CachePolicy
from ._connection import Connection
from ._features import KILLPRIV_V2, OPEN_FREE, SESSION_POLL
from ._forks_dir import NAME as FORKS_NAME
from ._forks_dir import ForksDir
from ._invalidate import Invalidator
from ._latency import LatencyHint, hold_while_busy
from ._operations import WorkspaceOperations, encode
from ._readahead import widen_readahead
from ._served import ServedTree
from ._snapshots_dir import snapshot_lister
from ._stats import RequestStats

log = logging.getLogger(__name__)

_session = threading.Lock()  # pyfuse3: one FUSE session per process

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0

POLL_NS = 50_000
"""How long the FUSE loop polls for the next request before it sleeps (patched
pyfuse3). Idle vCPUs halt, and waking one costs tens of microseconds per
request; a busy client's next request nearly always comes sooner (tar -x of
7,700 files on an idle 2-vCPU VM: 10.3 s without, 5.4 s with). The loop
yields the CPU to runnable threads while it polls."""
_POLL: dict[str, int] = {"poll_ns": POLL_NS} if SESSION_POLL else {}


def unavailable_reason() -> str | None:
    """Why this machine cannot mount FUSE filesystems, or None if it can."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (no FUSE kernel module)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (apt-get install fuse3)"
    if os.geteuid() != 0 and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "no permission to open /dev/fuse"
    return None


def fuse_mounts() -> dict[str, str]:
    """Mount point -> filesystem type of every FUSE mount, from /proc/self/mountinfo."""
    return {
        entry.point: entry.fs_type
        for entry in mount_table()
        if entry.fs_type == "fuse" or entry.fs_type.startswith("fuse.")
    }


def mounts_inside(mountpoint: str) -> list[str]:
    """Every mount point strictly below ``mountpoint``, of any filesystem, deepest
    first: what a lazy unmount of ``mountpoint`` would detach along with it.

    ``mountpoint``'s parent may be reached through links: the mount table shows
    resolved paths, and so is it resolved before it is compared.
    """
    point = canonical_mountpoint(mountpoint)
    return [inside for inside in mounts_under(point) if inside != point]


def refuse_if_mounted_inside(mountpoint: str) -> None:
    """Raise unless ``mountpoint`` can be detached without taking other mounts along.

    Raises:
        MountedInsideError: Something is mounted inside it (named in the message).
    """
    inside = mounts_inside(mountpoint)
    if inside:
        raise MountedInsideError(
            f"not unmounted: {', '.join(inside)} {'is' if len(inside) == 1 else 'are'} "
            "mounted inside; unmount that first",
            os.path.abspath(mountpoint),
        )


def _ask_child(argv: list[str]) -> str | None:
    """What ``argv`` printed, if it succeeded within START_TIMEOUT (else None: it is
    killed, and left to exit when it can)."""
    child = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    try:
        out, _ = child.communicate(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        child.kill()
        return None
    return out.decode().strip() if child.returncode == 0 else None


def is_stale(mountpoint: str) -> bool:
    """True if ``mountpoint`` is a FUSE mount whose server is gone (ENOTCONN).

    statfs is never answered from the kernel's caches, so it reaches the
    (missing) server where a stat of a cached inode would not.
    """
    if canonical_mountpoint(mountpoint) not in fuse_mounts():
        return False
    try:
        os.statvfs(mountpoint)
    except OSError as exc:
        return exc.errno == errno.ENOTCONN
    return False


def recover(mountpoint: str) -> bool:
    """Detach a stale mount at ``mountpoint``; True if there was one.

    Raises:
        MountedInsideError: Something is mounted inside the stale mount (a
            workspace whose daemon still serves it, say): detaching would take
            it along, so nothing is done.
    """
    if not is_stale(mountpoint):
        return False
    refuse_if_mounted_inside(mountpoint)
    _detach(mountpoint)
    return True


def _detach(mountpoint: str) -> None:
    """Lazily unmount, so nothing that still holds it can hang us."""
    tool = shutil.which("fusermount3") or shutil.which("fusermount")
    command = [tool, "-uz", mountpoint] if tool else ["umount", "-l", mountpoint]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0 and os.path.ismount(mountpoint):
        raise BackendUnavailableError(
            f"could not unmount: {result.stderr.strip() or result.returncode}", mountpoint
        )


LostCallback = Callable[[BaseException], object]
"""Called with the error when a mount's FUSE loop dies while its owner holds it."""


@dataclass
class Mount:
    """A running mount. Use ``workspacefs.fuse.mount()`` to make one."""

    filesystem: TreeFilesystem
    mountpoint: str
    read_only: bool
    on_lost: LostCallback | None = None
    _thread: threading.Thread | None = None
    _token: trio.lowlevel.TrioToken | None = None
    _error: BaseException | None = None
    _stopping: bool = False
    _keep_mounted: bool = False  # leave the kernel mount, stale: something is mounted inside
    _device: int | None = None  # the FUSE connection's number (the mount's minor device)
    _fuse_fd: int | None = None  # the session's /dev/fuse descriptor
    _ready: threading.Event = field(default_factory=threading.Event)
    _cleanups: list[Callable[[], object]] = field(default_factory=list)
    _operations: WorkspaceOperations | None = None
    _forks: dict[str, TreeFilesystem] = field(default_factory=dict)
    _invalidators: list[Invalidator] = field(default_factory=list)
    _releases: dict[ServedTree, Callable[[], None]] = field(default_factory=dict)
    _kernel: threading.Lock = field(default_factory=threading.Lock)
    # Adds and removes of forks, one at a time: the name's entry and its
    # invalidator are registered together. Never taken in the FUSE thread.
    _forking: threading.Lock = field(default_factory=threading.Lock)
    _kernel_open: bool = False  # True while notifications may reach the kernel
    _latency: LatencyHint | None = None  # held by the FUSE loop while requests flow

    # -- forks -----------------------------------------------------------------------

    def add_fork(self, name: str, filesystem: TreeFilesystem) -> str:
        """Serve ``filesystem`` at ``<mountpoint>/.forks/<name>``; return that path.

        Meant for forks of the mounted workspace (``InMemoryFilesystem.fork``),
        which share its memory, but any ``InMemoryFilesystem`` (or snapshot
        view, read-only) works. The fork is a whole workspace of its own: its
        tree, lock and lookup counts; its API writes invalidate the kernel's
        caches of its own inodes; writes through the path change only it. It is
        writable unless the mount or ``filesystem`` is read-only. Bind-mount the
        path (``podman -v PATH:/workspace``) to give a container the fork as
        its workspace, with the same paths inside as the origin's. ``/.forks``
        is hidden like ``/.snapshots`` (a real entry of that name hides it).

        Raises:
            AlreadyExistsError: A fork of that name is mounted, or this
                filesystem is mounted here already.
            InvalidArgumentError: ``name`` breaks the rule of names (``fs.check_name``).
            BackendUnavailableError: The mount does not serve.
        """
        operations = self._serving()
        view = filesystem.view
        with self._forking:
            served = operations.add_fork(
                name, view, read_only=filesystem.read_only, show=False, rules=filesystem.rules
            )
            if isinstance(view, Tree):
                self._invalidate_fork(filesystem, view, served)
            self._forks[name] = filesystem
            operations.show_fork(served)
        return self.fork_path(name)

    def remove_fork(self, name: str) -> TreeFilesystem:
        """Take fork ``name`` off the mount at once; return its filesystem.

        Its path disappears now; the mount lets its tree go when the kernel
        has forgotten the last of its inodes (a process still inside it, or a
        bind mount of it, keeps it served until then). The filesystem itself
        lives on for the API.

        Raises:
            NotFoundError: No fork of that name is mounted.
        """
        operations = self._serving()
        with self._forking:
            served = operations.remove_fork(name)
            filesystem = self._forks.pop(name)
        # Expire every entry the kernel may hold of the fork: an expired entry
        # goes at its last use, then its inode is forgotten, and once the last
        # one is, the mount lets the fork's tree go. O(inodes the kernel holds).
        entries = [(ForksDir.INO, name), *operations.held_entries(served)]
        with self._kernel:
            if self._kernel_open:
                for parent, child in entries:
                    with contextlib.suppress(OSError):  # gone with its parent already
                        pyfuse3.invalidate_entry(parent, encode(child))
        return filesystem

    def forks(self) -> dict[str, TreeFilesystem]:
        """The mounted forks by name."""
        return dict(self._forks)

    def fork_path(self, name: str) -> str:
        """Where fork ``name`` is (or would be) on the host: ``<mountpoint>/.forks/<name>``."""
        return os.path.join(self.mountpoint, FORKS_NAME.decode(), name)

    def _serving(self) -> WorkspaceOperations:
        if self._operations is None or not self.running or self._error is not None:
            raise BackendUnavailableError("the mount does not serve", self.mountpoint)
        return self._operations

    def _invalidate_fork(self, filesystem: TreeFilesystem, tree: Tree, served: ServedTree) -> None:
        """Keep the kernel's caches of a fork true to its API writes until the mount
        lets the fork go (in the FUSE thread, possibly: so without waiting) or ends."""
        invalidator = Invalidator(tree, base=served.base)
        unsubscribe = filesystem.subscribe(invalidator)
        # Those of forks released earlier go once nothing runs in them any more.
        self._invalidators = [i for i in self._invalidators if not i.finished]
        self._invalidators.append(invalidator)

        def released() -> None:
            if self._releases.pop(served, None) is not None:
                unsubscribe()
                invalidator.stop()

        self._releases[served] = released
        served.on_release.append(released)

    def _fork_trees(self) -> list[Tree]:
        return [fs.view for fs in self._forks.values() if isinstance(fs.view, Tree)]

    def stats(self) -> RequestStats:
        """The kernel requests this mount has served, by type, with handler time.

        Subtract two readings (``after - before``) for the requests of one workload.
        """
        return self._operations.stats() if self._operations is not None else RequestStats()

    @property
    def latency_hint(self) -> bool:
        """True if the mount keeps idle CPUs quick to wake while it serves requests
        (``mount(latency_hint=...)``, and the process may: root)."""
        return self._latency is not None and self._latency.available

    @property
    def open_free(self) -> bool:
        """True if the kernel opens files and directories without requests (the
        patched pyfuse3 of scripts/setup.sh; see ``mount(open_free=...)``)."""
        return self._operations is not None and self._operations.open_free

    @property
    def connection(self) -> Connection | None:
        """Which libfuse serves the mount and what it and the kernel agreed on
        (None with a stock pyfuse3, which never shows the connection)."""
        return self._operations.connection if self._operations is not None else None

    @property
    def running(self) -> bool:
        """True while the FUSE loop serves requests."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def error(self) -> BaseException | None:
        """Why the FUSE loop stopped serving while the mount was held; None while it serves."""
        return self._error

    def unmount(self) -> None:
        """Stop serving and remove the mount; safe to call twice.

        After a lost mount it detaches the dead mount point and lets the
        filesystem be used again.

        The kernel mount goes lazily (so a process still inside cannot block
        the unmount), which would detach whatever is mounted inside it too --
        another workspace, whose daemon would lose its mount and exit. So with
        anything mounted inside, the mount is left stale instead (answering
        ENOTCONN, what is inside still served), and an error is logged; once
        that is unmounted, ``recover`` (``workspacefs doctor --fix``) detaches
        it. An owner that can still refuse checks first
        (``refuse_if_mounted_inside``, as the daemon does).
        """
        for cleanup in reversed(self._cleanups):
            cleanup()
        self._cleanups.clear()
        if self._thread is None:
            return
        inside = mounts_inside(self.mountpoint)
        if inside:
            log.error(
                "%s is left mounted, stale, so as not to detach what is mounted inside it: %s;"
                " unmount that, then workspacefs doctor --fix",
                self.mountpoint,
                ", ".join(inside),
            )
        self._keep_mounted = bool(inside)
        self._stopping = True
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(pyfuse3.terminate, trio_token=self._token)
        self._thread.join(STOP_TIMEOUT)
        if self._thread.is_alive():  # the loop is wedged: cut the kernel side loose
            log.error("FUSE loop did not stop; detaching %s", self.mountpoint)
            if inside:
                self._abort_connection()
            else:
                _detach(self.mountpoint)
            self._thread.join(STOP_TIMEOUT)
        self._thread = None
        if not inside and (os.path.ismount(self.mountpoint) or is_stale(self.mountpoint)):
            _detach(self.mountpoint)
        if isinstance(self.filesystem.view, Tree):
            self.filesystem.view.lock.refuse(None)
        for tree in self._fork_trees():
            tree.lock.refuse(None)
        self._forks.clear()

    def _serve(self, operations: WorkspaceOperations, options: set[str]) -> None:
        before = _fuse_descriptors()
        try:
            pyfuse3.init(operations, self.mountpoint, options)
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._fuse_fd = min(_fuse_descriptors() - before, default=None)
        failure: BaseException | None = None
        try:
            trio.run(self._main, operations)
        except BaseException as exc:
            failure = exc
            while isinstance(failure, BaseExceptionGroup) and len(failure.exceptions) == 1:
                failure = failure.exceptions[0]  # trio's nurseries wrap what killed the loop
        self._token = None
        if failure is None and not self._stopping:
            failure = BackendUnavailableError(
                "the kernel ended the FUSE session (aborted, or unmounted from outside)",
                self.mountpoint,
            )
        if failure is not None:
            self._lose(failure)
        # Lost, the mount point stays mounted (answering ENOTCONN) until the
        # owner leaves the mount; else the kernel mount goes now.
        # Kept (see ``unmount``), the mount is aborted as the session's descriptor closes.
        pyfuse3.close(unmount=failure is None and not self._keep_mounted)
        operations.forget_all()  # the kernel holds nothing any more
        self._ready.set()

    def _lose(self, failure: BaseException) -> None:
        """The loop died under the owner: refuse the API, abort the connection, tell."""
        log.error(
            "the FUSE loop serving %s died; the mount point answers ENOTCONN until the "
            "mount is left",
            self.mountpoint,
            exc_info=failure,
        )
        self._error = failure
        message = f"the mount at {self.mountpoint} stopped serving ({failure!r}); leave it"
        view = self.filesystem.view
        for tree in [view] if isinstance(view, Tree) else []:
            tree.lock.refuse(lambda: MountLostError(message, self.mountpoint))
        for tree in self._fork_trees():
            tree.lock.refuse(lambda: MountLostError(message, self.mountpoint))
        self._abort_connection()
        for cleanup in reversed(self._cleanups):  # waits for invalidations in flight
            cleanup()
        if self.on_lost is not None:
            try:
                self.on_lost(failure)
            except Exception:
                log.exception("on_lost callback of %s failed", self.mountpoint)

    def _abort_connection(self) -> None:
        """End the kernel connection now, so that no request waits on the dead
        loop (nor an invalidation on such a request): the kernel answers them
        all, and every later access of the mount point, with ENOTCONN.

        Through the connection's ``abort`` file where fusectl is mounted; and
        by putting /dev/null in place of the session's descriptor (the kernel
        aborts when the device is released; libfuse's later writes are lost
        harmlessly instead of reaching whatever file reuses the number).
        """
        if self._device is not None:
            abort = f"/sys/fs/fuse/connections/{self._device}/abort"
            with contextlib.suppress(OSError), open(abort, "w") as control:
                control.write("1")
        if self._fuse_fd is not None:
            devnull = os.open(os.devnull, os.O_RDWR)
            try:
                os.dup2(devnull, self._fuse_fd)
            finally:
                os.close(devnull)

    def _await_init(self) -> None:
        """Return once the kernel has finished INIT and the loop answered a request.

        Requests wait in the kernel until INIT is done, so a statfs answered
        proves both. It comes from a child process, as the open probe does, never from a
        thread of this one: a process killed while one of its own threads waits on
        its mount for an answer the loop had read cannot exit (the kernel waits
        for that answer, uninterruptibly) until someone aborts the connection. A
        loop that never answers costs START_TIMEOUT, not a hang.
        """
        # statfs first: it is never answered from the kernel's caches.
        script = 'stat --file-system "$1" >/dev/null && stat --format=%d "$1"'
        answer = _ask_child(["sh", "-c", script, "sh", self.mountpoint])
        if answer is None or self._error is not None:
            reason = self._error or "no answer"
            raise BackendUnavailableError(f"mount failed: {reason!r}", self.mountpoint)
        self._device = os.minor(int(answer))
        widen_readahead(self._device)
        operations = self._operations
        if operations is not None and operations.open_free:
            # An OPEN answered ENOSYS turns the kernel open-free (no RELEASE
            # for each file created from then on); a failed probe costs only that.
            with operations.open_probe() as name:
                _ask_child(["head", "--bytes=0", os.path.join(self.mountpoint, name)])

    async def _main(self, operations: WorkspaceOperations) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._ready.set()
        async with trio.open_nursery() as nursery:
            if self._latency is not None:
                nursery.start_soon(
                    hold_while_busy, self._latency, operations.served, operations.next_request
                )
            # No handler awaits anything, so one task serves every request: more
            # would only add task switches (and the patched pyfuse3 then runs a
            # loop without the read lock that sharing the fd between tasks needs).
            await pyfuse3.main(min_tasks=1, max_tasks=1, **_POLL)
            nursery.cancel_scope.cancel()


def _fuse_descriptors() -> set[int]:
    """This process's descriptors open on /dev/fuse."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{name}") == "/dev/fuse":
                found.add(int(name))
    return found


def mount_options(
    *, allow_other: bool, read_only: bool, default_permissions: bool, fsname: str
) -> set[str]:
    """The mount options, documented in docs/fuse.md."""
    options = {f"fsname={fsname}", "subtype=workspacefs"}
    if default_permissions:
        options.add("default_permissions")
    if allow_other:
        options.add("allow_other")
    if read_only:
        options.add("ro")
    return options


@contextlib.contextmanager
def mount(
    filesystem: TreeFilesystem,
    mountpoint: str | os.PathLike[str],
    *,
    allow_other: bool = True,
    read_only: bool = False,
    default_permissions: bool = True,
    fsname: str = "workspacefs",
    cache: CachePolicy = DEFAULT_CACHE,
    show_snapshots: bool = True,
    on_lost: LostCallback | None = None,
    open_free: bool | None = None,
    handle_killpriv: bool | None = None,
    latency_hint: bool = True,
    on_sync: Callable[[], None] | None = None,
    on_change: Callable[[], None] | None = None,
    before_change: Callable[[], None] | None = None,
) -> Iterator[Mount]:
    """Mount ``filesystem``'s tree at ``mountpoint`` for the duration of the block.

    Args:
        filesystem: An ``InMemoryFilesystem`` (live, coherent with the API) or
            a snapshot view from ``fs.at(snapshot)`` (always read-only).
        mountpoint: An existing empty directory.
        allow_other: Let other users and containers in (the kernel still checks
            modes with ``default_permissions``, so the root's mode decides:
            0700 keeps them out); root, or ``user_allow_other`` in
            /etc/fuse.conf (scripts/setup.sh adds it), is needed for it.
        read_only: Refuse every write with EROFS.
        default_permissions: Let the kernel check modes and owners. Without
            it nothing is checked, so it is refused with ``allow_other``.
        fsname: Shown as the source in ``mount`` and ``df``.
        cache: Kernel cache timeouts; API changes are invalidated explicitly.
        show_snapshots: Serve ``/.snapshots/<tag or id>/``, read-only views of
            the filesystem's snapshots (hidden from listings, found by name).
        on_lost: Called (in the FUSE thread, with the error) if the FUSE loop
            dies while the mount is held; from then on every call on
            ``filesystem`` raises ``MountLostError`` until the block is left.
        open_free: Let the kernel open files and directories without asking
            (no OPEN/RELEASE requests; listings cached). None: whenever the
            installed pyfuse3 allows it (the patched build of scripts/setup.sh)
            and ``cache.keep_cache`` is on.
        handle_killpriv: Clear set-ID bits and file capabilities on writes,
            truncates and chowns where the kernel asks (``HANDLE_KILLPRIV_V2``),
            instead of letting the kernel do it with a request before each
            (security.capability before writes, the attributes before chowns).
            None: whenever libfuse and pyfuse3 relay the kernel's requests
            (libfuse 3.18.3 and the patched pyfuse3 of scripts/setup.sh).
        latency_hint: While requests flow, ask idle CPUs to poll rather than
            sleep, so that each reply wakes its caller in microseconds (PM QoS,
            root only; dropped after 5 ms without a request: see ``_latency``).
        on_sync: Makes ``fsync``/``fdatasync`` on the mount a durability point: called
            in the FUSE thread, it returns once everything written before it is on
            disk (``DurableWorkspace.sync``). None: the tree is the storage, and the
            mount answers those requests ENOSYS once (the kernel then stops asking).
        on_change: Called in the FUSE thread after each request that may have changed
            the tree, before it is answered (a durable workspace's ``always`` policy:
            ``DurableWorkspace.sync``); an error it raises is the request's answer.
        before_change: Called in the FUSE thread before each request that may change
            the tree; an ``OSError`` it raises refuses the request with its errno,
            changing nothing (``DurableWorkspace.check_writable``: a full store).

    statfs shows the workspace's memory budget as the size and what is left
    of it as free (see ``InMemoryFilesystem``).

    Raises:
        InvalidArgumentError: ``allow_other`` without ``default_permissions``.
        BusyError: Another mount is active in this process, or the path is mounted.
        BackendUnavailableError: The kernel refused the mount, or it did not answer.
        MountLostError: On leaving the block, if the loop died meanwhile.
    """
    if allow_other and not default_permissions:
        raise InvalidArgumentError(
            "allow_other without default_permissions would let every local user read and "
            "write every file, whatever its mode",
            os.fspath(mountpoint),
        )
    path = _usable_mountpoint(mountpoint)
    read_only = read_only or filesystem.read_only or not isinstance(filesystem.view, Tree)
    operations = WorkspaceOperations(
        filesystem.view,
        read_only=read_only,
        cache=cache,
        snapshots=snapshot_lister(filesystem) if show_snapshots else None,
        open_free=OPEN_FREE and cache.keep_cache if open_free is None else open_free,
        handle_killpriv=KILLPRIV_V2 if handle_killpriv is None else handle_killpriv,
        on_sync=on_sync,
        on_change=on_change,
        before_change=before_change,
        rules=filesystem.rules,
    )
    options = mount_options(
        allow_other=allow_other,
        read_only=read_only,
        default_permissions=default_permissions,
        fsname=fsname,
    )
    # Each step undoes itself on the way out, in reverse order: the API stops
    # invalidating, the loop stops and the kernel mount goes (with SIGTERM
    # still turned into SystemExit), then the old SIGTERM handler returns,
    # the trimmer stops, the CPU latency hint is withdrawn, and the session is
    # released last.
    with contextlib.ExitStack() as stack:
        stack.enter_context(_one_session(path))
        hint = stack.enter_context(contextlib.closing(LatencyHint())) if latency_hint else None
        tune()
        if isinstance(filesystem.view, Tree):
            stack.enter_context(_trimming(filesystem.view))
        stack.enter_context(_terminate_on_sigterm())
        handle = stack.enter_context(
            _serving(
                Mount(filesystem, path, read_only, on_lost, _latency=hint), operations, options
            )
        )
        yield handle
    if handle._error is not None:
        raise MountLostError(f"the FUSE loop stopped serving: {handle._error!r}", path)


def _usable_mountpoint(mountpoint: str | os.PathLike[str]) -> str:
    """The absolute path of an existing directory with nothing mounted on it.

    A stale mount left there by a killed process is detached first.
    """
    path = os.path.abspath(os.fspath(mountpoint))
    if recover(path):
        log.warning("recovered a stale mount at %s", path)
    if not os.path.exists(path):
        raise NotFoundError("mount point does not exist", path)
    if not os.path.isdir(path):
        raise NotADirectoryFsError("mount point is not a directory", path)
    if os.path.ismount(path):
        raise BusyError("something is already mounted here", path)
    return path


@contextlib.contextmanager
def _one_session(path: str) -> Iterator[None]:
    """Hold this process's one FUSE session (pyfuse3 keeps a single global one)."""
    if not _session.acquire(blocking=False):
        raise BusyError("a workspacefs mount is already active in this process", path)
    try:
        yield
    finally:
        _session.release()


@contextlib.contextmanager
def _serving(handle: Mount, operations: WorkspaceOperations, options: set[str]) -> Iterator[Mount]:
    """Run the FUSE loop in its own thread until the block ends; unmount on every exit."""
    thread = threading.Thread(
        target=handle._serve,
        args=(operations, options),
        name=f"fuse:{handle.mountpoint}",
        daemon=True,
    )
    handle._operations = operations
    thread.start()
    handle._thread = thread
    try:
        if not handle._ready.wait(START_TIMEOUT) or handle._error is not None:
            raise BackendUnavailableError(f"mount failed: {handle._error!r}", handle.mountpoint)
        handle._await_init()
        _invalidate_after_api_writes(handle)
        yield handle
    finally:
        handle.unmount()


def _invalidate_after_api_writes(handle: Mount) -> None:
    """Keep the kernel's caches true to writes made through the Python API.

    The subscription ends with the mount (``Mount.unmount``): invalidating
    through a closed session would crash.
    """
    handle._kernel_open = True

    def stop_notifying() -> None:  # what remove_fork sends; forks' invalidators as well
        with handle._kernel:
            handle._kernel_open = False
        for released in list(handle._releases.values()):
            released()
        for invalidator in handle._invalidators:
            invalidator.close()

    handle._cleanups.append(stop_notifying)
    _invalidate_after_rule_changes(handle)
    tree = handle.filesystem.view
    if not isinstance(tree, Tree):
        return  # a frozen version never changes
    invalidator = Invalidator(tree)
    unsubscribe = handle.filesystem.subscribe(invalidator)

    def stop() -> None:
        with contextlib.suppress(ValueError):  # run once by a loss, again by the unmount
            unsubscribe()
        invalidator.close()

    handle._cleanups.append(stop)


def _invalidate_after_rule_changes(handle: Mount) -> None:
    """Drop what the kernel cached of the entries a hidden rule starts or stops covering
    in what the live tree's journal does not reach: the snapshots under ``/.snapshots``
    (they share the live tree's inode numbers where nothing changed), and a frozen
    version mounted as the workspace itself."""
    rules, operations = handle.filesystem.rules, handle._operations
    if rules is None or operations is None:
        return
    live = isinstance(handle.filesystem.view, Tree)

    def hidden_changed(entries: list[tuple[int, str]]) -> None:
        bases = operations.snapshot_bases() + ([] if live else [0])
        with handle._kernel:
            if not handle._kernel_open:
                return
            for base in bases:
                for parent, name in entries:
                    with contextlib.suppress(OSError):  # not cached, or gone
                        pyfuse3.invalidate_entry(pyfuse3.InodeT(base + parent), encode(name))

    unobserve = rules.observe(hidden_changed)

    def stop() -> None:
        with contextlib.suppress(ValueError):  # run once by a loss, again by the unmount
            unobserve()

    handle._cleanups.append(stop)


@contextlib.contextmanager
def _trimming(tree: Tree) -> Iterator[None]:
    """Return freed file data to the system while mounted (see ``_allocator``)."""
    trimmer = Trimmer(tree.budget)
    trimmer.start()
    try:
        yield
    finally:
        trimmer.stop()


@contextlib.contextmanager
def _terminate_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM into SystemExit in the main thread, so the mount is cleaned up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
