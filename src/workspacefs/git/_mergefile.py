"""Line-wise three-way merge of one file's text: libgit2's merge-file.

libgit2 merges blobs it finds in an object database, so a scratch repository
with an object database in memory holds the three sides: no file is written
and nothing outlives the call. pygit2's ``merge_file_from_index`` takes no
options (so no diff3 style) and decodes the result as UTF-8; the call is made
through pygit2's own cffi binding instead, which passes the options and gives
the merged bytes back as they are.

Also here: reading conflict markers back, as an open merge's files hold them
(``conflict_hunks``, ``marker_lines``).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import pygit2
from pygit2.errors import check_error
from pygit2.ffi import C, ffi

LABELS = (b"base", b"ours", b"theirs")
"""The labels of the three sides in conflict markers (git's ``merge-tree`` uses the
branch names; the tests name their branches so)."""

_MARKER = re.compile(rb"^(?:<{7}|\|{7}|>{7})(?:[ \r]|$)|^={7}\r?$")
"""A line git counts as a conflict marker (``git diff --check``): seven ``<``, ``|``
or ``>`` then a space or the line's end; seven ``=`` alone."""


class _MemoryBackend(pygit2.OdbBackend):
    """An object database backend in a dict, for one merge."""

    def __init__(self) -> None:
        super().__init__()
        self._objects: dict[str, tuple[int, bytes]] = {}

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        return self._objects[str(oid)]

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        kind, data = self._objects[str(oid)]
        return kind, len(data)

    def write_cb(self, oid: pygit2.Oid, data: bytes, kind: int) -> None:
        self._objects[str(oid)] = (kind, bytes(data))

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return str(oid) in self._objects

    def refresh_cb(self) -> None:
        pass


def merge_text(
    base: bytes | None, ours: bytes, theirs: bytes, *, diff3: bool = False
) -> tuple[bytes, bool]:
    """Merge ``theirs`` into ``ours`` line by line against ``base`` (None: no
    common version, as for two additions); return the merged bytes and
    whether they are clean. Unclean bytes carry git's conflict markers
    (``<<<<<<< ours`` / ``=======`` / ``>>>>>>> theirs``; with ``diff3``, each
    conflict shows the base's lines too, after ``||||||| base``, as git's
    ``merge.conflictStyle=diff3`` does).

    Any bytes merge, not only UTF-8: they go in and come back as they are.
    """
    odb = pygit2.Odb()
    odb.add_backend(_MemoryBackend(), 1)
    repository = pygit2.Repository()
    repository.set_odb(odb)
    held: list[Any] = []  # cffi frees what nothing references: kept until the call returns

    def entry(data: bytes | None) -> Any:
        if data is None:
            return ffi.NULL
        oid = odb.write(pygit2.enums.ObjectType.BLOB, data)
        found = ffi.new("git_index_entry *")
        found.mode = int(pygit2.enums.FileMode.BLOB)
        path = ffi.new("char[]", b"file")
        found.path = path
        ffi.memmove(ffi.addressof(found.id), oid.raw, len(oid.raw))
        held.extend((found, path))
        return found

    options = ffi.new("git_merge_file_options *")
    options.version = 1
    labels = [ffi.new("char[]", label) for label in LABELS]
    options.ancestor_label, options.our_label, options.their_label = labels
    options.flags = C.GIT_MERGE_FILE_STYLE_DIFF3 if diff3 else C.GIT_MERGE_FILE_DEFAULT
    result = ffi.new("git_merge_file_result *")
    # The repository's pointer: pygit2 calls libgit2 with it the same way.
    check_error(
        C.git_merge_file_from_index(
            result, repository._repo, entry(base), entry(ours), entry(theirs), options
        )
    )
    try:
        merged = bytes(ffi.buffer(result.ptr, result.len)) if result.len else b""
        return merged, bool(result.automergeable)
    finally:
        C.git_merge_file_result_free(result)


@dataclass(frozen=True, slots=True)
class Hunk:
    """One conflict of a text merged in diff3 style: the line its ``<<<<<<<`` is on
    (from 1) and the lines of each side there."""

    line: int
    base: bytes
    ours: bytes
    theirs: bytes


def conflict_hunks(merged: bytes) -> list[Hunk]:
    """The conflicts in ``merged``, a text ``merge_text(..., diff3=True)`` gave."""
    hunks: list[Hunk] = []
    parts: dict[str, list[bytes]] = {}
    side: str | None = None
    start = 0
    for number, line in enumerate(merged.splitlines(keepends=True), 1):
        bare = line.rstrip(b"\r\n")
        if side is None:
            if bare == b"<<<<<<< ours":
                side, start, parts = "ours", number, {"ours": [], "base": [], "theirs": []}
            continue
        if side == "ours" and bare.startswith(b"|||||||") and _MARKER.match(bare):
            side = "base"
        elif side in ("ours", "base") and bare == b"=======":
            side = "theirs"
        elif side == "theirs" and bare == b">>>>>>> theirs":
            joined = {name: b"".join(lines) for name, lines in parts.items()}
            hunks.append(Hunk(start, joined["base"], joined["ours"], joined["theirs"]))
            side = None
        else:
            parts[side].append(line)
    return hunks


def marker_like(data: bytes) -> set[bytes]:
    """The lines of ``data`` that look like conflict markers."""
    return {line for line in data.splitlines() if _MARKER.match(line)}


def marker_lines(data: bytes, known: Collection[bytes] = ()) -> list[int]:
    """The lines of ``data`` (from 1) that look like conflict markers, except those
    equal to a line in ``known`` (what the sides held already is content, not a
    marker)."""
    found = []
    for number, line in enumerate(data.splitlines(), 1):
        if _MARKER.match(line) and line not in known:
            found.append(number)
    return found
