"""Line-wise three-way merge of one file's text: libgit2's merge-file.

libgit2 merges blobs it finds in an object database, so a scratch repository
with an object database in memory holds the three sides: no file is written
and nothing outlives the call.
"""

from __future__ import annotations

import pygit2


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


def merge_text(base: bytes | None, ours: bytes, theirs: bytes) -> tuple[bytes, bool]:
    """Merge ``theirs`` into ``ours`` line by line against ``base`` (None: no
    common version, as for two additions); return the merged bytes and
    whether they are clean. Unclean bytes carry git's conflict markers
    (``<<<<<<< ours`` / ``=======`` / ``>>>>>>> theirs``).

    Any bytes merge, not only UTF-8: pygit2 decodes the result as UTF-8, so
    each side goes in as its bytes read as Latin-1 (one character a byte;
    line ends stay single bytes, as no UTF-8 sequence holds a 0x0A byte) and
    the result comes back through the inverse mapping.
    """
    odb = pygit2.Odb()
    odb.add_backend(_MemoryBackend(), 1)
    repository = pygit2.Repository()
    repository.set_odb(odb)

    def entry(label: str, data: bytes | None) -> pygit2.IndexEntry | None:
        if data is None:
            return None
        oid = odb.write(pygit2.enums.ObjectType.BLOB, data.decode("latin-1").encode())
        # The entry's path is the label of its side in conflict markers.
        return pygit2.IndexEntry(label, oid, pygit2.enums.FileMode.BLOB)

    result = repository.merge_file_from_index(
        entry("base", base), entry("ours", ours), entry("theirs", theirs)
    )
    assert not isinstance(result, str)
    return result.contents.encode("latin-1"), bool(result.automergeable)
