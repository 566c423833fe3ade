"""What the kernel and libfuse agreed on when a mount started, and which libfuse that is.

The kernel offers capabilities in its INIT request, libfuse adds what it
supports itself, and the file system asks for some of them in
``init_connection`` (``WorkspaceOperations``); what both offered and the file
system asked for is what the connection has. ``workspacefs status`` and
``doctor`` show it, since most of what makes the mount fast depends on it
(docs/fuse.md, "libfuse").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

from ._features import capability, libfuse_version, version_tuple

CAPABILITIES: Final = (
    "ASYNC_READ",
    "POSIX_LOCKS",
    "ATOMIC_O_TRUNC",
    "EXPORT_SUPPORT",
    "DONT_MASK",
    "SPLICE_WRITE",
    "SPLICE_MOVE",
    "SPLICE_READ",
    "FLOCK_LOCKS",
    "IOCTL_DIR",
    "AUTO_INVAL_DATA",
    "READDIRPLUS",
    "READDIRPLUS_AUTO",
    "ASYNC_DIO",
    "WRITEBACK_CACHE",
    "NO_OPEN_SUPPORT",
    "PARALLEL_DIROPS",
    "POSIX_ACL",
    "HANDLE_KILLPRIV",
    "HANDLE_KILLPRIV_V2",
    "CACHE_SYMLINKS",
    "NO_OPENDIR_SUPPORT",
    "EXPLICIT_INVAL_DATA",
    "EXPIRE_ONLY",
    "SETXATTR_EXT",
    "DIRECT_IO_ALLOW_MMAP",
    "PASSTHROUGH",
    "NO_EXPORT_SUPPORT",
    "OVER_IO_URING",
)
"""The ``FUSE_CAP_*`` names, in the order of their bits."""


FORWARDS_ALL: Final = (3, 17)
"""Before this libfuse asks the kernel for PARALLEL_DIROPS and HANDLE_KILLPRIV by
default, but leaves them out of its INIT reply (3.14's do_init, Debian 12's)."""


def capability_names(bits: int) -> tuple[str, ...]:
    """The names of the capabilities set in ``bits`` (those this pyfuse3 knows)."""
    return tuple(name for name in CAPABILITIES if bits & capability(name))


@functools.cache
def libfuse_path() -> str | None:
    """The file of the libfuse this process has loaded (pyfuse3's), from its memory map."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and "/libfuse3.so" in fields[5]:
                    return fields[5].strip()
    except OSError:
        pass
    return None


@dataclass(frozen=True, slots=True)
class Connection:
    """A mount's FUSE connection as its INIT left it."""

    libfuse: str | None
    """The version of the libfuse in use (None: pyfuse3 cannot tell)."""
    library: str | None
    """Its file: the project's own build (scripts/setup.sh) or the system's."""
    protocol: str
    """The FUSE protocol version the kernel speaks, e.g. ``"7.45"``."""
    capabilities: tuple[str, ...]
    """What the connection has: offered by the kernel and libfuse, asked for by the mount."""
    declined: tuple[str, ...]
    """What was offered but not asked for."""

    @classmethod
    def of(cls, conn: Any) -> Connection:
        """The connection ``conn`` (pyfuse3's ``ConnectionInfo``) describes, once the
        mount has set what it wants."""
        capable, want = int(conn.capable), int(conn.want)
        version = libfuse_version()
        negotiated = capable & want
        if version is None or version_tuple(version) < FORWARDS_ALL:
            negotiated &= ~(capability("PARALLEL_DIROPS") | capability("HANDLE_KILLPRIV"))
        return cls(
            libfuse=version,
            library=libfuse_path(),
            protocol=f"{conn.proto_major}.{conn.proto_minor}",
            capabilities=capability_names(negotiated),
            declined=capability_names(capable & ~want),
        )

    def to_json(self) -> dict[str, Any]:
        """The fields as JSON values (``workspacefs status --json``)."""
        return {
            "libfuse": self.libfuse,
            "library": self.library,
            "protocol": self.protocol,
            "capabilities": list(self.capabilities),
            "declined": list(self.declined),
        }
