"""What the installed pyfuse3 can do beyond its release.

pyfuse3 3.5.0 drops the inode from the requests that carry a file handle
(read, write, readdir...) and never lets the filesystem touch the
connection's capabilities, and has no fallocate handler. scripts/setup.sh
builds it with ``patches/pyfuse3/*.patch``, which add both
(``Operations.pass_inode_to_fh_handlers``, ``Operations.init_connection``),
a single-task session loop (``main(max_tasks=1, poll_ns=...)``),
``Operations.fallocate`` and the kernel's requests to clear set-ID bits
(``SetattrFields.kill_suidgid``, the last argument of ``write``), which
libfuse relays from 3.18.3 on (setup.sh builds that libfuse too), and two
savings per request: ``write`` given a view of libfuse's buffer instead of a
copy (``Operations.write_memoryview``), and ``EntryAttributes.set_stat``. With a
stock pyfuse3 everything works the same, only with more kernel requests and
slower round trips, and fallocate(2) on the mount fails with EOPNOTSUPP: the
mount asks this module and falls back.
"""

from __future__ import annotations

import inspect
import re
from typing import Final

import pyfuse3

OPEN_FREE: Final[bool] = hasattr(pyfuse3, "ConnectionInfo") and hasattr(
    pyfuse3.Operations, "pass_inode_to_fh_handlers"
)
"""True if this pyfuse3 passes inodes to the file-handle handlers and the
connection to ``init_connection``: files and directories can then be opened
without a request (the kernel's NO_OPEN / NO_OPENDIR support)."""


SESSION_POLL: Final[bool] = "poll_ns" in inspect.signature(pyfuse3.main).parameters
"""True if ``pyfuse3.main`` can poll for the next request before it sleeps."""


FALLOCATE: Final[bool] = hasattr(pyfuse3.Operations, "fallocate")
"""True if this pyfuse3 passes fallocate requests to ``Operations.fallocate``;
without it the kernel answers every fallocate(2) on the mount with EOPNOTSUPP."""


WRITE_MEMORYVIEW: Final[bool] = hasattr(pyfuse3.Operations, "write_memoryview")
"""True if this pyfuse3 can pass ``write`` a view of libfuse's request buffer instead
of a copy of the data (``Operations.write_memoryview``)."""


KILL_SUIDGID_LIBFUSE: Final = (3, 18, 3)
"""The first libfuse that tells the file system which writes and opens must clear
set-ID bits (``fuse_file_info.kill_suidgid``)."""


def libfuse_version() -> str | None:
    """The version of the libfuse this process uses (None if pyfuse3 cannot tell)."""
    version = getattr(pyfuse3, "libfuse_version", None)
    return str(version()) if callable(version) else None


def version_tuple(version: str) -> tuple[int, ...]:
    """``"3.18.3"`` as ``(3, 18, 3)``; a suffix ends it (``"3.18rc1"``: ``(3, 18)``)."""
    found = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in found.group().split(".")) if found else ()


def _relays_kill_suidgid() -> bool:
    # pyfuse3 built against 3.18.3 headers (it passes the flags on) running
    # against a 3.18.3 library (which fills them in): an older library leaves
    # the field 0, and writes would keep bits the kernel left to the mount.
    version = libfuse_version()
    return (
        OPEN_FREE
        and bool(getattr(pyfuse3, "RELAYS_KILL_SUIDGID", False))
        and version is not None
        and version_tuple(version) >= KILL_SUIDGID_LIBFUSE
    )


KILLPRIV_V2: Final[bool] = _relays_kill_suidgid()
"""True if the mount can take over clearing set-ID bits from the kernel
(``FUSE_CAP_HANDLE_KILLPRIV_V2``): pyfuse3 and libfuse say which writes,
truncates and chowns must clear them."""


def capability(name: str) -> int:
    """The ``FUSE_CAP_<name>`` bit of a patched pyfuse3 (0 where unknown)."""
    value = getattr(pyfuse3, f"FUSE_CAP_{name}", 0)
    return value if isinstance(value, int) else 0
