"""A real zip bomb for import tests: a workspace archive whose one file is gigabytes of
zeros deflated to about a thousandth of that, with a manifest that declares the size
(so the archive's own checks take it for an honest, highly compressible file).

Built without ever holding or compressing the expanded bytes: deflate after a full
flush starts afresh, so every MiB of zeros compresses to the same bytes, and the
stream is that piece repeated. Only the CRC-32 runs over the whole size (about half
a second a GiB).
"""

from __future__ import annotations

import functools
import json
import struct
import zlib
from pathlib import Path

MIB = 1 << 20
_ZEROS = bytes(64 * MIB)
_UNIX_FILE = 0o100644 << 16
_UTF8 = 0x800


@functools.cache
def _zeros_crc(size: int) -> int:
    crc = 0
    for offset in range(0, size, len(_ZEROS)):
        crc = zlib.crc32(memoryview(_ZEROS)[: min(len(_ZEROS), size - offset)], crc)
    return crc


def _deflated_zeros(size: int) -> bytes:
    """Raw deflate of ``size`` zero bytes (a multiple of 1 MiB)."""
    assert size % MIB == 0
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = compressor.compress(bytes(MIB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return piece * (size // MIB) + zlib.compressobj(9, zlib.DEFLATED, -15).flush()


def zero_bomb(path: Path, size: int, name: str = "zeros.bin") -> Path:
    """Write at ``path`` a workspace archive (version 1) holding ``name``: ``size`` zero
    bytes (a multiple of 1 MiB, under 4 GiB), declared in the manifest. Returns ``path``."""
    manifest = json.dumps(
        {
            "format": "workspacefs-archive",
            "version": 1,
            "created_at": "2024-01-01T00:00:00+00:00",
            "file_count": 1,
            "total_bytes": size,
            "mtimes": {name: 0},
            "sizes": {name: size},
        }
    ).encode()
    # (member name, method, CRC-32, stored bytes, expanded size)
    members = [
        (b"manifest.json", 0, zlib.crc32(manifest), manifest, len(manifest)),
        (f"files/{name}".encode(), 8, _zeros_crc(size), _deflated_zeros(size), size),
    ]
    time, date = 0, (2024 - 1980) << 9 | 1 << 5 | 1
    local = bytearray()
    central = bytearray()
    for member, method, crc, data, expanded in members:
        sizes = struct.pack("<III", crc, len(data), expanded)
        central += struct.pack("<IHHHHHH", 0x02014B50, 0x0314, 20, _UTF8, method, time, date)
        central += sizes + struct.pack("<HHHHHII", len(member), 0, 0, 0, 0, _UNIX_FILE, len(local))
        central += member
        local += struct.pack("<IHHHHH", 0x04034B50, 20, _UTF8, method, time, date)
        local += sizes + struct.pack("<HH", len(member), 0) + member + data
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 2, 2, len(central), len(local), 0)
    path.write_bytes(bytes(local + central + end))
    return path
