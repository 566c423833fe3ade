"""Helpers for the daemon and command-line tests: start, stop, run the command."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from support import logs
from support.interpreter import SOURCE_ROOT as SOURCE_ROOT
from workspacefs.daemon import MountRecord, connect, known_mounts, start
from workspacefs.fuse import is_stale, mounts_inside, recover


@contextlib.contextmanager
def private_runtime() -> Iterator[Path]:
    """A runtime directory (``XDG_RUNTIME_DIR``) of its own until the block ends, then
    every daemon still alive there stopped and the old one back; yields the directory
    (short: socket paths are limited)."""
    base = Path(tempfile.mkdtemp(prefix="wsfs-", dir="/tmp"))
    previous = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(base)
    try:
        yield base
    finally:
        for known in list(known_mounts()):
            if known.alive:
                stop(known.record)
        if previous is None:
            del os.environ["XDG_RUNTIME_DIR"]
        else:
            os.environ["XDG_RUNTIME_DIR"] = previous
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def scratch_dir() -> Iterator[Path]:
    """A temporary directory outside pytest's (``/tmp/pytest-of-*``), for mounts a
    test leaves stale on purpose: every pytest session start detaches the stale
    mounts under pytest's directories, so a session starting meanwhile would take
    them away. Removed afterwards unless something is still mounted in it."""
    base = Path(tempfile.mkdtemp(prefix="wsfs-scratch-", dir="/tmp"))
    try:
        yield base
    finally:
        if not mounts_inside(str(base)):
            shutil.rmtree(base, ignore_errors=True)


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (or is a zombie not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(record: MountRecord) -> None:
    """Unmount through the API; failing that, kill the daemon and detach its mount.
    The errors the daemon logged go to the log guard (``support.logs``)."""
    try:
        with connect(record.socket, timeout=10) as fs:
            fs.unmount(wait=10)
    except OSError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGKILL)
        if is_stale(record.mountpoint) or os.path.ismount(record.mountpoint):
            recover(record.mountpoint)
            subprocess.run(
                ["fusermount3", "-uz", record.mountpoint], capture_output=True, check=False
            )
    logs.ERRORS.add(logs.daemon_logged(record.log, record.pid))


class Daemons:
    """Starts daemons for one test and stops every one of them afterwards."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.started: list[MountRecord] = []

    def mountpoint(self, name: str = "ws") -> Path:
        path = self.base / name
        path.mkdir(exist_ok=True)
        return path

    def start(self, name: str = "ws", **options: object) -> MountRecord:
        record = start(self.mountpoint(name), **options)  # type: ignore[arg-type]
        self.started.append(record)
        return record

    def close(self) -> None:
        for record in reversed(self.started):
            stop(record)


def cli(
    *args: str,
    cwd: str | Path | None = None,
    timeout: float = 120,
    preexec_fn: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the ``workspacefs`` command in a subprocess, as a user would (``preexec_fn``
    runs in the child before it starts: e.g. ``MemoryLimit.preexec``, which a daemon
    the command spawns inherits)."""
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "workspacefs.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
        preexec_fn=preexec_fn,
    )


def cli_ok(*args: str, cwd: str | Path | None = None) -> str:
    """The command's stdout; it must succeed."""
    result = cli(*args, cwd=cwd)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def cli_json(*args: str, cwd: str | Path | None = None) -> object:
    """The command's ``--json`` output; it must succeed."""
    return json.loads(cli_ok(*args, "--json", cwd=cwd))


def demo_source(base: Path) -> Path:
    """``base/source``: ``src/app.py`` (``print('hello')``) and ``README.md`` (``# demo``)."""
    source = base / "source"
    (source / "src").mkdir(parents=True)
    (source / "src" / "app.py").write_text("print('hello')\n")
    (source / "README.md").write_text("# demo\n")
    return source


@contextlib.contextmanager
def cli_mounted(mountpoint: Path, source: Path, *options: str) -> Iterator[Path]:
    """``workspacefs mount MOUNTPOINT --from SOURCE OPTIONS`` for the block; its daemon
    is stopped afterwards if it still runs."""
    record = cli_json("mount", str(mountpoint), "--from", str(source), *options)
    assert isinstance(record, dict)
    try:
        yield mountpoint
    finally:
        if os.path.exists(record["socket"]):
            stop(MountRecord.from_dict(record))


@dataclass
class DebugProcess:
    """A ``workspacefs debug`` process and what it printed: the page's ``url`` (with
    the run's secret), where it answers (``base``, no trailing slash) and ``token``."""

    process: subprocess.Popen[str]
    url: str
    base: str
    token: str

    def get(self, route: str, **options: Any) -> httpx.Response:
        """GET ``route`` (``/api/...``) with the secret as a bearer token."""
        headers = {"authorization": f"Bearer {self.token}"}
        return httpx.get(self.base + route, headers=headers, **options)


def serve_debug(*args: str | os.PathLike[str]) -> DebugProcess:
    """Start ``workspacefs debug ARGS --port 0``; the process and the URL it printed.
    Stop it with ``stop_debug``."""
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
    server = subprocess.Popen(
        [sys.executable, "-m", "workspacefs.cli", "debug", *map(str, args), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    assert " at http://127.0.0.1:" in line, line
    url = line.split(" at ", 1)[1].split()[0]
    base, _, token = url.partition("/?token=")
    assert token, line
    return DebugProcess(server, url, base, token)


def stop_debug(debug: DebugProcess) -> None:
    """Stop a server ``serve_debug`` started (SIGINT, then SIGKILL after 30 s) and close
    its pipes."""
    server = debug.process
    if server.poll() is None:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    for stream in (server.stdout, server.stderr):
        if stream is not None:
            stream.close()
