"""One command in a running container: its process group, its output, its deadline.

``podman exec`` starts a shell (the *runner*) that starts the command in a
session of its own with ``setsid``, so the command and everything it forks
share one process group whose id is the session leader's pid. The leader
prints that id as the first line of stderr before it ``exec``s the command;
``run_command`` takes the line out of the output and keeps the id.

- When the command exits, the runner kills what is left of its group (jobs
  it put in the background): a command is a unit that ends together, and
  nothing it started goes on changing the workspace after its diff is taken.
  A process that starts a session of its own (``setsid``, a daemon) leaves
  the group and keeps running until the sandbox closes; the runner waits
  0.2 s before the kill, only when something is left, so a daemon forked in
  the command's last moment has left by then.
- At the deadline ``podman exec ... kill -9 -PGID`` kills the whole group.
  Killing the ``podman exec`` client would not do it: the command runs on
  under conmon in the container.

Output is read as it comes (``selectors``), kept by ``Capture`` within its
limit; stdin is written in pieces as the pipe accepts them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._errors import InvalidArgumentError, NotADirectoryFsError
from ..fs import CAUSE_VARIABLE, Cause, Filesystem, current_cause
from ._config import SandboxConfig, check_env
from ._container import Container
from ._output import Capture, Output
from ._podman import podman_command, podman_env, run_podman

MARKER = b"\x1ewsfs-pgid "
"""Starts the line carrying the command's process-group id (never printed by a command)."""

RUNNER = (
    "exec 3<&0\n"
    # The background job's stdin is /dev/null unless redirected: hand it ours.
    'setsid /bin/sh -c \'printf "\\036wsfs-pgid %s\\n" "$$" >&2; exec /bin/sh -c "$1"\' '
    'wsfs-command "$1" <&3 3<&- &\n'
    "pid=$!\n"
    "exec 3<&-\n"
    'wait "$pid"; status=$?\n'
    # Jobs left behind? Give one that is daemonizing time to leave the group first.
    'if kill -0 -"$pid" 2>/dev/null; then sleep 0.2; kill -9 -"$pid" 2>/dev/null; fi\n'
    'exit "$status"\n'
)
"""The runner: ``sh -c RUNNER wsfs-runner COMMAND``. ``setsid`` execs in place (a
background job is never a group leader), so ``$!`` is the group's id."""

KILL_GRACE = 5.0
"""Seconds to wait for output to end after the group is killed."""

CHUNK = 1 << 16


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
            container.name,
            self.command,
            timeout=self.timeout,
            cwd=self.cwd,
            env=self.env,
            stdin=self.stdin,
            output_limit=self.output_limit,
            workdir=container.workdir,
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


class _Stderr:
    """Stderr with the process-group line taken out of it."""

    def __init__(self, capture: Capture) -> None:
        self.capture = capture
        self.pgid: int | None = None
        self._pending: bytes | None = b""  # the first line, until it is complete

    def feed(self, data: bytes) -> None:
        if self._pending is None:
            self.capture.feed(data)
            return
        self._pending += data
        if b"\n" not in self._pending and len(self._pending) < 64:
            return
        head, newline, rest = self._pending.partition(b"\n")
        self._pending = None
        if head.startswith(MARKER) and head[len(MARKER) :].isdigit():
            self.pgid = int(head[len(MARKER) :])
            data = rest
        else:
            data = head + newline + rest
        if data:
            self.capture.feed(data)

    def finish(self) -> Output:
        if self._pending:  # output ended before a line did
            self.capture.feed(self._pending)
        self._pending = None
        return self.capture.result()


def exec_argv(
    container: str,
    command: str,
    *,
    cwd: str | None,
    env: Sequence[tuple[str, str]],
    interactive: bool,
) -> list[str]:
    """``podman exec`` of ``command`` under the runner."""
    argv = ["exec"]
    if interactive:
        argv.append("--interactive")
    if cwd is not None:
        argv.append(f"--workdir={cwd}")
    for name, value in env:
        argv.append(f"--env={name}={value}")
    return podman_command(*argv, container, "/bin/sh", "-c", RUNNER, "wsfs-runner", command)


def run_command(
    container: str,
    command: str,
    *,
    timeout: float,
    cwd: str | None = None,
    env: Sequence[tuple[str, str]] = (),
    stdin: bytes | None = None,
    output_limit: int,
    workdir: str,
) -> Completed:
    """Run ``command`` with ``/bin/sh -c`` in ``container``; see the module docstring.

    ``podman exec`` runs in ``workdir``, the sandbox's directory (``Container.workdir``).
    """
    argv = exec_argv(container, command, cwd=cwd, env=env, interactive=stdin is not None)
    started = time.monotonic()
    deadline = started + timeout
    out = Capture(output_limit)
    err = _Stderr(Capture(output_limit))
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=podman_env(),
        cwd=workdir,
        start_new_session=True,  # Ctrl-C is ours to handle (below), not the client's
    )
    try:
        timed_out = _pump(proc, container, deadline, out, err, stdin or b"")
        exit_code = _reap(proc)
    except BaseException:
        # Interrupted (Ctrl-C, a signal turned exception): the command must not run on.
        if err.pgid is not None:
            _kill_group(container, err.pgid)
        proc.kill()
        proc.wait()
        raise
    finally:
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    return Completed(
        exit_code=exit_code,
        stdout=out.result(),
        stderr=err.finish(),
        duration=time.monotonic() - started,
        timed_out=timed_out,
    )


def _pump(
    proc: subprocess.Popen[bytes],
    container: str,
    deadline: float,
    out: Capture,
    err: _Stderr,
    stdin: bytes,
) -> bool:
    """Move output and input until the command's pipes close; True if it timed out."""
    assert proc.stdout is not None
    assert proc.stderr is not None
    timed_out = killed = False
    give_up: float | None = None  # after the deadline: when to stop waiting for output
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, out.feed)
        selector.register(proc.stderr, selectors.EVENT_READ, err.feed)
        pending = memoryview(stdin)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            if pending:
                selector.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        while selector.get_map():
            now = time.monotonic()
            if give_up is None and now >= deadline:
                timed_out = True
                give_up = now + KILL_GRACE
            if timed_out and not killed and err.pgid is not None:
                _kill_group(container, err.pgid)
                killed = True
            if give_up is not None and now >= give_up:
                break
            wait = (give_up if give_up is not None else deadline) - now
            for key, _ in selector.select(timeout=max(0.0, min(wait, 1.0))):
                if key.fileobj is proc.stdin:
                    pending = _write_some(proc, selector, pending)
                    continue
                data = os.read(key.fd, CHUNK)
                if data:
                    key.data(data)
                else:
                    selector.unregister(key.fileobj)
    return timed_out


def _write_some(
    proc: subprocess.Popen[bytes], selector: selectors.BaseSelector, pending: memoryview
) -> memoryview:
    assert proc.stdin is not None
    try:
        written = os.write(proc.stdin.fileno(), pending[:CHUNK])
    except BrokenPipeError:  # the command stopped reading: the rest is not wanted
        written = len(pending)
    except BlockingIOError:
        written = 0
    pending = pending[written:]
    if not pending:
        selector.unregister(proc.stdin)
        proc.stdin.close()
    return pending


def _kill_group(container: str, pgid: int) -> None:
    # sh's own kill: every image has a shell, not every one a kill binary.
    run_podman("exec", container, "/bin/sh", "-c", f"kill -9 -{pgid}", check=False, timeout=30)


def _reap(proc: subprocess.Popen[bytes]) -> int:
    """The exit status of ``podman exec`` (the command's), killing the client if it hangs."""
    try:
        return proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
