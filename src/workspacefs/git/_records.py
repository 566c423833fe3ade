"""A snapshot's metadata records, read and checked before ``load`` builds anything.

Each directory's metadata tree holds a ``meta`` blob (JSON: one record per entry)
and a ``d:<name>`` subtree per child directory (see ``_persist``). A repository
can name one subtree many times, so a few hundred kilobytes may describe millions
of directories; ``measure`` therefore reads each distinct record once, counts what
the snapshot expands to (entries and declared sizes, per subtree, memoised by
tree id) and raises ``LimitExceededError`` before a single node is made. Each
record is bounded as it is read: its blob's size (from the header) first, then the
objects its JSON holds, counted while it is parsed.

Every record is checked too (``Entry.parse``): what the kernel cannot show is
refused (owners past 32 bits, sizes past ``off_t``, unknown file types), times
are clamped to what the protocol shows (``fs.recorded_time``), and, unless the
caller asks (``special_modes``), setuid, setgid and sticky bits are dropped and
devices refused: nothing from a repository brings privileges in.
"""

from __future__ import annotations

import base64
import binascii
import json
import stat as _stat
from dataclasses import dataclass
from typing import Any

import pygit2
from pygit2.enums import ObjectType

from .._errors import FsError, LimitExceededError, NoSpaceError
from ..fs import (
    MAX_FILE_SIZE,
    available_memory,
    recorded_id,
    recorded_int,
    recorded_time,
    sanitised_mode,
)
from ..tree import NAME_MAX, PATH_MAX, validate_name
from ._limits import _HOW, LoadLimits
from ._objects import EMPTY_TREE, TreeEntry, decode_name, read_blob, read_tree
from ._persist import DIR_PREFIX, META_BLOB

XATTR_SIZE_MAX = 1 << 16
"""The largest extended attribute value Linux takes."""
MAX_RDEV = 2**32 - 1
"""A device number as FUSE passes it (32 bits)."""
_KINDS = frozenset((_stat.S_IFREG, _stat.S_IFDIR, _stat.S_IFLNK, _stat.S_IFIFO, _stat.S_IFSOCK))
_DEVICES = frozenset((_stat.S_IFCHR, _stat.S_IFBLK))


@dataclass(frozen=True, slots=True)
class Entry:
    """One checked record: a name in a directory and its attributes."""

    name: str
    stored_as: str  # the name in the git tree (escaped if git refuses the real one)
    mode: int
    uid: int
    gid: int
    atime: int
    mtime: int
    ctime: int
    size: int = 0
    rdev: int = 0
    link: int | None = None
    xattrs: tuple[tuple[bytes, bytes], ...] = ()

    @property
    def kind(self) -> int:
        return _stat.S_IFMT(self.mode)

    @classmethod
    def parse(cls, name: str, raw: object, path: str, special_modes: bool) -> Entry:
        """Check the record ``raw`` of the entry at ``path``.

        Raises:
            ValueError: A value no kernel or caller could take; the message says
                which, at ``path``.
        """
        try:
            if not isinstance(raw, dict):
                raise ValueError("its record is not an object")
            mode = recorded_int(raw.get("mode"), "mode", 0, 0o177777)
            kind = _stat.S_IFMT(mode)
            if kind in _DEVICES and not special_modes:
                raise ValueError(
                    f"a device node (mode {mode:#o}); devices load only if asked "
                    "(git.load(special_modes=True), workspacefs mount --special-modes)"
                )
            if kind not in _KINDS and kind not in _DEVICES:
                raise ValueError(f"mode {mode:#o} is no file type")
            mode = sanitised_mode(mode, special_modes)
            link = raw.get("link")
            if link is not None and (type(link) is not int or kind == _stat.S_IFDIR):
                raise ValueError(f"link {link!r} is not a hard link group of a file")
            stored_as = raw.get("stored_as", name)
            if not isinstance(stored_as, str):
                raise ValueError(f"stored_as {stored_as!r} is not a name")
            size = 0
            if kind == _stat.S_IFREG:
                size = recorded_int(raw.get("size"), "size", 0, MAX_FILE_SIZE)
            return cls(
                name=name,
                stored_as=stored_as,
                mode=mode,
                uid=recorded_id(raw.get("uid"), "uid"),
                gid=recorded_id(raw.get("gid"), "gid"),
                atime=recorded_time(raw.get("atime"), "atime"),
                mtime=recorded_time(raw.get("mtime"), "mtime"),
                ctime=recorded_time(raw.get("ctime"), "ctime"),
                size=size,
                rdev=recorded_int(raw.get("rdev", 0), "rdev", 0, MAX_RDEV),
                link=link,
                xattrs=_xattrs(raw.get("xattrs", {})),
            )
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None


