"""Set-user-ID and set-group-ID bits that a write or truncate clears, where the kernel does not.

A local filesystem clears them when an unprivileged process writes to or
truncates a file, so that changed contents never run with the owner's rights.
Over FUSE the kernel does it for writes through its page cache and for
truncates (in its setattr), but not for ``direct_io`` writes (the mount's
write-only opens and creates) nor for an atomic ``O_TRUNC`` open, which it
leaves to the server: those paths call ``without_privileges``.
"""

from __future__ import annotations

import stat as _stat


def without_privileges(mode: int, uid: int) -> int:
    """``mode`` after a process running as ``uid`` writes to or truncates a file.

    Set-user-ID always goes; set-group-ID goes with group execution (without
    it the bit marks mandatory locking). That is the rule of the kernel's FUSE
    setattr, which decides for every other write to the mount; the VFS rule
    of local filesystems also drops set-group-ID without group execution when
    the writer is outside the group, which FUSE never learns of. Root of the
    mount's user namespace (standing for CAP_FSETID) keeps both, as do other
    file types.
    """
    if not mode & (_stat.S_ISUID | _stat.S_ISGID) or not _stat.S_ISREG(mode) or uid == 0:
        return mode
    kill = mode & _stat.S_ISUID
    if mode & _stat.S_IXGRP:
        kill |= mode & _stat.S_ISGID
    return mode & ~kill
