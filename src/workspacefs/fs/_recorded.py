"""Attribute values recorded outside the tree (a git snapshot's metadata, an archive's
manifest), checked before they enter it.

Both front doors must be able to show what a tree holds: the mount passes owners
to the kernel as ``uid_t``/``gid_t`` (a value past 32 bits fails every ``stat`` and
``ls`` with EIO), and the protocol shows times as ``datetime`` (years 1 to 9999;
past them ``stat`` raises). Owners outside the range are refused; times outside it
are clamped to its ends, the way file systems clamp times they cannot store
(ext4 at 2446): a file from far in the future is still the newest.
"""

from __future__ import annotations

MAX_ID = 2**32 - 2
"""The largest uid or gid: ``(uid_t)-1`` means "leave unchanged" to ``chown``."""
MAX_FILE_SIZE = 2**63 - 1
"""The largest file size the kernel takes (``off_t``, ``MAX_LFS_FILESIZE``)."""
FIRST_TIME_NS = -62_135_596_800 * 10**9
"""0001-01-01T00:00:00Z, the earliest time the protocol shows."""
LAST_TIME_NS = 253_402_300_799 * 10**9
"""9999-12-31T23:59:59Z, the latest (a whole second: ``datetime`` rounds nanoseconds
as a float, and the last ones would round into the year 10000)."""


def recorded_int(value: object, what: str, low: int, high: int) -> int:
    """``value`` if it is an integer (not a bool) in ``[low, high]``.

    Raises:
        ValueError: It is not; the message names ``what`` and the range.
    """
    if type(value) is not int:
        raise ValueError(f"{what} {value!r} is not an integer")
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is outside {low}..{high}")
    return value


def recorded_id(value: object, what: str) -> int:
    """A recorded uid or gid, if the kernel can show it (0 to ``MAX_ID``)."""
    return recorded_int(value, what, 0, MAX_ID)


def recorded_time(value: object, what: str) -> int:
    """A recorded time in ns, clamped to what the protocol can show (years 1 to 9999).

    Raises:
        ValueError: It is not an integer.
    """
    if type(value) is not int:
        raise ValueError(f"{what} {value!r} is not an integer")
    return min(max(value, FIRST_TIME_NS), LAST_TIME_NS)