def _xattrs(raw: object) -> tuple[tuple[bytes, bytes], ...]:
    if not isinstance(raw, dict):
        raise ValueError("xattrs is not an object")
    found = []
    for name, value in raw.items():
        try:
            key, data = (
                base64.b64decode(name, validate=True),
                base64.b64decode(value, validate=True),
            )
        except (binascii.Error, TypeError, ValueError):
            raise ValueError("xattrs: a name or value is not base64") from None
        if not 0 < len(key) <= NAME_MAX or b"\0" in key:
            raise ValueError(f"xattrs: name {key[: NAME_MAX + 1]!r} is empty or too long")
        if len(data) > XATTR_SIZE_MAX:
            raise ValueError(f"xattrs: the value of {key!r} is over {XATTR_SIZE_MAX} bytes")
        found.append((key, data))
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Record:
    """One directory's checked metadata: its entries and its subdirectories' trees."""

    entries: tuple[Entry, ...]
    subdirs: dict[str, pygit2.Oid]
    own: Entry | None = None  # the root's own attributes (its ``.`` record)
    declared: int = 0  # the sizes of its files


def sized(odb: pygit2.Odb, oid: pygit2.Oid, kind: int, what: str, limits: LoadLimits) -> None:
    """Check, from its header, that an object is of ``kind`` and small enough to read."""
    found, size = odb.read_header(oid)
    if found != kind:
        raise ValueError(f"{what} {oid} is not a {ObjectType(kind).name.lower()}")
    limits.check("max_record_bytes", size, f"{what} {oid} has", "bytes")


def read_checked_tree(
    odb: pygit2.Odb, oid: pygit2.Oid, what: str, limits: LoadLimits
) -> list[TreeEntry]:
    """``read_tree`` after checking the object's size."""
    sized(odb, oid, ObjectType.TREE, what, limits)
    return read_tree(odb, oid)


def listed_entries(
    odb: pygit2.Odb, tree_oid: pygit2.Oid, path: str, limits: LoadLimits
) -> dict[bytes, tuple[int, pygit2.Oid]]:
    """Name -> (git mode, id) of the entries of the git tree of the directory at ``path``."""
    if tree_oid == EMPTY_TREE:
        return {}
    what = f"the tree of {path or '/'}"
    return {name: (mode, oid) for name, mode, oid in read_checked_tree(odb, tree_oid, what, limits)}


def link_target(odb: pygit2.Odb, oid: pygit2.Oid, where: str) -> str:
    """A symlink's target, its blob's size checked before it is read."""
    kind, size = odb.read_header(oid)
    if kind != ObjectType.BLOB or not 0 < size < PATH_MAX:
        raise ValueError(f"{where}: a symlink target of {size:,} bytes (PATH_MAX is {PATH_MAX})")
    return decode_name(read_blob(odb, oid))


def read_record(
    odb: pygit2.Odb,
    meta_tree: pygit2.Oid,
    path: str,
    limits: LoadLimits,
    room: int,
    special_modes: bool,
) -> Record:
    """The checked record of the directory at ``path`` (``/`` for the root), whose
    metadata tree is ``meta_tree``; at most ``room`` entries are parsed."""
    blob, subdirs = split_meta_tree(odb, meta_tree, path, limits)
    return read_split_record(odb, blob, subdirs, path, limits, room, special_modes)


def read_split_record(
    odb: pygit2.Odb,
    blob: pygit2.Oid,
    subdirs: dict[str, pygit2.Oid],
    path: str,
    limits: LoadLimits,
    room: int,
    special_modes: bool,
) -> Record:
    """``read_record`` of a metadata tree already split (``split_meta_tree``)."""
    raw = _parse_record(odb, blob, path, limits, room)
    own = _root_entry(raw, path, special_modes)
    entries = []
    prefix = path if path.endswith("/") else path + "/"
    for name, item in raw.items():
        try:
            validate_name(name)
        except (FsError, ValueError):
            raise ValueError(f"{path}: {name[:NAME_MAX]!r} is not a name") from None
        entry = Entry.parse(name, item, prefix + name, special_modes)
        if (entry.kind == _stat.S_IFDIR) != (name in subdirs):
            raise ValueError(f"{prefix}{name}: mode {entry.mode:#o} and the metadata tree disagree")
        entries.append(entry)
    declared = sum(entry.size for entry in entries)
    return Record(tuple(entries), subdirs, own, declared)


def split_meta_tree(
    odb: pygit2.Odb, meta_tree: pygit2.Oid, path: str, limits: LoadLimits
) -> tuple[pygit2.Oid, dict[str, pygit2.Oid]]:
    """The record blob of a directory's metadata tree, and its subdirectories' trees."""
    subdirs: dict[str, pygit2.Oid] = {}
    blob = None
    for name, _, oid in read_checked_tree(odb, meta_tree, f"the metadata tree of {path}", limits):
        if name == META_BLOB:
            blob = oid
        elif name.startswith(DIR_PREFIX):
            subdirs[decode_name(name[len(DIR_PREFIX) :])] = oid
    if blob is None:
        raise ValueError(f"{path}: its metadata tree has no record")
    return blob, subdirs


