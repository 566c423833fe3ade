"""Starting a daemon in the background and waiting until its mount serves."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from .._errors import BackendUnavailableError, BusyError
from ..fs import Rule, to_json
from ..posix import canonical_mountpoint
from ..store import DEFAULT_INTERVAL
from ._options import START_TIMEOUT, DaemonOptions, check_durability, parse_load_limits
from ._runtime import MountRecord, RuntimePaths, is_alive, read_record, remove_files
from ._sources import parse_source
from ._wire import decode_error

STOP_GRACE = 5.0
"""Seconds a daemon that did not start in time gets to go after SIGTERM, then after SIGKILL."""

log = logging.getLogger(__name__)


def _python_path() -> str:
    """PYTHONPATH for the daemon: this workspacefs first, so it runs the same code."""
    package_root = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)


def daemon_command(options: DaemonOptions, *, ready_fd: int | None, detach: bool) -> list[str]:
    """The command line of ``python -m workspacefs.daemon`` for ``options`` (the mount
    point as itself, where ``ps`` shows it; the rest as JSON, read back by the same
    dataclass, so an option is declared once)."""
    command = [sys.executable, "-m", "workspacefs.daemon", options.mountpoint]
    command += ["--options", json.dumps(to_json(options))]
    if ready_fd is not None:
        command += ["--ready-fd", str(ready_fd)]
    if detach:
        command.append("--detach")
    return command


def _last_log_line(path: Path, since: int) -> str:
    """The last line this daemon logged: the log holds earlier daemons' lines before
    offset ``since``."""
    try:
        with open(path, "rb") as log_file:
            log_file.seek(since)
            text = log_file.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def _read_pipe(pipe: BinaryIO, deadline: float, data: bytearray) -> bool:
    """Add what the daemon writes on ``pipe`` to ``data`` until it closes the pipe
    (True: it notified and closed it, or exited) or ``deadline`` passes (False)."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        readable, _, _ = select.select([pipe], [], [], left)
        if not readable:
            continue
        chunk = pipe.read(65536)
        if not chunk:
            return True
        data += chunk


def _messages(data: bytes | bytearray) -> list[dict[str, object]]:
    """The complete JSON lines the daemon wrote: ``{"starting": pid}`` first, then its
    one result (``run_daemon``'s ``notify``)."""
    messages = []
    for line in data.split(b"\n")[:-1]:  # the last piece is an unfinished line, or empty
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict):
                messages.append(message)
    return messages


def _gone(pid: int | None, deadline: float) -> None:
    """Wait until the process ``pid`` no longer exists (init reaps it), or ``deadline``."""
    while pid is not None and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def _stop(group: int, pid: int | None, pipe: BinaryIO, point: str, paths: RuntimePaths) -> bool:
    """Stop a daemon that did not come up, and undo what it left; False if it
    would not go.

    SIGTERM to its process group first (a daemon that has mounted unmounts on
    it; one still loading just ends), SIGKILL if it is still there after
    ``STOP_GRACE`` seconds. It is gone when the readiness pipe closes (nothing
    else holds that end: the daemon keeps it from its children). Then a mount
    it left behind (killed, its mount answers ENOTCONN) is detached and its
    runtime files go.
    """
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signum)
        deadline = time.monotonic() + STOP_GRACE
        if _read_pipe(pipe, deadline, bytearray()):
            _gone(pid, deadline)
            break
    else:
        return False  # stuck in the kernel: touching its mount could hang here too
    from ..fuse import recover  # loads pyfuse3: only on this path

    try:
        recover(point)
    except OSError as exc:  # the caller's error says what went wrong first
        log.error("could not detach what the daemon left at %s: %s", point, exc)
    if not is_alive(paths):
        remove_files(paths)
    return True


