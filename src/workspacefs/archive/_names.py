"""Entry names of the archive format, per version.

* Version 1: ``files/<path>``, the path as it is (UTF-8). It cannot hold a
  name that is not UTF-8, and a backslash would be a separator to Windows
  tools, so neither is written as version 1.
* Version 2: ``files/<escaped path>``: ``%``, ``\\``, control characters and
  every byte that is not part of valid UTF-8 are written ``%XX``; everything
  else is kept, so ordinary names read the same as in version 1. Decoding is
  exact (``%`` is always escaped), and a name not in this canonical form is
  refused, so two entries can never decode to one path.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from .._errors import InvalidContentError


def needs_escaping(path: str) -> bool:
    """True if ``path`` cannot be written as a version 1 name."""
    if "\\" in path:
        return True
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _escaped(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"%{code - 0xDC00:02X}"
    if char in "%\\" or code < 0x20 or code == 0x7F:
        return f"%{code:02X}"
    return char


def escape(path: str) -> str:
    """The version 2 form of a path."""
    return "".join(map(_escaped, path))


def unescape(name: str) -> str:
    """The path a version 2 name stands for; InvalidContentError if not canonical."""
    path = unquote_to_bytes(name).decode("utf-8", "surrogateescape")
    if escape(path) != name:
        raise InvalidContentError("entry name is not in the archive's escaped form", name)
    return path