def _parse_record(
    odb: pygit2.Odb, blob: pygit2.Oid, path: str, limits: LoadLimits, room: int
) -> dict[str, Any]:
    """The JSON object of a record blob, read once its size is checked; the parse stops
    past ``room`` entries."""
    sized(odb, blob, ObjectType.BLOB, f"the record of {path}", limits)
    text = read_blob(odb, blob).decode("utf-8", "surrogateescape")
    try:
        raw = json.loads(text, object_pairs_hook=_Counted(room + 2, path, limits))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: its record is not JSON: {exc}") from None
    except RecursionError:  # valid JSON, nested deeper than the parser recurses
        raise ValueError(f"{path}: its record is nested too deeply") from None
    if not isinstance(raw, dict):
        raise ValueError(f"metadata of {path} is not an object")
    return raw


def _root_entry(raw: dict[str, Any], path: str, special_modes: bool) -> Entry | None:
    """The root's own attributes, taken out of its record (``.``); None if it has none."""
    if "." not in raw:
        return None
    if path != "/":
        raise ValueError(f"{path}: a '.' record below the root")
    own = Entry.parse(".", raw.pop("."), path, special_modes)
    if own.kind != _stat.S_IFDIR:
        raise ValueError(f"{path}: mode {own.mode:#o} of the root is not a directory's")
    return own


class _Counted:
    """An ``object_pairs_hook`` that stops a parse past ``room`` entry records
    (each object is a record, or an entry's xattrs: at most two per entry)."""

    def __init__(self, room: int, path: str, limits: LoadLimits) -> None:
        self._left = 2 * room
        self._path = path
        self._limits = limits

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        self._left -= 1
        if self._left < 0:
            raise LimitExceededError(
                f"the record of {self._path} holds more entries than loading may make "
                f"(max_entries, {self._limits.max_entries:,}; raise it with "
                f"{_HOW.format(name='max_entries')})",
                None,
            )
        return dict(pairs)


def measure(
    odb: pygit2.Odb,
    root: pygit2.Oid,
    limits: LoadLimits,
    special_modes: bool,
    enough: int | None = None,
) -> tuple[dict[pygit2.Oid, Record], int | None]:
    """Read and check the record of every distinct directory below the metadata
    tree ``root``; return them by metadata tree id, and the number of entries the
    snapshot expands to.

    With ``enough``, stop once the records read hold more distinct entries than that
    (a large snapshot, whose directories are listed as they are needed instead): the
    records read so far, and None. A snapshot that repeats a few subtrees many times
    (a bomb) holds few distinct entries, so it is still counted, and refused, whole.

    Raises:
        LimitExceededError: The snapshot expands past ``limits`` (checked subtree
            by subtree as they are read, before anything is built).
        ValueError: A record is damaged or holds what ``Entry.parse`` refuses.
    """
    records: dict[pygit2.Oid, Record] = {}
    totals: dict[pygit2.Oid, tuple[int, int]] = {}  # (entries, declared bytes) once expanded
    distinct = 0  # entries of the records read: never more than the expansion
    stack: list[tuple[pygit2.Oid, str, bool]] = [(root, "/", False)]
    while stack:
        oid, path, expanded = stack.pop()
        if oid in totals:
            continue
        record = records.get(oid)
        if record is None:
            record = read_record(
                odb, oid, path, limits, limits.max_entries - distinct, special_modes
            )
            records[oid] = record
            distinct += len(record.entries)
            limits.check("max_entries", distinct, "the snapshot holds at least", "entries")
            if enough is not None and distinct > enough:
                return records, None
        if not expanded:
            stack.append((oid, path, True))  # again once its subdirectories are counted
            prefix = path if path.endswith("/") else path + "/"
            stack.extend(
                (sub, prefix + name, False)
                for name, sub in record.subdirs.items()
                if sub not in totals
            )
            continue
        entries, declared = len(record.entries), record.declared
        for sub in record.subdirs.values():
            if sub not in totals:
                raise ValueError(f"{path}: its metadata trees form a cycle")
            entries += totals[sub][0]
            declared += totals[sub][1]
        what = "the snapshot holds" if path == "/" else f"{path} holds"
        limits.check("max_entries", entries, what, "entries")
        limits.check("max_total_bytes", declared, f"{what} files declaring", "bytes")
        totals[oid] = (entries, declared)
    return records, totals[root][0]


ENTRY_BYTES = 2048
"""What one loaded entry costs at most outside the memory budget (node, directory
entry, table slot, content reference, record while loading; measured 1.5 KB)."""


def entries_room() -> int:
    """Bytes the bookkeeping of loaded entries may take: half of the memory this process
    can still allocate, which a workspace's default budget leaves to what it does not
    count (``fs.default_memory_budget``)."""
    return available_memory() // 2


def check_room(entries: int, room: int | None = None) -> None:
    """Refuse to build ``entries`` entries if their bookkeeping would not fit in
    ``room`` bytes (None: ``entries_room()`` now; a load built directory by directory
    measures it once, before it builds any).

    Raises:
        NoSpaceError: It would not.
    """
    needed = entries * ENTRY_BYTES
    room = entries_room() if room is None else room
    if needed > room:
        raise NoSpaceError(
            f"loading {entries:,} entries needs about {needed:,} bytes of memory besides "
            f"file contents; {room:,} are free for it",
            None,
        )
