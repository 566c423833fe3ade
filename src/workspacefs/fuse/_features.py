"""What the installed pyfuse3 can do beyond its release.

pyfuse3 3.5.0 drops the inode from the requests that carry a file handle
(read, write, readdir...) and never lets the filesystem touch the
connection's capabilities, and has no fallocate handler. scripts/setup.sh
builds it with ``patches/pyfuse3/*.patch``, which add both
(``Operations.pass_inode_to_fh_handlers``, ``Operations.init_connection``),
a single-task session loop (``main(max_tasks=1, poll_ns=...)``) and
``Operations.fallocate``. With a stock pyfuse3 everything works the same,
only with more kernel requests and slower round trips, and fallocate(2) on
the mount fails with EOPNOTSUPP: the mount asks this module and falls back.
"""

from __future__ import annotations

import inspect
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


def capability(name: str) -> int:
    """The ``FUSE_CAP_<name>`` bit of a patched pyfuse3 (0 where unknown)."""
    value = getattr(pyfuse3, f"FUSE_CAP_{name}", 0)
    return value if isinstance(value, int) else 0
