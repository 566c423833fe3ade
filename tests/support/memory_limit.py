"""A real memory limit for the processes a test starts: a memory cgroup of its own (v2 or
v1, whichever the machine has), else an address-space limit (``RLIMIT_AS``).

A cgroup is the limit a user's daemon meets under systemd, Podman or a CI runner: the
kernel's OOM killer ends a process that goes past it, which is exactly the loss the
memory tests look for. Children inherit the cgroup, so a command that spawns a daemon
puts the daemon under the same limit.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from support.interpreter import child_env

CGROUP_ROOT = Path("/sys/fs/cgroup")


class MemoryLimit:
    """A limit a child process joins with ``preexec`` (``subprocess`` ``preexec_fn=``)."""

    def __init__(self, limit: int, cgroup: Path | None, version: int) -> None:
        self.limit = limit
        self.cgroup = cgroup
        self.version = version
        """2 or 1 for a cgroup, 0 for ``RLIMIT_AS``."""

    @property
    def kind(self) -> str:
        """What enforces the limit, for messages."""
        return f"cgroup v{self.version}" if self.cgroup else "RLIMIT_AS"

    def preexec(self) -> None:
        """Put the calling (child) process under the limit; runs between fork and exec."""
        if self.cgroup is None:
            resource.setrlimit(resource.RLIMIT_AS, (self.limit, self.limit))
        else:
            (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer ended inside the cgroup (0 without
        one)."""
        if self.cgroup is None:
            return 0
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        for line in (self.cgroup / name).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def pids(self) -> list[int]:
        """The processes inside the cgroup now."""
        if self.cgroup is None:
            return []
        return [int(pid) for pid in (self.cgroup / "cgroup.procs").read_text().split()]


def _own_cgroup() -> tuple[Path, int] | None:
    """This process's memory cgroup directory and the cgroup version, if one is writable."""
    with open("/proc/self/cgroup", encoding="utf-8") as cgroups:
        lines = [line.rstrip("\n").split(":", 2) for line in cgroups]
    for _, controllers, path in lines:
        if "memory" in controllers.split(","):
            base = CGROUP_ROOT / "memory" / path.lstrip("/")
            if (base / "memory.limit_in_bytes").exists() and os.access(base, os.W_OK):
                return base, 1
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        path = next(p for _, c, p in lines if c == "")
        base = CGROUP_ROOT / path.lstrip("/")
        if "memory" in (base / "cgroup.subtree_control").read_text().split() and os.access(
            base, os.W_OK
        ):
            return base, 2
    return None


@contextlib.contextmanager
def memory_limit(limit: int) -> Iterator[MemoryLimit]:
    """A memory limit of ``limit`` bytes for the block; afterwards every process left
    under it is killed and the cgroup removed."""
    found = _own_cgroup()
    if found is None:
        yield MemoryLimit(limit, None, 0)
        return
    parent, version = found
    cgroup = parent / f"workspacefs-test-{uuid.uuid4().hex[:12]}"
    cgroup.mkdir()
    try:
        if version == 1:
            (cgroup / "memory.limit_in_bytes").write_text(str(limit))
        else:
            (cgroup / "memory.max").write_text(str(limit))
            (cgroup / "memory.swap.max").write_text("0")
        yield MemoryLimit(limit, cgroup, version)
    finally:
        _empty(cgroup)


def _empty(cgroup: Path) -> None:
    """Kill what is left in the cgroup, then remove it."""
    deadline = time.monotonic() + 10
    while True:
        pids = [int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            cgroup.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def python_under_limit(
    code: str, *args: str, limit: int
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``code`` in a fresh interpreter (``child_env``) under a memory limit of ``limit``
    bytes; its result and how many processes the OOM killer ended meanwhile."""
    with memory_limit(limit) as limited:
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            env=child_env(),
            preexec_fn=limited.preexec,
            timeout=120,
            check=False,
        )
        return done, limited.oom_kills()
