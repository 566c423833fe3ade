"""Limits on what one protocol call may ask for.

They bound agent tool calls, not the tree: the tree (and so the FUSE mount)
follows POSIX limits, since real tools nest far deeper than an agent needs to.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import LimitExceededError

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-call limits of the ``Filesystem`` protocol. Defaults follow the seed."""

    max_write_chars: int = 48_000
    """Longest text accepted by one ``write``."""
    max_write_bytes: int = 16 * MIB
    """Longest content accepted by one ``write_bytes``."""
    max_path_depth: int = 16
    """Most segments in a path."""
    max_segment_length: int = 80
    """Longest path segment, in characters."""
    default_read_lines: int = 2_000
    """Lines ``read`` returns when no limit is given."""
    max_read_bytes: int = 16 * MIB
    """Most bytes one ``read``/``read_bytes`` returns or decodes."""
    max_grep_matches: int = 1_000
    """Most matches one ``grep`` returns."""
    max_pattern_length: int = 1_000
    """Longest glob or grep pattern."""

    def check(self, what: str, value: int, limit: int) -> None:
        """Raise a LimitExceededError naming the limit if ``value`` exceeds it."""
        if value > limit:
            raise LimitExceededError(f"{what} is {value:,}, over the limit of {limit:,}", None)


DEFAULT_LIMITS = Limits()
