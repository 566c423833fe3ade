"""One long-lived container, bound to this process by its stdin, which runs commands
on request.

The container's command is the *runner*: a shell that reads requests from its
stdin, and ``podman run --interactive`` keeps that stdin connected to a pipe
this process holds. When the pipe closes, because ``stop`` closed it or because
this process died however it died (SIGKILL included), the runner reads
end-of-file, the container exits and ``--rm`` removes it: no container outlives
its sandbox.

A request is a line: ``run ID`` starts the command whose files this process put
in ``CHANNEL/ID`` (its script, its stdin, and FIFOs for its stdout, its stderr
and its status), ``kill PGID`` kills a process group. A command that cannot be
started (no process can be made: the container's process limit) is answered
with ``unstarted ID`` on the runner's stdout. ``CHANNEL`` is a private
directory of this process's, bound read-only into the container: it holds the
files of this container's commands and nothing else, and through a read-only
mount a process in the container can write to a FIFO but change nothing there.
So a command costs two forks of the container's shell, not a ``podman exec``
(about 120 ms of Podman, conmon and the OCI runtime each, on the project's VMs).
See ``_exec`` for the command's side.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import selectors
import shutil
import subprocess
import threading
import time

from ._podman import PodmanError, podman_command, podman_env, run_podman

START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0

CHANNEL = "/run/workspacefs"
"""Where the container sees its commands' files (read-only)."""

READY = b"ready"
RUNNER = (
    "command -v setsid >/dev/null 2>&1 || "
    "{ echo 'setsid is missing from the root filesystem (util-linux or busybox has it)' >&2; "
    "exit 127; }\n"
    # A command's job: ``setsid`` execs in place (a background job is never a group
    # leader), so $! is the group's id; the group's leader says it, then runs the script.
    "wsfs_job() {\n"
    '  exec 4>"$1/status"\n'
    '  setsid /bin/sh -c \'echo "pgid $$" >&4; exec 4>&-; exec /bin/sh "$1"\' '
    'wsfs-command "$1/script" <"$1/in" >"$1/out" 2>"$1/err" &\n'
    "  pid=$!\n"
    '  wait "$pid"; status=$?\n'
    # Jobs left behind? Give one that is daemonizing time to leave the group first.
    '  if kill -0 -"$pid" 2>/dev/null; then\n'
    "    command eval 'sleep 0.2'; kill -9 -\"$pid\" 2>/dev/null; n=0\n"
    # ...and the killed gone (reaped) before the command counts as ended, up to 1 s.
    '    while kill -0 -"$pid" 2>/dev/null && [ "$n" -lt 100 ]; do\n'
    "      command eval 'sleep 0.01'; n=$((n + 1))\n"
    "    done\n"
    "  fi\n"
    '  echo "exit $status" >&4\n'
    "}\n"
    "echo ready\n"
    "while read -r verb arg; do\n"
    '  case "$verb" in\n'
    # Twice in the background: the job is the init's child, which reaps it. ``command
    # eval``: a fork refused (the container's process limit reached) fails the request,
    # where it would end a shell that is not interactive, and the container with it.
    f"  run) command eval '(wsfs_job \"{CHANNEL}/$arg\" </dev/null >/dev/null 2>&1 &)' "
    '2>/dev/null || echo "unstarted $arg" ;;\n'
    '  kill) kill -9 -"$arg" 2>/dev/null ;;\n'
    "  esac\n"
    "done\n"
)
"""The container's command: check what commands need, say so, then serve requests until
the lifeline closes. It forks only to start a command, and survives a fork refused."""


