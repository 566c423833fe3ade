"""Workspace archives as a debug target: one ``.fs.zip``, a session dump, or a
directory of them (``ArchiveSnapshots``, ``SessionCheckpoints``, dumps).

Each archive is checked by the archive layer itself (``read_archive`` into a
target that only records the entries: every name, type, size and symlink is
validated, nothing is imported), then served from the ZIP by exact member
name. A path the archive does not hold is simply not found: nothing is ever
resolved against a real directory.

Checking an archive reads its central directory and every member header,
about 50 microseconds a file, so indexes are built once (``warm`` builds the
two newest, which the page opens on, before the server starts) and a few are kept.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import stat as _stat
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from .._errors import (
    BackendUnavailableError,
    FsError,
    IsADirectoryFsError,
    NotADirectoryFsError,
    NotFoundError,
    SnapshotNotFoundError,
)
from ..archive import ArchiveError, Entry, Reader, read_archive
from ._model import (
    Attribution,
    Changes,
    EntryKind,
    SnapshotSummary,
    TargetInfo,
    TreeEntry,
    depth_first,
    tree_key,
)
from ._reader import BLOCK

MANIFEST = "manifest.json"
FILES = "files/"
"""Where an archive keeps the workspace (docs/archives.md)."""

KEPT_INDEXES = 4
"""Archive indexes kept in memory (about 600 bytes a file each)."""


@dataclass(frozen=True, slots=True)
class ArchiveMember:
    """One snapshot kept as an archive.

    Attributes:
        id: The snapshot's name (the archive's file name without ``.zip``/``.fs.zip``).
        archive: The ZIP file.
        session: A session record that goes with it: a dump's ``<id>.jsonl`` or a
            checkpoint's ``<id>.session.json``.
    """

    id: str
    archive: Path
    session: Path | None = None


@dataclass(slots=True)
class _Recorder:
    """An ``ArchiveTarget`` that keeps the validated entries and imports nothing."""

    entries: list[Entry] = field(default_factory=list)

    def reserve(self, nbytes: int) -> None:
        pass  # nothing is written

    def begin(self) -> None:
        pass

    def add(self, entry: Entry, content: Reader | None) -> None:
        self.entries.append(entry)

    def commit(self) -> None:
        pass

    def abort(self) -> None:
        pass


def _kind(mode: int) -> EntryKind:
    if _stat.S_ISDIR(mode):
        return "directory"
    if _stat.S_ISLNK(mode):
        return "symlink"
    return "file"


class _Index:
    """One checked archive: its entries by path, its children by directory."""

    def __init__(self, member: ArchiveMember) -> None:
        recorder = _Recorder()
        try:
            read_archive(recorder, member.archive)
            self.zip = zipfile.ZipFile(member.archive)
            self.manifest = json.loads(self.zip.read(MANIFEST))
        except FileNotFoundError as exc:
            raise BackendUnavailableError("the archive is gone", str(member.archive)) from exc
        except (FsError, zipfile.BadZipFile, KeyError, ValueError) as exc:
            # A hostile path or a size over the limits is a malformed archive here,
            # not a bad request: the client asked for nothing wrong. The error names
            # the archive; the message names the entry.
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            entry = exc.filename if isinstance(exc, OSError) and exc.filename else None
            where = f" ({entry})" if entry and entry != str(member.archive) else ""
            raise ArchiveError(f"malformed archive: {reason}{where}", str(member.archive)) from exc
        self.entries: dict[str, TreeEntry] = {"": TreeEntry("", "directory", 0, _stat.S_IFDIR)}
        self.children: dict[str, list[str]] = {"": []}
        self.signatures: dict[str, tuple[int, int, int, str | None]] = {}
        for entry in recorder.entries:
            kind = _kind(entry.mode)
            size = len(entry.target) if entry.target is not None else entry.size
            self.entries[entry.path] = TreeEntry(entry.path, kind, size, entry.mode, entry.target)
            self.children.setdefault(entry.path.rpartition("/")[0], []).append(entry.path)
            if kind == "directory":
                self.children.setdefault(entry.path, [])
            else:
                crc = self.zip.getinfo(FILES + entry.path).CRC if kind == "file" else 0
                self.signatures[entry.path] = (entry.mode, entry.size, crc, entry.target)
        entries, children = self.entries, self.children
        self.order = list(
            depth_first(lambda e: (entries[p] for p in children["" if e is None else e.path]))
        )

    def entry(self, path: str) -> TreeEntry:
        found = self.entries.get(path)
        if found is None:
            raise NotFoundError("no such file or directory", path)
        return found

    def file(self, path: str) -> zipfile.ZipInfo:
        entry = self.entry(path)
        if entry.kind == "directory":
            raise IsADirectoryFsError("is a directory", path)
        if entry.kind != "file":
            raise NotFoundError("not a regular file", path)
        return self.zip.getinfo(FILES + path)


def _summary_of(member: ArchiveMember) -> dict[str, Any] | None:
    """The manifest's counts and time, or None if the archive cannot be read."""
    try:
        with zipfile.ZipFile(member.archive) as archive:
            manifest = json.loads(archive.read(MANIFEST))
        return {
            "created_at": datetime.fromisoformat(manifest["created_at"]),
            "file_count": int(manifest["file_count"]),
            "total_bytes": int(manifest["total_bytes"]),
        }
    except (OSError, zipfile.BadZipFile, KeyError, ValueError, TypeError):
        return None


