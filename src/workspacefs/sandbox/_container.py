"""One long-lived container, bound to this process by its stdin.

The container's command waits on its stdin (``cat >/dev/null``) and
``podman run --interactive`` keeps that stdin connected to a pipe this
process holds. Commands run beside it with ``podman exec``. When the pipe
closes, because ``stop`` closed it or because this process died however it
died (SIGKILL included), the command reads end-of-file, the container exits
and ``--rm`` removes it: no container outlives its sandbox.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time

from ._podman import PodmanError, podman_command, podman_env, run_podman

START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0

READY = b"ready"
KEEPALIVE = (
    "command -v setsid >/dev/null 2>&1 || "
    "{ echo 'setsid is missing from the root filesystem (util-linux or busybox has it)' >&2; "
    "exit 127; }; echo ready; exec cat >/dev/null"
)
"""The container's command: check what ``exec`` needs, say so, then wait on the lifeline."""


class Container:
    """A started container; ``stop`` removes it.

    Args:
        name: The container's name.
        run_args: ``podman run`` arguments up to the root filesystem (the
            command is added here).
        log_path: Where ``podman run``'s stderr goes (read when it fails), in
            the sandbox's private directory.
    """

    def __init__(self, name: str, run_args: list[str], log_path: str) -> None:
        self.name = name
        self._log_path = log_path
        self.workdir = os.path.dirname(log_path)
        """The sandbox's private directory, the working directory of every Podman
        process for this container: conmon leaves a file named ``oom`` in its
        working directory when the kernel's OOM killer ends a command, which
        must not land in the directory the caller happens to be in."""
        argv = podman_command("run", "--interactive", "--rm", *run_args)
        argv += ["/bin/sh", "-c", KEEPALIVE]
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
        """True while the container's command waits on the lifeline."""
        return self._proc.poll() is None

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
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            self._proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
