"""``content_digest``: the token of a conditional change (``if_match``).

A caller that read a file passes the digest of what it read to ``write``,
``write_bytes`` or ``delete``; the frontend, holding the backend's write
lock, digests what the file holds now and changes nothing unless the two
agree. A digest of the content (not a modification time or a counter) means
the same on every backend, needs nothing from the read that the caller does
not already have, and cannot be fooled by a clock: ``touch -d`` or a rewrite
within one timestamp tick changes no content it misses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def content_digest(content: bytes | Iterable[bytes]) -> str:
    """The SHA-256 of a file's content (whole, or as the blocks it was read in), in hex."""
    digest = hashlib.sha256()
    if isinstance(content, bytes | bytearray | memoryview):
        digest.update(content)
    else:
        for block in content:
            digest.update(block)
    return digest.hexdigest()
