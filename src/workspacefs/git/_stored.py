"""A zlib stream of stored deflate blocks, read as a copy rather than inflated.

Write-back and checkpoints keep data that does not compress at zlib level 0
(``store.compressible``): its stream is then a run of *stored* deflate blocks
(RFC 1951, 3.2.4: a header byte, LEN and its complement NLEN, then LEN bytes as
they are, at most 65,535 of them), ended by the Adler-32 of the data (RFC 1950).
zlib's inflate copies each such byte through its window into a new output buffer;
here each block is one ``preadv`` into a buffer that is reused, which also reads
the next block's header, and the data's checksum is verified as zlib would.

Those buffers come from a small pool and each piece handed out is a view of one,
so reading evicted data back allocates nothing but the chunks it keeps: no piece
of a megabyte per file loaded, whose freed space between chunks the heap could
not reuse for chunks alone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

from zlib_ng.zlib_ng import adler32

_HEADER = 5  # a stored block's first byte, LEN and NLEN
_POOL_MAX = 2  # buffers kept for reuse: the mount's thread and one other reading at once


class NotStored(Exception):  # noqa: N818 (a signal to the caller, not an error)
    """A block that is not stored follows the ``produced`` bytes read so far: the
    stream must be inflated from there on."""

    def __init__(self, produced: int) -> None:
        super().__init__(produced)
        self.produced = produced


def starts_stored(head: bytes) -> bool:
    """True if the zlib stream whose first three bytes are ``head`` is deflate with no
    preset dictionary and opens with a stored block."""
    if len(head) < 3:
        return False
    cmf, flg, first = head[0], head[1], head[2]
    return cmf & 0x0F == 8 and (cmf << 8 | flg) % 31 == 0 and not flg & 0x20 and not first & 0b110


class _Pool:
    """Read buffers of one size, kept for reuse (at most ``_POOL_MAX``)."""

    def __init__(self) -> None:
        self._free: list[bytearray] = []
        self._lock = threading.Lock()

    def take(self, size: int) -> bytearray:
        with self._lock:
            while self._free:
                buffer = self._free.pop()
                if len(buffer) == size:
                    return buffer
        return bytearray(size)

    def give(self, buffer: bytearray) -> None:
        with self._lock:
            if len(self._free) < _POOL_MAX:
                self._free.append(buffer)


_pool = _Pool()


def stored_pieces(fd: int, at: int, size: int, piece: int) -> Iterator[memoryview]:
    """The ``size`` bytes of the zlib stream at offset ``at`` of ``fd`` (one that
    ``starts_stored``), in pieces of ``piece`` bytes (the last one shorter). Each
    piece is a view of a reused buffer, valid until the next piece is asked for.

    Raises:
        NotStored: A block that is not stored follows; the pieces so far were right.
        ValueError: The stream is damaged, cut short, or holds more or fewer than
            ``size`` bytes; or its checksum does not match (after its last piece).
    """
    buffer = _pool.take(piece)
    view = memoryview(buffer)
    header = bytearray(_HEADER)
    try:
        pos = at + 2  # past CMF and FLG
        _read_header(fd, header, pos, _HEADER)
        pos += _HEADER
        block = _block(header)
        adler, produced, fill = 1, 0, 0
        while block is not None:
            final, left = block
            ahead = False  # whether the next header (or the trailer) was read already
            while left:
                n = min(left, piece - fill)
                part = view[fill : fill + n]
                ahead = _read_part(fd, part, header if n == left else None, pos, final)
                adler = adler32(part, adler)
                part.release()
                pos, left, fill, produced = pos + n, left - n, fill + n, produced + n
                if produced > size:
                    raise ValueError(f"the object inflates past its {size} bytes")
                if fill == piece:
                    yield view[:fill]
                    fill = 0
            if not ahead:
                _read_header(fd, header, pos, 4 if final else _HEADER)
            if final:
                if fill:
                    yield view[:fill]
                if produced != size:
                    raise ValueError(f"the object inflates to {produced} bytes, not {size}")
                if int.from_bytes(header[:4], "big") != adler:
                    raise ValueError("the object's data does not match its checksum")
                return
            pos += _HEADER
            block = _block(header)
        if fill:
            yield view[:fill]
        raise NotStored(produced)
    finally:
        view.release()
        _pool.give(buffer)


def _read_part(fd: int, part: memoryview, header: bytearray | None, pos: int, final: bool) -> bool:
    """Fill ``part`` from ``pos``; with ``header`` (the block ends there), read what
    follows into it in the same call. True if that came whole (a header, or after the
    final block the trailer)."""
    got = os.preadv(fd, [part] if header is None else [part, header], pos)
    if got < len(part):
        raise ValueError("the object's zlib stream is cut short")
    return header is not None and got >= len(part) + (4 if final else _HEADER)


def _read_header(fd: int, header: bytearray, pos: int, need: int) -> None:
    """Read a block header (or, ``need`` 4, the trailer) at ``pos`` into ``header``."""
    if os.preadv(fd, [header], pos) < need:
        raise ValueError("the object's zlib stream is cut short")


def _block(header: bytearray) -> tuple[bool, int] | None:
    """(final, length) of the stored block ``header`` starts; None if it is not stored."""
    if header[0] & 0b110:
        return None
    length = header[1] | header[2] << 8
    if length ^ (header[3] | header[4] << 8) != 0xFFFF:
        raise ValueError("a stored block's length does not match its complement")
    return bool(header[0] & 1), length
