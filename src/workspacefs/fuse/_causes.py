"""Who is behind a request of the mount: the writing process, as a ``Cause``.

Every request that can change the tree carries its caller's thread id and
uid (pyfuse3's ``RequestContext``; with the stock pyfuse3 a write carries
none, so the cause of the open that made its file handle stands for it). A
handler calls ``RequestCauses.attribute(ctx)`` first, which makes the
caller's cause the one the tree records (``tree.set_cause``).

Naming a process costs a few reads of ``/proc`` (its command line, cgroup
and environment), so it is done once per process, off the hot path: the
cause is cached by thread id, and a request then costs one dict lookup and
a clock read. A cached cause is trusted for ``TRUST_SECONDS``; after that
the next request checks the thread's start time, which differs if the id
now belongs to another process (ids are reused only after the kernel has
gone round the whole pid space, far longer than that). The cache is bounded
(``CAPACITY``, oldest out first).

A command line is kept with its secrets masked (``Cause.redacted``) unless the
tree keeps full command lines (``Tree.blame_full_commands``).

What a process says of itself (its command line, the ``WORKSPACEFS_CAUSE``
variable a sandbox sets for the call it runs a command for) is a hint it
could fake; the pid, uid and container (from the kernel's cgroup path) are
facts. The container id is Podman's (``libpod-<64 hex>``) or Docker's.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

import pyfuse3

from ..fs import CAUSE_VARIABLE, Cause
from ..tree import Tree, set_cause

TRUST_SECONDS = 1.0
"""How long a cached process's cause is used before its start time is checked again."""
CAPACITY = 4096
"""The most processes (threads) cached."""
READ_LIMIT = 1 << 20
"""The most bytes read of one /proc file (an environment can be large)."""
_READ_SIZE = 1 << 16

_CONTAINER = re.compile(rb"(?:libpod-|docker-|/docker/)([0-9a-f]{64})(?![0-9a-f])")
_VARIABLE = b"\0" + CAUSE_VARIABLE.encode() + b"="


@dataclass(slots=True)
class _Known:
    cause: Cause
    uid: int
    started: int | None
    trusted_until: float


class RequestCauses:
    """The causes of one mount's requests, by process.

    Args:
        tree: The live tree the mount writes (None: a read-only mount, which
            attributes nothing). Its ``attributing`` switch is obeyed per
            request.
        proc: Where procfs is mounted.
        trust: Seconds a cached cause is used before its thread's start time is
            checked again.
        capacity: The most threads cached.
    """

    def __init__(
        self,
        tree: Tree | None,
        *,
        proc: str = "/proc",
        trust: float = TRUST_SECONDS,
        capacity: int = CAPACITY,
    ) -> None:
        self._tree = tree
        self._proc = proc
        self._trust = trust
        self._capacity = capacity
        self._known: dict[int, _Known] = {}

    def attribute(self, ctx: pyfuse3.RequestContext | None) -> None:
        """Make the caller of the request ``ctx`` the cause of what the handler changes
        (None: a request that says no caller)."""
        tree = self._tree
        # Access rules need the cause too: a tool's rules bind the processes of its calls.
        if tree is None or not (tree.attributing or tree.guard is not None):
            return
        if ctx is None:
            set_cause(None)
            return
        # ``cause``'s common case, inline: on every request that may change the tree.
        known = self._known.get(ctx.pid)
        if known is not None and known.uid == ctx.uid and time.monotonic() < known.trusted_until:
            set_cause(known.cause)
        else:
            set_cause(self._refresh(ctx.pid, ctx.uid, known))

    def resume(self, cause: Cause | None) -> None:
        """Make ``cause`` (taken with ``current_cause`` by an earlier request, such as
        the open of a file handle) the cause of what the handler changes."""
        tree = self._tree
        if tree is not None and (tree.attributing or tree.guard is not None):
            set_cause(cause)

    def cause(self, pid: int, uid: int) -> Cause:
        """The cause of thread ``pid`` running as ``uid``: cached, or read from /proc."""
        known = self._known.get(pid)
        if known is not None and known.uid == uid and time.monotonic() < known.trusted_until:
            return known.cause
        return self._refresh(pid, uid, known)

    def _refresh(self, pid: int, uid: int, known: _Known | None) -> Cause:
        if pid <= 0:  # the kernel's own request, or a caller outside our pid namespace
            return Cause(uid=uid)
        started, single = self._stat(pid)
        now = time.monotonic()
        if known is not None and known.uid == uid and started == known.started:
            known.trusted_until = now + self._trust
            return known.cause
        cause = self._describe(pid, uid, single)
        self._known.pop(pid, None)
        while len(self._known) >= self._capacity:
            del self._known[next(iter(self._known))]
        self._known[pid] = _Known(cause, uid, started, now + self._trust)
        return cause

    def __len__(self) -> int:
        """How many threads are cached."""
        return len(self._known)

    def _read(self, pid: int, name: str) -> bytes:
        try:
            fd = os.open(f"{self._proc}/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return b""
        try:
            # /proc answers a read with all it has up to the size asked, so a
            # short read is the end: one read(2) for almost every file.
            chunks = []
            size = 0
            while size < READ_LIMIT:
                chunk = os.read(fd, min(_READ_SIZE, READ_LIMIT - size))
                chunks.append(chunk)
                size += len(chunk)
                if len(chunk) < _READ_SIZE:
                    break
            return b"".join(chunks)
        except OSError:  # gone meanwhile, or not ours to read
            return b""
        finally:
            os.close(fd)

    def _stat(self, pid: int) -> tuple[int | None, bool]:
        """(the thread's start time in clock ticks after boot, None if it is gone;
        whether its process has this one thread, so ``pid`` is the process's id)."""
        stat = self._read(pid, "stat")
        fields = stat[stat.rfind(b")") + 2 :].split()  # the name may hold spaces and ")"
        try:
            return int(fields[19]), fields[17] == b"1"
        except (IndexError, ValueError):
            return None, False

    def _describe(self, pid: int, uid: int, single: bool) -> Cause:
        """Read what /proc says of thread ``pid`` (``single``: the only thread of its
        process, whose id it then is)."""
        process = pid
        for line in () if single else self._read(pid, "status").splitlines():
            if line.startswith(b"Tgid:"):
                process = int(line.split()[1])
                break
        arguments = self._read(process, "cmdline").split(b"\0")
        if arguments and not arguments[-1]:
            arguments.pop()
        command = tuple(arg.decode("utf-8", "surrogateescape") for arg in arguments)
        found = _CONTAINER.search(self._read(process, "cgroup"))
        container = found[1].decode() if found else None
        call = None
        environ = b"\0" + self._read(process, "environ")
        start = environ.find(_VARIABLE)
        if start >= 0:
            start += len(_VARIABLE)
            end = environ.find(b"\0", start)
            value = environ[start : end if end >= 0 else None]
            call = Cause.from_environment(value.decode("utf-8", "replace"))
        cause = Cause(pid=process, command=command, container=container, uid=uid)
        cause = cause.bounded().with_call(call)
        # Masked here already (the tree would mask it on every change): the cache
        # then holds no secret either.
        full = self._tree is not None and self._tree.blame_full_commands
        return cause if full else cause.redacted()
