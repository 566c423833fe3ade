"""What a write, truncate or chown clears: set-ID bits and file capabilities.

A local filesystem clears set-user-ID and set-group-ID bits when a process
without CAP_FSETID writes to or truncates a file, and on every chown, so that
changed contents or a new owner never run with the old owner's rights; every
write, truncate and chown also drops the file's capabilities (the
``security.capability`` attribute). Over FUSE the kernel does both for what
it sees: page-cache writes (first asking for ``security.capability``) and
setattr (first re-reading the mode). It leaves the rest to the server:
``direct_io`` writes (the mount's write-only creates), an atomic ``O_TRUNC``
open, and, once the mount takes ``HANDLE_KILLPRIV_V2`` (``WorkspaceOperations``),
everything, telling the server which request must clear the bits.
"""

from __future__ import annotations

import stat as _stat
from typing import Final

FILE_CAPABILITIES: Final = b"security.capability"
"""The attribute that holds a file's capabilities (setcap(8)); every write drops it."""


def kill_privileges(mode: int) -> int:
    """``mode`` once a change that must clear set-ID bits is made to the file.

    Set-user-ID always goes; set-group-ID goes with group execution (without
    it the bit marks mandatory locking). That is the rule of the kernel's FUSE
    setattr and of HANDLE_KILLPRIV_V2; the VFS rule of local filesystems also
    drops set-group-ID without group execution when the writer is outside the
    group, which FUSE never learns of. Other file types keep their bits.
    """
    if not mode & (_stat.S_ISUID | _stat.S_ISGID) or not _stat.S_ISREG(mode):
        return mode
    kill = mode & _stat.S_ISUID
    if mode & _stat.S_IXGRP:
        kill |= mode & _stat.S_ISGID
    return mode & ~kill
