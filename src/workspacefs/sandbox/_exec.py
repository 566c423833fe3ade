"""One command in a running container: its process group, its output, its deadline.

The container's runner (``_container``) starts the command on request, from the
files put in a directory of the container's channel: ``script`` (the working
directory, the environment and the command line), ``in`` (its stdin) and three
FIFOs this process reads: ``out``, ``err`` and ``status``. The runner starts the
script in a session of its own with ``setsid``, so the command and everything it
forks share one process group whose id is the session leader's pid; the leader
writes that id to ``status`` before it runs the script, and the runner writes the
exit status there once the command has ended.

- When the command exits, the runner kills what is left of its group (jobs
  it put in the background): a command is a unit that ends together, and
  nothing it started goes on changing the workspace after its diff is taken.
  A process that starts a session of its own (``setsid``, a daemon) leaves
  the group and keeps running until the sandbox closes; the runner waits
  0.2 s before the kill, only when something is left, so a daemon forked in
  the command's last moment has left by then.
- At the deadline a ``kill`` request kills the whole group.

Output is read as it comes (``selectors``), kept by ``Capture`` within its
limit, until the exit status comes (then what is in the FIFOs is drained: a
daemon the command left may hold them open for ever).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import selectors
import shlex
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._errors import InvalidArgumentError, NotADirectoryFsError
from ..fs import CAUSE_VARIABLE, Cause, Filesystem, current_cause
from ._config import SandboxConfig, check_env
from ._container import Container
from ._output import Capture, Output

START_PAUSE = 0.02
"""Seconds before a command the runner could not start is started again (doubling)."""
START_PATIENCE = 2.0
"""Seconds a command that cannot be started is tried for."""
NO_ROOM = (
    b"workspacefs: the container could not start the command: no process could be made "
    b"(its process limit is reached)\n"
)

KILL_GRACE = 5.0
"""Seconds to wait for the exit status after the group is killed."""

CHUNK = 1 << 16
DRAIN_MAX = 1 << 20
"""Bytes read from each output once the command has ended: a pipe's most
(``/proc/sys/fs/pipe-max-size``'s default)."""


@dataclass(frozen=True, slots=True)
class Completed:
    """How a command ended.

    Attributes:
        exit_code: The command's exit status (128 + n if a signal n ended it).
        stdout: What it printed, within the limit.
        stderr: What it printed to stderr, within the limit.
        duration: Seconds from start to end, waiting for output included.
        timed_out: True if the deadline passed and the group was killed.
    """

    exit_code: int
    stdout: Output
    stderr: Output
    duration: float
    timed_out: bool


@dataclass(frozen=True, slots=True)
class CheckedCommand:
    """A command line with the arguments ``exec`` and ``try_exec`` checked (see
    ``PodmanSandbox.exec``): what ``run`` needs to run it in a container."""

    command: str
    timeout: float
    cwd: str | None
    env: Sequence[tuple[str, str]]
    stdin: bytes | None
    output_limit: int

    def run(self, container: Container) -> Completed:
        """Run it in ``container`` (``run_command``)."""
        return run_command(
            container,
            self.command,
            timeout=self.timeout,
            cwd=self.cwd,
            env=self.env,
            stdin=self.stdin,
            output_limit=self.output_limit,
        )


def caused(command: CheckedCommand, call_id: str) -> CheckedCommand:
    """``command`` with the call it runs for in its environment (``WORKSPACEFS_CAUSE``):
    the call in effect (a ``shell`` tool call's name and id), else ``call_id``, and the
    command line. The mount attributes what its processes write to it (``blame``)."""
    outer = current_cause() or Cause()
    call = Cause.call(outer.tool, outer.call_id or call_id, command.command)
    return dataclasses.replace(command, env=[(CAUSE_VARIABLE, call.environment()), *command.env])


def check_command(
    config: SandboxConfig,
    filesystem: Filesystem,
    command: str,
    timeout: float | None,
    cwd: str | None,
    env: Mapping[str, str] | None,
    stdin: str | bytes | None,
) -> CheckedCommand:
    """A command's arguments checked, against the sandbox's ``config`` and the
    workspace ``filesystem`` seen at ``config.workdir`` (see ``PodmanSandbox.exec``).

    Raises:
        InvalidArgumentError: An empty command or a bad argument.
        FileNotFoundError, NotADirectoryError: ``cwd`` is in the workspace and is
            not a directory there.
    """
    if not isinstance(command, str) or not command.strip() or "\0" in command:
        raise InvalidArgumentError("the command must be a non-empty string without NUL", None)
    timeout = config.timeout if timeout is None else timeout
    if timeout <= 0:
        raise InvalidArgumentError("timeout must be positive", None)
    directory = None
    if cwd is not None:
        if "\0" in cwd:
            raise InvalidArgumentError("cwd must not contain NUL", cwd)
        directory = os.path.normpath(os.path.join(config.workdir, cwd))
        workdir = config.workdir
        if (directory == workdir or directory.startswith(workdir + "/")) and not (
            filesystem.stat(os.path.relpath(directory, workdir)).is_directory
        ):
            raise NotADirectoryFsError("cwd is not a directory", directory)
    pairs = tuple(check_env(env))
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return CheckedCommand(command, timeout, directory, pairs, data, config.output_limit)


def command_script(command: str, cwd: str | None, env: Sequence[tuple[str, str]]) -> bytes:
    """The script the runner runs for ``command``: into ``cwd``, ``env`` exported, then
    the command line with ``/bin/sh -c``."""
    lines = [] if cwd is None else [f"cd -- {shlex.quote(cwd)} || exit 127"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env]
    lines.append(f"exec /bin/sh -c {shlex.quote(command)}")
    return "\n".join([*lines, ""]).encode("utf-8", "surrogateescape")


def run_command(
    container: Container,
    command: str,
    *,
    timeout: float,
    cwd: str | None = None,
    env: Sequence[tuple[str, str]] = (),
    stdin: bytes | None = None,
    output_limit: int,
) -> Completed:
    """Run ``command`` with ``/bin/sh -c`` in ``container``; see the module docstring.

    A command the runner could not start (no process could be made: the container's
    process limit, reached by a command that just ended and whose processes are still
    being reaped) is started again after a pause, up to ``START_PATIENCE`` seconds;
    then it fails with exit status 126 and says why on stderr.

    Raises:
        PodmanError: The container stopped before the command could start.
    """
    script = command_script(command, cwd, env)
    started = time.monotonic()
    deadline = started + timeout
    pause = START_PAUSE
    with container.running_command:
        while True:
            out, err = Capture(output_limit), Capture(output_limit)
            running, timed_out = _run_once(container, script, stdin or b"", deadline, out, err)
            now = time.monotonic()
            if not running.unstarted or now + pause > min(deadline, started + START_PATIENCE):
                break
            time.sleep(pause)
            pause *= 2
    if running.unstarted:
        err.feed(NO_ROOM)
    return Completed(
        exit_code=126 if running.unstarted else running.exit_code,
        stdout=out.result(),
        stderr=err.result(),
        duration=time.monotonic() - started,
        timed_out=timed_out,
    )


def _run_once(
    container: Container, script: bytes, stdin: bytes, deadline: float, out: Capture, err: Capture
) -> tuple[_Running, bool]:
    """Ask the runner to run ``script`` once; how it went, and whether it timed out."""
    number, directory = container.new_command()
    opened: list[int] = []
    try:
        _write(os.path.join(directory, "script"), script)
        _write(os.path.join(directory, "in"), stdin)
        for name in ("out", "err", "status"):
            path = os.path.join(directory, name)
            os.mkfifo(path, 0o622)
            os.chmod(path, 0o622)  # whatever the umask: the container's user writes to it
            opened.append(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
        opened.append(container.lifeline())
        stdout, stderr, status, lifeline = opened
        running = _Running(container, number, stdout, stderr, status, lifeline, out, err)
        container.request("run", number)
        return running, running.pump(deadline)
    finally:
        for fd in opened:
            os.close(fd)
        shutil.rmtree(directory, ignore_errors=True)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        os.fchmod(fd, 0o644)  # whatever the umask: the container's user reads it
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class _Running:
    """One command's descriptors while it runs, and what its status said."""

    def __init__(
        self,
        container: Container,
        number: str,
        stdout: int,
        stderr: int,
        status: int,
        lifeline: int,
        out: Capture,
        err: Capture,
    ) -> None:
        self._container = container
        self._unstarted_line = f"unstarted {number}".encode()
        self._outputs = {stdout: out.feed, stderr: err.feed}
        self._status = status
        self._lifeline = lifeline
        self._said = b""
        self.pgid: int | None = None
        self.exit_code = 255  # unless the status says otherwise
        self._exited = False
        self._ended = False  # the status closed, or the container stopped
        self._lost = False
        self._heard_runner = b""

    @property
    def unstarted(self) -> bool:
        """True if the command never ran: the runner could not start it, or its group's
        leader never said its id (the job could not make it)."""
        return self._ended and self.pgid is None and not self._exited and not self._lost

    def pump(self, deadline: float) -> bool:
        """Move output until the command's exit status comes; True if it timed out.
        Interrupted (Ctrl-C, a signal turned exception), it kills the command's group."""
        try:
            return self._pump(deadline)
        except BaseException:
            if self.pgid is not None:
                with contextlib.suppress(OSError):
                    self._container.request("kill", str(self.pgid))
            raise

    def _pump(self, deadline: float) -> bool:
        timed_out = killed = False
        give_up: float | None = None  # after the deadline: when to stop waiting
        with selectors.DefaultSelector() as selector:
            for fd in (*self._outputs, self._status, self._lifeline):
                selector.register(fd, selectors.EVENT_READ)
            while not self._exited and not self._ended:
                now = time.monotonic()
                if give_up is None and now >= deadline:
                    timed_out = True
                    give_up = now + KILL_GRACE
                if timed_out and not killed and self.pgid is not None:
                    self._container.request("kill", str(self.pgid))
                    killed = True
                if give_up is not None and now >= give_up:
                    break
                wait = (give_up if give_up is not None else deadline) - now
                for key, _ in selector.select(timeout=max(0.0, min(wait, 1.0))):
                    self._read(key.fd, selector)
        for fd, feed in self._outputs.items():  # what the command wrote before its end
            with contextlib.suppress(BlockingIOError):
                # What a FIFO holds at most: a daemon the command left may write on.
                for _ in range(DRAIN_MAX // CHUNK):
                    if not (data := os.read(fd, CHUNK)):
                        break
                    feed(data)
        if killed and not self._exited:
            self.exit_code = 137
        return timed_out

    def _read(self, fd: int, selector: selectors.BaseSelector) -> None:
        data = os.read(fd, CHUNK)
        if fd == self._status:
            self._heard(data)
        elif fd == self._lifeline:
            if not data:  # the container stopped under the command
                self._container.lost()
                self._ended = self._lost = True
            self._heard_runner += data
            if self._unstarted_line in self._heard_runner.split(b"\n"):
                self._ended = True
        elif data:
            self._outputs[fd](data)
        else:  # every writer closed it
            selector.unregister(fd)

    def _heard(self, data: bytes) -> None:
        """A piece of the status: ``pgid N`` first, ``exit N`` last."""
        if not data:
            self._ended = True
            return
        self._said += data
        *lines, self._said = self._said.split(b"\n")
        for line in lines:
            word, _, value = line.partition(b" ")
            if not value.isdigit():
                continue
            if word == b"pgid" and self.pgid is None and int(value) > 1:
                self.pgid = int(value)
            elif word == b"exit":
                self.exit_code = int(value)
                self._exited = True
