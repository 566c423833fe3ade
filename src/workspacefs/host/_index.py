"""Read and write git index files (versions 2 and 3) without libgit2, for their stat data.

The index records, for every tracked path, the stat of the file when it was
last hashed. A working file whose stat still matches is known unchanged
without reading it: the same shortcut ``git status`` takes. Reading the
file directly is several times faster than building pygit2 entry objects,
and writing it directly lets the host snapshots keep stat data for files
they hashed themselves (through descriptors, never by path).
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass

import pygit2

_HEADER = struct.Struct(">4sII")
_ENTRY = struct.Struct(">IIIIIIIIII20sH")  # ctime, mtime, dev, ino, mode, uid, gid, size, id, flags
_EXTENDED = 0x4000
_WORD = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One tracked path with the stat git saw and the blob it hashed.

    As in the file, ``size``, ``ino`` and ``dev`` keep their low 32 bits only,
    and ``mtime_ns``/``ctime_ns`` the low 32 bits of their seconds.
    """

    path: str
    mode: int
    oid: pygit2.Oid
    mtime_ns: int
    size: int
    ino: int
    stage: int
    ctime_ns: int = -1
    dev: int = -1


def read_index(path: str) -> list[IndexEntry] | None:
    """The entries of an index file; None for a version this reader does not parse (4)."""
    with open(path, "rb") as handle:
        data = handle.read()
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version not in (2, 3):
        return None
    entries = []
    offset = _HEADER.size
    for _ in range(count):
        fields = _ENTRY.unpack_from(data, offset)
        ctime_s, ctime_ns, mtime_s, mtime_ns, dev, ino, mode, _, _, size, oid, flags = fields
        start = offset + _ENTRY.size
        if version == 3 and flags & _EXTENDED:
            start += 2
        end = data.index(b"\0", start)
        name = data[start:end].decode("utf-8", "surrogateescape")
        mtime = mtime_s * 1_000_000_000 + mtime_ns
        ctime = ctime_s * 1_000_000_000 + ctime_ns
        stage = (flags >> 12) & 3
        entries.append(
            IndexEntry(name, mode, pygit2.Oid(raw=oid), mtime, size, ino, stage, ctime, dev)
        )
        length = end - offset
        offset += (length + 8) & ~7  # entries are NUL-padded to a multiple of 8
    return entries


def index_entry(path: str, mode: int, oid: pygit2.Oid, info: os.stat_result) -> IndexEntry:
    """The entry of ``path`` hashed as ``oid`` while its ``lstat`` was ``info``."""
    return IndexEntry(
        path,
        mode,
        oid,
        _truncated_ns(info.st_mtime_ns),
        info.st_size & _WORD,
        info.st_ino & _WORD,
        0,
        _truncated_ns(info.st_ctime_ns),
        info.st_dev & _WORD,
    )


def _truncated_ns(ns: int) -> int:
    seconds, rest = divmod(ns, 1_000_000_000)
    return (seconds & _WORD) * 1_000_000_000 + rest


def matches(entry: IndexEntry, info: os.stat_result, index_written_ns: int) -> bool:
    """True if a file with ``lstat`` ``info`` is still what ``entry`` hashed.

    A file changed in the same clock tick as the index was written may look
    unchanged ("racy git"): entries not older than the index are never trusted.
    Times are compared whole: past 2106, when the file's 32-bit seconds wrap,
    nothing matches any more and files are hashed again (slower, never wrong).
    """
    return (
        entry.mtime_ns == info.st_mtime_ns
        and entry.ctime_ns == info.st_ctime_ns
        and entry.size == info.st_size & _WORD
        and entry.ino == info.st_ino & _WORD
        and entry.dev == info.st_dev & _WORD
        and entry.ctime_ns < index_written_ns
        and entry.mtime_ns < index_written_ns
    )


def write_index(path: str, entries: Iterable[IndexEntry]) -> None:
    """Write a version 2 index file (atomically: a temporary file renamed over ``path``)."""
    ordered = sorted(entries, key=lambda e: (e.path.encode("utf-8", "surrogateescape"), e.stage))
    chunks = [_HEADER.pack(b"DIRC", 2, len(ordered))]
    for entry in ordered:
        name = entry.path.encode("utf-8", "surrogateescape")
        ctime_s, ctime_ns = divmod(max(entry.ctime_ns, 0), 1_000_000_000)
        mtime_s, mtime_ns = divmod(max(entry.mtime_ns, 0), 1_000_000_000)
        flags = (entry.stage << 12) | min(len(name), 0xFFF)
        packed = _ENTRY.pack(
            ctime_s & _WORD,
            ctime_ns,
            mtime_s & _WORD,
            mtime_ns,
            max(entry.dev, 0) & _WORD,
            max(entry.ino, 0) & _WORD,
            entry.mode,
            0,
            0,
            max(entry.size, 0) & _WORD,
            entry.oid.raw,
            flags,
        )
        length = len(packed) + len(name)
        chunks.append(packed + name + b"\0" * (8 - length % 8))
    body = b"".join(chunks)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(body + hashlib.sha1(body).digest())
    os.replace(temporary, path)
