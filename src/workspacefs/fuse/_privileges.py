"""Set-user-ID and set-group-ID bits that a write or truncate clears, where the kernel does not.

A local filesystem clears them when an unprivileged process writes to or
truncates a file (``setattr_should_drop_suidgid`` in the kernel), so that
changed contents never run with the owner's rights. Over FUSE the kernel does
it for writes through its page cache, but not for ``direct_io`` writes (the
mount's write-only opens) nor for an atomic ``O_TRUNC`` open, which it leaves
to the server: those paths call ``without_privileges`` instead.
"""

from __future__ import annotations

import stat as _stat
from dataclasses import dataclass

import pyfuse3


@dataclass(frozen=True, slots=True)
class Caller:
    """The process behind a request: enough to decide what a write of its clears."""

    uid: int
    gid: int
    pid: int

    @classmethod
    def of(cls, ctx: pyfuse3.RequestContext) -> Caller:
        """The caller of the request ``ctx`` belongs to."""
        return cls(ctx.uid, ctx.gid, ctx.pid)

    @property
    def privileged(self) -> bool:
        """Stands for CAP_FSETID, which keeps the bits: root of the mount's user namespace."""
        return self.uid == 0

    def in_group(self, gid: int) -> bool:
        """True if ``gid`` is the caller's group or one of its supplementary groups."""
        if gid == self.gid:
            return True
        try:
            return gid in pyfuse3.get_sup_groups(self.pid)
        except (OSError, RuntimeError):  # the process is gone: count it out
            return False


def without_privileges(mode: int, gid: int, caller: Caller) -> int:
    """``mode`` of a file owned by group ``gid`` after ``caller`` writes to or truncates it.

    Set-user-ID always goes; set-group-ID goes if group execution is set (without
    it, the bit marks mandatory locking) or if the caller is not in the group.
    Privileged callers keep both, as do other file types.
    """
    if not _stat.S_ISREG(mode) or not mode & (_stat.S_ISUID | _stat.S_ISGID) or caller.privileged:
        return mode
    kill = mode & _stat.S_ISUID
    if mode & _stat.S_ISGID and (mode & _stat.S_IXGRP or not caller.in_group(gid)):
        kill |= _stat.S_ISGID
    return mode & ~kill