def read_session(path: Path) -> dict[str, Any]:
    """A session dump (``.jsonl``) or checkpoint record (``.session.json``) as JSON.

    Raises:
        ArchiveError: The record does not parse.
    """
    try:
        text = path.read_text()
        if path.name.endswith(".jsonl"):
            lines = [json.loads(line) for line in text.splitlines() if line.strip()]
            header = lines[0]
            state = {
                line["key"]: line["value"] for line in lines[1:] if line.get("kind") == "state"
            }
            return {
                "id": header["id"],
                "created_at": header.get("created_at"),
                "filesystem": header.get("filesystem"),
                "state": state,
            }
        record = json.loads(text)
        return {"state": record["state"], "filesystems": record.get("filesystems", [])}
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ArchiveError(f"malformed session record: {exc}", str(path)) from exc


class ArchivesTarget:
    """Snapshots kept as workspace archives, oldest first by their manifests.

    Args:
        members: The archives (and any session records that go with them).
        kind: ``archive``, ``session``, ``archives`` or ``checkpoints``: how the
            UI describes the target.
        label: How the UI names it.
        location: The file or directory given.
    """

    def __init__(
        self,
        members: Sequence[ArchiveMember],
        *,
        kind: str = "archives",
        label: str,
        location: str | os.PathLike[str] | None = None,
    ) -> None:
        self._members = {member.id: member for member in members}
        self._kind = kind
        self._label = label
        self._location = None if location is None else os.fspath(location)
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {m.id: threading.Lock() for m in members}
        self._indexes: OrderedDict[str, _Index] = OrderedDict()
        self._summaries: dict[str, tuple[tuple[int, int, int], dict[str, Any] | None]] = {}

    def info(self) -> TargetInfo:
        return TargetInfo(self._kind, self._label, self._location, {"archives": len(self._members)})

    def _member(self, snapshot: str) -> ArchiveMember:
        member = self._members.get(snapshot)
        if member is None:
            raise SnapshotNotFoundError("no such snapshot", snapshot)
        return member

    def _summary(self, member: ArchiveMember) -> dict[str, Any] | None:
        try:
            info = member.archive.stat()
        except OSError:
            return None
        identity = (info.st_ino, info.st_size, info.st_mtime_ns)
        cached = self._summaries.get(member.id)
        if cached is None or cached[0] != identity:
            cached = self._summaries[member.id] = (identity, _summary_of(member))
        return cached[1]

    def snapshots(self, *, space: bool = True) -> Sequence[SnapshotSummary]:
        found = [(self._summary(member), member) for member in self._members.values()]
        found.sort(
            key=lambda item: (item[0] is None, item[0] and item[0]["created_at"], item[1].id)
        )
        return [
            SnapshotSummary(
                id=member.id,
                number=number,
                created_at=summary["created_at"] if summary else None,
                file_count=summary["file_count"] if summary else None,
                total_bytes=summary["total_bytes"] if summary else None,
                source=member.archive.name if summary else f"{member.archive.name} (unreadable)",
            )
            for number, (summary, member) in enumerate(found, 1)
        ]

    def _index(self, snapshot: str) -> _Index:
        member = self._member(snapshot)
        with self._lock:
            index = self._indexes.get(snapshot)
            if index is not None:
                self._indexes.move_to_end(snapshot)
                return index
        with self._building[snapshot]:  # one thread builds, the others wait for it
            with self._lock:
                index = self._indexes.get(snapshot)
            if index is None:
                index = _Index(member)
                with self._lock:
                    self._indexes[snapshot] = index
                    while len(self._indexes) > KEPT_INDEXES:
                        # Members still being read keep the file open until they finish.
                        self._indexes.popitem(last=False)[1].zip.close()
        return index

    def details(self, snapshot: str) -> Mapping[str, Any]:
        member = self._member(snapshot)
        manifest = {k: v for k, v in self._index(snapshot).manifest.items() if k != "mtimes"}
        found: dict[str, Any] = {"archive": str(member.archive), "manifest": manifest}
        if member.session is not None:
            found["session"] = read_session(member.session)
        return found

    def list(self, snapshot: str, path: str) -> Sequence[TreeEntry]:
        index = self._index(snapshot)
        entry = index.entry(path)
        if entry.kind != "directory":
            raise NotADirectoryFsError("not a directory", path)
        return sorted((index.entries[p] for p in index.children[path]), key=lambda e: e.path)

    def walk(self, snapshot: str, *, after: str = "") -> Iterator[TreeEntry]:
        order = self._index(snapshot).order  # keys grow along it: find the start by bisection
        return itertools.islice(order, bisect.bisect_right(order, after, key=tree_key), None)

    def stat(self, snapshot: str, path: str) -> TreeEntry:
        return self._index(snapshot).entry(path)

    def read(self, snapshot: str, path: str, limit: int) -> bytes:
        with self._open(self._index(snapshot), path) as member:
            try:
                return member.read(limit)
            except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
                raise ArchiveError(f"corrupt archive member: {exc}", path) from exc

    def blocks(self, snapshot: str, path: str) -> Iterator[bytes]:
        index = self._index(snapshot)
        # Opened now, not on the first read: an open member keeps the file open
        # even if the index is dropped (and its ZIP closed) before the stream ends.
        member = self._open(index, path)

        def stream() -> Iterator[bytes]:
            with member:
                try:
                    while block := member.read(BLOCK):
                        yield block
                except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
                    raise ArchiveError(f"corrupt archive member: {exc}", path) from exc

        return stream()

    @staticmethod
    def _open(index: _Index, path: str) -> IO[bytes]:
        try:
            return index.zip.open(index.file(path))
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            if isinstance(exc, FsError):
                raise
            raise ArchiveError(f"corrupt archive member: {exc}", path) from exc

    def diff(self, base: str, target: str) -> Changes:
        old, new = self._index(base).signatures, self._index(target).signatures
        added = sorted(path for path in new if path not in old)
        deleted = sorted(path for path in old if path not in new)
        # Same mode, size, CRC-32 and link target: the same file (a CRC collision
        # between two versions of one path is a 1 in 4 billion chance).
        modified = sorted(path for path, sig in new.items() if path in old and old[path] != sig)
        return Changes(
            tuple(added), tuple(modified), tuple(deleted), len(new) - len(added) - len(modified)
        )

    def attribution(self, snapshot: str) -> Attribution | None:
        self._member(snapshot)  # an unknown id is an error, as for every other question
        return None  # archives keep no causes

    def warm(self) -> None:
        # The page opens on the newest snapshot and offers the diff from the one before.
        for summary in self.snapshots()[-2:]:
            self._index(summary.id)

    def close(self) -> None:
        with self._lock:
            while self._indexes:
                self._indexes.popitem()[1].zip.close()
