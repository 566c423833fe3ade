"""The daemon process: one workspace, its FUSE mount and its control socket, nothing else.

The FUSE loop runs in the mount's own thread (``workspacefs.fuse.mount``);
the control server (hypercorn, trio-native) runs in the main thread, and
each request in a worker thread. No caller's code ever runs here, so the
FUSE loop competes for the GIL only with the requests themselves, and the
switch interval is lowered so a busy request thread yields it within ~0.5 ms.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve

from .. import git
from .._errors import BusyError, MountedInsideError, MountLostError
from ..fs import InMemoryFilesystem, Rule, from_json
from ..fuse import Mount, mount, refuse_if_mounted_inside
from ..posix import canonical_mountpoint
from ._app import create_app
from ._durability import Kept, open_kept
from ._load import load_source
from ._options import DaemonOptions, parse_load_limits
from ._runtime import (
    DaemonLock,
    MountRecord,
    RuntimePaths,
    read_record,
    write_record,
)
from ._sources import parse_source
from ._wire import Json, encode_error
from ._workspace import Workspace, WorkspaceInfo, now_iso

log = logging.getLogger(__name__)

SWITCH_INTERVAL = float(os.environ.get("WORKSPACEFS_SWITCH_INTERVAL", "0.0005"))
"""Seconds a thread may hold the GIL while another waits (Python's default: 0.005).
A request that computes (a grep of a big tree, or just HTTP parsing) then
delays a FUSE request by about this much per hand-over; measured in benchmarks/bench_daemon.py."""

LIVENESS_PERIOD = 1.0
"""Seconds between checks that the FUSE loop still serves (an external
``fusermount3 -u`` ends it; the daemon then exits too)."""


def _bind(path: Path) -> socket.socket:
    """A listening Unix socket at ``path``, never reachable by anyone else: created
    under umask 077 (so no moment exists where it is open) and inside the
    owner-only runtime directory."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a dead daemon's; the lock says nobody owns it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        listener.bind(os.fspath(path))
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    listener.listen(128)
    return listener


def _start(options: DaemonOptions, stack: contextlib.ExitStack) -> tuple[Workspace, Mount, int]:
    """Take the lock, load the workspace, mount it, open the socket, publish the record.

    Each step registers its undoing on ``stack``.
    """
    mountpoint = canonical_mountpoint(options.mountpoint)
    paths = RuntimePaths.of(mountpoint)
    lock = DaemonLock(paths.lock)
    if not lock.acquire():
        other = read_record(paths.record)
        owner = f" (daemon pid {other.pid})" if other else ""
        raise BusyError(f"a workspace is already mounted here{owner}", mountpoint)
    stack.callback(lock.release)
    with contextlib.suppress(FileNotFoundError):
        paths.record.unlink()  # a dead daemon's
    source = parse_source(options.source)

    def load() -> InMemoryFilesystem:
        return load_source(
            source,
            mountpoint,
            limits=parse_load_limits(options.load_limits),
            special_modes=options.special_modes,
        )

    kept = open_kept(
        options, mountpoint, None if source.kind == "empty" else load, source.repository
    )
    if kept.durable is None:
        return _mount_kept(options, stack, kept, source.repository, paths)
    stack.callback(kept.durable.close)  # after the unmount: the last changes go too
    try:
        return _mount_kept(options, stack, kept, source.repository, paths)
    except BaseException:
        # A new store is left as it was found (no workspace): the same start, with its
        # source, can be tried again.
        kept.durable.abandon()
        raise


def _mount_kept(
    options: DaemonOptions,
    stack: contextlib.ExitStack,
    kept: Kept,
    source_repository: str | None,
    paths: RuntimePaths,
) -> tuple[Workspace, Mount, int]:
    """The rest of ``_start``: mount ``kept``'s workspace (loaded from
    ``source_repository``, if from git), open the socket, publish the record."""
    mountpoint = canonical_mountpoint(options.mountpoint)
    fs = kept.fs
    fs.blame_full_commands = options.blame_full_commands  # before anything is attributed
    repository = _repository(options, source_repository, kept)
    own = os.path.join(kept.store, "git") if kept.store else None
    if repository == own and os.path.isdir(repository):
        # The store's own repository: written by its daemon alone (the store is locked),
        # so a ref lock or a partial pack there is a killed persist's or checkpoint's.
        for leftover in git.remove_leftovers(repository):
            log.warning("removed %s, left by a writer that was killed", leftover)
    info = WorkspaceInfo(
        mountpoint=mountpoint,
        socket=os.fspath(paths.socket),
        pid=os.getpid(),
        read_only=options.read_only,
        repository=os.path.abspath(repository),
        started_at=now_iso(),
        log=os.fspath(paths.log),
        name=kept.name,
        store=kept.store,
        durability=options.durability,
        interval=options.interval,
    )
    workspace = Workspace(fs, info, kept.durable, kept.recovery)
    given = [from_json(Rule, rule) for rule in options.rules]
    workspace.start_rules(given)  # in force before the mount serves
    durable = kept.durable
    handle = stack.enter_context(
        mount(
            workspace.view,
            mountpoint,
            allow_other=options.allow_other,
            read_only=options.read_only,
            latency_hint=options.latency_hint,
            on_sync=None if durable is None else durable.sync,
            on_change=durable.sync if durable and options.durability == "always" else None,
            before_change=None if durable is None else durable.check_writable,
        )
    )
    workspace.attach(handle)
    if durable is not None and not fs.tree.unlisted:
        durable.sync()  # a new workspace is on disk before the mount returns
    hydration = git.hydration(fs)
    if hydration is not None:
        # A large snapshot still being listed: on disk once listed, or at the first
        # change or sync (each lists the rest first). Stopped before the store closes.
        stack.callback(hydration.stop)
        hydration.start()
    listener = _bind(paths.socket)
    stack.callback(lambda: paths.socket.unlink(missing_ok=True))
    record = MountRecord(
        mountpoint=mountpoint,
        socket=info.socket,
        pid=info.pid,
        workspace_id=fs.workspace_id,
        started_at=info.started_at,
        read_only=options.read_only,
        repository=info.repository,
        log=info.log,
        name=kept.name,
        store=kept.store,
        durability=options.durability,
    )
    write_record(paths, record)
    stack.callback(lambda: paths.record.unlink(missing_ok=True))
    return workspace, handle, listener.detach()


def _repository(options: DaemonOptions, loaded_from: str | None, kept: Kept) -> str:
    """Where ``persist`` writes: ``--persist``, else what the store remembers of it
    (a resumed workspace persists where it did), else the repository it was loaded
    from, else the store's own repository (or, kept nowhere, the user's default)."""
    store = None if kept.durable is None else kept.durable.store
    remembered = None if store is None else store.setting("persist")
    given = None if options.repository is None else os.path.abspath(options.repository)
    if store is not None and given is not None and given != remembered:
        store.set_setting("persist", given)  # written (and synced) only when it changes
    remembered = remembered or (None if store is None else store.base())
    chosen = options.repository or loaded_from or remembered
    if chosen is None and kept.store is not None:
        chosen = os.path.join(kept.store, "git")
    return os.path.abspath(chosen or git.default_repository(kept.fs.workspace_id))


async def _serve(workspace: Workspace, handle: Mount, fd: int) -> None:
    """Serve the control API on the listening socket ``fd`` until told to stop."""
    done = trio.Event()

    async def shutdown() -> None:
        done.set()

    async def watch_signals() -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                try:
                    refuse_if_mounted_inside(workspace.facts.mountpoint)
                except MountedInsideError as exc:
                    # Going now would detach the inner mounts with ours: keep serving.
                    log.error("signal %d: %s", signum, exc.strerror)
                    continue
                log.info("signal %d: unmounting", signum)
                done.set()
                return

    async def watch_mount() -> None:
        while handle.running:
            await trio.sleep(LIVENESS_PERIOD)
        log.error("the FUSE loop stopped; shutting down")
        done.set()

    config = Config()
    config.bind = [f"fd://{fd}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # one handler: the root's
    config.graceful_timeout = 2.0
    app = create_app(workspace, shutdown, done.is_set)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_signals)
        nursery.start_soon(watch_mount)
        await hypercorn_serve(app, config, shutdown_trigger=done.wait)  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()


Notify = Callable[[Json], None]


def run_daemon(options: DaemonOptions, notify: Notify) -> int:
    """Run a workspace daemon in this process until it is unmounted or signalled.

    ``notify`` is called once: ``{"ok": true, "record": ...}`` when the mount
    and the socket serve, or ``{"ok": false, "error": ...}`` if starting
    failed. Returns the exit status.
    """
    sys.setswitchinterval(SWITCH_INTERVAL)
    started = False
    try:
        with contextlib.ExitStack() as stack:
            workspace, handle, fd = _start(options, stack)
            log.info("serving %s on %s", workspace.facts.mountpoint, workspace.facts.socket)
            record = read_record(RuntimePaths.of(workspace.facts.mountpoint).record)
            assert record is not None, "_start wrote it"
            notify({"ok": True, "record": record.to_dict()})
            started = True
            trio.run(_serve, workspace, handle, fd)
            log.info("unmounting %s", workspace.facts.mountpoint)
    except BaseException as exc:
        if started and isinstance(exc, MountLostError):
            # The mount went from under the daemon (unmounted from outside, or its FUSE
            # loop died): said where it happened; here only that the daemon stops.
            log.warning("the daemon stops: %s", exc.strerror)
            return 1
        if started:
            log.exception("daemon failed")
            return 1
        _, body = encode_error(exc)
        log.error("could not start: %s", exc)
        notify({"ok": False, **body})
        return 1
    return 0


def fd_notifier(fd: int) -> Notify:
    """A ``notify`` that writes one JSON line to ``fd`` and closes it."""

    def notify(message: Json) -> None:
        with os.fdopen(fd, "w", encoding="ascii") as pipe:
            pipe.write(json.dumps(message) + "\n")

    return notify
