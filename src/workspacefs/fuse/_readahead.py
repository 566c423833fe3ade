"""The kernel's readahead for the mount: a megabyte, where the process may set it.

A sequential reader of a file on the mount gets its pages from the kernel's
readahead, which asks the FUSE server for at most the mount's ``read_ahead_kb`` at
a time: 128 KiB by default, so a megabyte read whole took eight READ requests, each
a round trip into Python. libfuse can only lower that limit at INIT
(``max_readahead``), never raise it; the limit belongs to the mount's backing
device (bdi, ``/sys/class/bdi/0:MINOR``), which root may change once the mount is
up. With 1 MiB, one READ brings a megabyte (libfuse's ``max_pages`` follows
``max_write``, 1 MiB here). Readahead grows from a small window only while a file
is read in order, so random reads are not made larger.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

READ_AHEAD_KB = 1024
"""The readahead the mount asks for, in KiB (the kernel's default for FUSE: 128)."""


def bdi_readahead(device_minor: int) -> str:
    """The sysfs file holding the readahead of the FUSE mount whose device is
    ``0:device_minor``."""
    return f"/sys/class/bdi/0:{device_minor}/read_ahead_kb"


def widen_readahead(device_minor: int) -> bool:
    """Set the mount's readahead to ``READ_AHEAD_KB`` if it is smaller; True if it is
    that now (False where sysfs cannot be written: not root, or no sysfs)."""
    path = bdi_readahead(device_minor)
    try:
        with open(path, encoding="ascii") as current:
            if int(current.read()) >= READ_AHEAD_KB:
                return True
        with open(path, "w", encoding="ascii") as wanted:
            wanted.write(str(READ_AHEAD_KB))
    except (OSError, ValueError) as exc:
        log.debug("the readahead of %s stays the kernel's: %s", path, exc)
        return False
    return True