class Container:
    """A started container; ``stop`` removes it.

    Args:
        name: The container's name.
        run_args: ``podman run`` arguments up to the root filesystem (the
            command is added here).
        log_path: Where ``podman run``'s stderr goes (read when it fails), in
            the sandbox's private directory; the commands' files go beside it.
    """

    def __init__(self, name: str, run_args: list[str], log_path: str) -> None:
        self.name = name
        self._log_path = log_path
        self.workdir = os.path.dirname(log_path)
        """The sandbox's private directory, the working directory of every Podman
        process for this container: conmon leaves a file named ``oom`` in its
        working directory when the kernel's OOM killer ends a command, which
        must not land in the directory the caller happens to be in."""
        self.channel = os.path.join(self.workdir, "exec")
        """The host's side of ``CHANNEL``: a directory per command."""
        shutil.rmtree(self.channel, ignore_errors=True)  # a container started here before
        os.mkdir(self.channel, 0o711)
        os.chmod(self.channel, 0o711)  # whatever the umask: the container's user may differ
        self._lock = threading.Lock()
        self.running_command = threading.Lock()
        """Held while a command runs: the runner answers a refused start on the lifeline,
        which one command reads at a time."""
        self._numbers = itertools.count(1)
        self._lost = False
        channel = f"--volume={self.channel}:{CHANNEL}:ro"
        argv = podman_command("run", "--interactive", "--rm", channel, *run_args)
        argv += ["/bin/sh", "-c", RUNNER]
        with open(log_path, "ab") as log:
            # A session of its own: Ctrl-C in a terminal must not reach Podman
            # and stop the container under a sandbox that is still closing.
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=podman_env(),
                cwd=self.workdir,
                start_new_session=True,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    @property
    def running(self) -> bool:
        """True while the container's runner waits for requests."""
        return not self._lost and self._proc.poll() is None

    def lifeline(self) -> int:
        """A new descriptor (the caller closes it) on the runner's output, which after
        ``ready`` says only ``unstarted ID`` of a command it could not start, and reads
        end-of-file once the container has stopped.

        Raises:
            PodmanError: The container has stopped.
        """
        with self._lock:
            stdout = self._proc.stdout
            if stdout is None or stdout.closed:
                raise PodmanError(f"the container has stopped: {self.log()}", None)
            return os.dup(stdout.fileno())

    def lost(self) -> None:
        """Note that the container stopped (its ``lifeline`` ended)."""
        self._lost = True

    def new_command(self) -> tuple[str, str]:
        """A new command's id and its directory on the host (made, private to it)."""
        with self._lock:
            number = str(next(self._numbers))
        directory = os.path.join(self.channel, number)
        os.mkdir(directory, 0o711)
        os.chmod(directory, 0o711)
        return number, directory

    def request(self, verb: str, arg: str) -> None:
        """Send the runner one request.

        Raises:
            PodmanError: The container has stopped.
        """
        assert self._proc.stdin is not None
        line = f"{verb} {arg}\n".encode()
        with self._lock:
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError) as exc:  # ValueError: closed by ``stop``
                self._lost = True
                raise PodmanError(f"the container has stopped: {self.log()}", None) from exc

    def _wait_ready(self) -> None:
        assert self._proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT
        line = b""
        with selectors.DefaultSelector() as selector:
            selector.register(self._proc.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n") and time.monotonic() < deadline:
                if selector.select(timeout=deadline - time.monotonic()):
                    piece = os.read(self._proc.stdout.fileno(), 256)
                    if not piece:
                        break
                    line += piece
        if line.strip() != READY:
            if self.running:
                self._proc.kill()
            self._proc.wait()
            raise PodmanError(f"the container did not start: {self.log()}", None)

    def log(self) -> str:
        """What ``podman run`` said on stderr (its last lines)."""
        try:
            with open(self._log_path, encoding="utf-8", errors="replace") as log:
                lines = [line.strip() for line in log if line.strip()]
        except OSError:
            lines = []
        return " / ".join(lines[-4:]) or f"podman run exited with {self._proc.poll()}"

    def stop(self) -> None:
        """Kill and remove the container now; safe to call twice."""
        # Even if podman run is gone, the container may not be: ask for it by name.
        run_podman("rm", "--force", "--time=0", "--ignore", self.name, check=False)
        with self._lock:
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        try:
            self._proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        shutil.rmtree(self.channel, ignore_errors=True)
