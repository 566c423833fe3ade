"""Starting a daemon in the background and waiting until its mount serves."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .._errors import BackendUnavailableError, BusyError
from ._load import parse_load_limits
from ._options import DaemonOptions, canonical_mountpoint
from ._runtime import MountRecord, RuntimePaths, is_alive, read_record
from ._sources import parse_source
from ._wire import decode_error

START_TIMEOUT = 120.0
"""Seconds to wait for a daemon to mount (loading a big source takes a while)."""


def _python_path() -> str:
    """PYTHONPATH for the daemon: this workspacefs first, so it runs the same code."""
    package_root = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)


def daemon_command(options: DaemonOptions, *, ready_fd: int | None, detach: bool) -> list[str]:
    """The command line of ``python -m workspacefs.daemon`` for ``options``."""
    command = [sys.executable, "-m", "workspacefs.daemon", options.mountpoint]
    if options.source is not None:
        command += ["--from", options.source]
    if options.repository is not None:
        command += ["--persist", options.repository]
    if options.read_only:
        command.append("--read-only")
    if not options.allow_other:
        command.append("--no-allow-other")
    if not options.latency_hint:
        command.append("--no-latency-hint")
    for setting in options.load_limits:
        command += ["--load-limit", setting]
    if options.special_modes:
        command.append("--special-modes")
    if ready_fd is not None:
        command += ["--ready-fd", str(ready_fd)]
    if detach:
        command.append("--detach")
    return command


def _last_log_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _wait_ready(fd: int, timeout: float, log: Path) -> dict[str, object]:
    """The daemon's one readiness message from the pipe ``fd``."""
    deadline = time.monotonic() + timeout
    data = b""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BackendUnavailableError(f"the daemon did not mount in {timeout:.0f} s", None)
            readable, _, _ = select.select([pipe], [], [], left)
            if not readable:
                continue
            chunk = pipe.read(65536)
            if not chunk:
                break
            data += chunk
    if not data.strip():
        detail = _last_log_line(log)
        raise BackendUnavailableError(
            f"the daemon exited before mounting: {detail or 'no message'} (log: {log})", None
        )
    message: dict[str, object] = json.loads(data)
    return message


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
    timeout: float = START_TIMEOUT,
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
            git source records.
        timeout: Seconds to wait for the mount.

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
    )
    read_end, write_end = os.pipe()
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        child = subprocess.Popen(
            daemon_command(options, ready_fd=write_end, detach=True),
            stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, pass_fds=(write_end,),
            start_new_session=True, cwd="/", env={**os.environ, "PYTHONPATH": _python_path()},
        )  # fmt: skip
    finally:
        os.close(write_end)
        os.close(log_fd)
    try:
        message = _wait_ready(read_end, timeout, paths.log)
    finally:
        child.wait()  # the first fork exits at once; the daemon is its child
    if message.get("ok"):
        record = message["record"]
        assert isinstance(record, dict)
        return MountRecord.from_dict(record)
    raise decode_error(message)


def _absolute_source(source: str, path: str | None) -> str:
    """``source`` with its path made absolute (the daemon runs in /)."""
    if path is None:
        return source
    _, sep, ref = source.partition("#")
    return path + sep + ref
