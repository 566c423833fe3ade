"""The kernel's mount table (``/proc/self/mountinfo``), read in one place.

Every question the project asks about mounts -- is a FUSE mount stale, what is
mounted inside a mount point, which directories a fork is bound to, where the
cgroup hierarchies are -- is answered from these records. The table shows
paths resolved (no symlinks), so a path to compare with it is resolved first
(``canonical_mountpoint``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

MOUNTINFO = "/proc/self/mountinfo"

_OCTAL = re.compile(rb"\\([0-3][0-7]{2})")


@dataclass(frozen=True, slots=True)
class MountEntry:
    """One line of ``mountinfo`` (proc(5)), its fields unescaped and decoded as file
    names are (``os.fsdecode``: a byte that is no UTF-8 becomes a lone surrogate)."""

    mount_id: int
    parent_id: int
    device: str
    """``major:minor`` of the file system (for FUSE, the connection's number)."""
    root: str
    """The directory of the file system shown at the mount point (a bind mount's source)."""
    point: str
    """Where it is mounted, as the kernel resolved it."""
    options: str
    """The per-mount options (``rw,nosuid,relatime``)."""
    fs_type: str
    """``ext4``, ``fuse.workspacefs``, ``cgroup2``..."""
    source: str
    """What was mounted (``/dev/sda1``, ``workspacefs``)."""
    super_options: str
    """The file system's own options (for v1 cgroups, the controllers)."""


def _field(raw: bytes) -> str:
    r"""A ``mountinfo`` field with every ``\ooo`` octal escape turned back into its byte.

    The kernel escapes space, tab, newline and backslash (``\040``, ``\011``,
    ``\012``, ``\134``); every three-digit escape of a byte is decoded, so an
    escape a kernel adds later comes out right too. Other bytes are written raw.
    """
    return os.fsdecode(_OCTAL.sub(lambda match: bytes([int(match[1], 8)]), raw))


def _entry(line: bytes) -> MountEntry | None:
    # id parent major:minor root point options [optional fields...] - type source super
    mine, separator, theirs = line.partition(b" - ")
    fields, described = mine.split(), theirs.split()
    if not separator or len(fields) < 6 or len(described) < 2:
        return None
    try:
        mount_id, parent_id = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return MountEntry(
        mount_id=mount_id,
        parent_id=parent_id,
        device=_field(fields[2]),
        root=_field(fields[3]),
        point=_field(fields[4]),
        options=_field(fields[5]),
        fs_type=_field(described[0]),
        source=_field(described[1]),
        super_options=_field(described[2]) if len(described) > 2 else "",
    )


def mount_table(path: str | os.PathLike[str] = MOUNTINFO) -> list[MountEntry]:
    """Every mount this process sees, in mount order (a line that is not a mount
    record is skipped).

    Args:
        path: The ``mountinfo`` file to read (another process's, or a copy).

    Raises:
        OSError: The file cannot be read.
    """
    with open(path, "rb") as table:
        return [entry for entry in map(_entry, table) if entry is not None]


def canonical_mountpoint(path: str | os.PathLike[str]) -> str:
    """The absolute mount point with its links resolved, as the mount table shows it.

    The last component is resolved only if it is a link: it may be a stale mount,
    which answers nothing but ``ENOTCONN`` (``islink`` then says no).
    """
    absolute = os.path.abspath(os.fspath(path))
    point = os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))
    return os.path.realpath(point) if os.path.islink(point) else point


def mounts_under(path: str | os.PathLike[str]) -> list[str]:
    """Every mount point at or below ``path`` (its parent's links resolved), deepest
    first: what a lazy unmount of ``path`` detaches."""
    point = canonical_mountpoint(path)
    prefix = point.rstrip("/") + "/"
    found = {e.point for e in mount_table() if e.point == point or e.point.startswith(prefix)}
    return sorted(found, key=lambda p: (-p.count("/"), p))