def start(
    mountpoint: str | os.PathLike[str],
    *,
    source: str | None = None,
    repository: str | None = None,
    read_only: bool = False,
    allow_other: bool = True,
    latency_hint: bool = True,
    load_limits: Sequence[str] = (),
    special_modes: bool = False,
    blame_full_commands: bool = False,
    name: str | None = None,
    store: str | None = None,
    durability: str = "interval",
    interval: float = DEFAULT_INTERVAL,
    memory_budget: int | None = None,
    timeout: float = START_TIMEOUT,
    rules: Sequence[Rule] = (),
) -> MountRecord:
    """Start a daemon for a new workspace at ``mountpoint``; return once it serves.

    Args:
        mountpoint: An existing empty directory.
        source: ``DIR``, ``FILE.zip``, ``REPO.git`` or ``REPO.git#REF`` to start from.
        repository: Where ``persist`` writes.
        read_only: Serve it read-only.
        allow_other: Let other users and containers into the mount.
        latency_hint: Keep idle CPUs quick to wake while the mount serves
            (root only; see ``workspacefs.fuse.mount``).
        load_limits: ``NAME=N`` settings of ``git.LoadLimits`` for a git source.
        special_modes: Keep the setuid, setgid and sticky bits and the devices a
            git source records, and the bits an archive records.
        blame_full_commands: Blame keeps writers' full command lines, secrets
            included (default: masked, see ``Cause.redacted``).
        name: The workspace's name; a stopped workspace of that name is resumed
            (None: a new name is made, unless ``store`` is given).
        store: Keep the workspace in this store directory instead.
        durability: ``interval``, ``always`` or ``none`` (no store at all).
        interval: Seconds a change may wait for the disk under ``interval``.
        memory_budget: The most bytes of file data held in memory (None: the
            default); with a store, a cache target (docs/memory.md).
        timeout: Seconds to wait for the mount.
        rules: Access rules to declare on the workspace before it is mounted (kept in
            its store with those it had).

    Raises:
        BusyError: A workspace (or anything else) is mounted there already.
        FsError: The daemon could not start; the class says why (the same
            exception the daemon met).
    """
    point = canonical_mountpoint(mountpoint)
    paths = RuntimePaths.of(point)
    if is_alive(paths):
        other = read_record(paths.record)
        owner = f" (daemon pid {other.pid})" if other else ""
        raise BusyError(f"a workspace is already mounted here{owner}", point)
    parsed = parse_source(source)  # refuse a bad --from here, before any process starts
    parse_load_limits(load_limits)  # and bad limits
    options = DaemonOptions(
        mountpoint=point,
        source=None if source is None else _absolute_source(source, parsed.path),
        repository=None if repository is None else os.path.abspath(repository),
        read_only=read_only,
        allow_other=allow_other,
        latency_hint=latency_hint,
        load_limits=tuple(load_limits),
        special_modes=special_modes,
        blame_full_commands=blame_full_commands,
        name=name,
        store=None if store is None else os.path.abspath(store),
        durability=durability,
        interval=interval,
        rules=tuple(to_json(rule) for rule in rules),
        memory_budget=memory_budget,
    )
    check_durability(options)  # and a bad policy or name
    read_end, write_end = os.pipe()
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    since = os.fstat(log_fd).st_size
    try:
        child = subprocess.Popen(
            daemon_command(options, ready_fd=write_end, detach=True),
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(write_end,),
            start_new_session=True,
            cwd="/",
            env={**os.environ, "PYTHONPATH": _python_path()},
        )
    finally:
        os.close(write_end)
        os.close(log_fd)
    # The daemon is the child's child, in the session (and process group) the child
    # leads: the group's id is the child's pid while any of them lives.
    data = bytearray()
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        try:
            closed = _read_pipe(pipe, time.monotonic() + timeout, data)
        except BaseException:  # Ctrl-C while waiting: the daemon goes too
            _stop(child.pid, _announced(data), pipe, point, paths)
            raise
        finally:
            child.wait()  # the first fork exits at once
        if not closed:
            pid = _announced(data)
            stopped = (
                "stopped it"
                if _stop(child.pid, pid, pipe, point, paths)
                else "it does not stop, even killed"
            )
            stopped += "" if pid is None else f" (pid {pid})"
            detail = _last_log_line(paths.log, since)
            raise BackendUnavailableError(
                f"the daemon did not mount in {timeout:g} s; {stopped}"
                + (f"; its log ends: {detail}" if detail else "")
                + f" (log: {paths.log})",
                None,
            )
    results = [message for message in _messages(data) if "starting" not in message]
    if not results:
        detail = _last_log_line(paths.log, since)
        raise BackendUnavailableError(
            f"the daemon exited before mounting: {detail or 'no message'} (log: {paths.log})", None
        )
    message = results[-1]
    if message.get("ok"):
        record = message["record"]
        assert isinstance(record, dict)
        return MountRecord.from_dict(record)
    # The daemon said why it failed and closed the pipe on its way out: the error is
    # raised once it is gone, so that no caller sees a failed start's daemon alive.
    _gone(_announced(data), time.monotonic() + STOP_GRACE)
    raise decode_error(message)


def _announced(data: bytes | bytearray) -> int | None:
    """The pid the daemon announced on the pipe, if it got that far."""
    for message in _messages(data):
        pid = message.get("starting")
        if isinstance(pid, int):
            return pid
    return None


def _absolute_source(source: str, path: str | None) -> str:
    """``source`` with its path made absolute (the daemon runs in /)."""
    if path is None:
        return source
    _, sep, ref = source.partition("#")
    return path + sep + ref
