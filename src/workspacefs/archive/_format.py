"""The workspace archive: one ZIP format that every backend exports and imports.

Layout::

    manifest.json          {"format": "workspacefs-archive", "version": 1,
                            "created_at": ISO-8601, "file_count": N, "total_bytes": B,
                            "mtimes": {path: ns, ...}}
    files/<path>           a regular file's bytes
    files/<path>           a symlink: its target as the bytes, S_IFLNK in the mode
    files/<path>/          a directory (so empty ones survive)

Each entry's Unix mode (file type and permission bits, so the exec bit) is
in the ZIP external attributes, as Info-ZIP writes them, so ``unzip`` on
Linux restores modes and symlinks too. ZIP times have a 2-second
resolution, so exact mtimes (ns) are in the manifest. Names are UTF-8 (the
ZIP UTF-8 flag is set); an entry name that is not UTF-8 is refused on import.

Export and import stream: file content moves in 1 MiB blocks, so neither
holds a second copy of the workspace in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import stat as _stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any, Protocol

from .._errors import FsError, InvalidContentError, LimitExceededError, PathEscapeError
from ..fs import Limits, normalize_path

FORMAT = "workspacefs-archive"
VERSION = 1
MANIFEST = "manifest.json"
PREFIX = "files/"
BLOCK = 1 << 20


class ArchiveError(InvalidContentError):
    """A malformed or hostile archive; nothing was changed."""


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    """What an imported archive may claim or contain."""

    max_total_bytes: int = 16 << 30
    """Sum of the declared sizes of all entries."""
    max_ratio: int = 1000
    """Largest compression ratio of one entry over 1 MiB (zip bombs)."""
    max_entries: int = 1_000_000
    max_manifest_bytes: int = 256 << 20


DEFAULT_ARCHIVE_LIMITS = ArchiveLimits()
# Archive paths follow POSIX limits, not the per-call protocol limits.
_PATH_LIMITS = Limits(max_path_depth=2048, max_segment_length=255)


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing an archive holds, as backends see it."""

    path: str
    mode: int  # full st_mode: type and permission bits
    mtime_ns: int
    size: int = 0
    target: str | None = None  # symlinks


class Reader(Protocol):
    """A stream of bytes read block by block."""

    def read(self, size: int = -1, /) -> bytes: ...


def symlink_target(entry: Entry) -> str:
    """The target of a symlink entry; ArchiveError if it has none."""
    if entry.target is None:
        raise ArchiveError("symlink entry without a target", entry.path)
    return entry.target


def file_content(entry: Entry, content: Reader | None) -> Reader:
    """The content stream of a file entry; ArchiveError if it has none."""
    if content is None:
        raise ArchiveError("file entry without content", entry.path)
    return content


class ArchiveSource(Protocol):
    """What a backend offers to export: entries (parents first) and their bytes."""

    def entries(self) -> Iterator[Entry]: ...

    def open(self, path: str) -> contextlib.AbstractContextManager[Reader]: ...


class ArchiveTarget(Protocol):
    """What a backend offers to import into: applied only after validation."""

    def begin(self) -> None:
        """Empty the workspace (the backend can undo until ``commit``)."""
        ...

    def add(self, entry: Entry, content: Reader | None) -> None: ...

    def commit(self) -> None: ...

    def abort(self) -> None:
        """Return the workspace to what it was before ``begin``."""
        ...


def _unix_attributes(mode: int) -> int:
    return (mode & 0xFFFF) << 16


def write_archive(source: ArchiveSource, path: str | os.PathLike[str]) -> int:
    """Write ``source`` as an archive at ``path``; return the number of files.

    The archive appears at ``path`` complete or not at all.
    """
    mtimes: dict[str, int] = {}
    files = total = 0
    temp = f"{os.fspath(path)}.partial"
    try:
        with zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for entry in source.entries():
                mtimes[entry.path] = entry.mtime_ns
                kind = _stat.S_IFMT(entry.mode)
                name = PREFIX + entry.path + ("/" if kind == _stat.S_IFDIR else "")
                info = zipfile.ZipInfo(name, _zip_time(entry.mtime_ns))
                info.external_attr = _unix_attributes(entry.mode) | (
                    0x10 if kind == _stat.S_IFDIR else 0
                )
                info.compress_type = zipfile.ZIP_DEFLATED
                if kind == _stat.S_IFDIR:
                    archive.writestr(info, b"")
                elif kind == _stat.S_IFLNK:
                    archive.writestr(info, symlink_target(entry).encode("utf-8", "surrogateescape"))
                    files += 1
                elif kind == _stat.S_IFREG:
                    with (
                        source.open(entry.path) as content,
                        archive.open(info, "w", force_zip64=True) as out,
                    ):
                        while block := content.read(BLOCK):
                            out.write(block)
                            total += len(block)
                    files += 1
            manifest = {
                "format": FORMAT,
                "version": VERSION,
                "created_at": datetime.now(UTC).isoformat(),
                "file_count": files,
                "total_bytes": total,
                "mtimes": mtimes,
            }
            archive.writestr(MANIFEST, json.dumps(manifest, sort_keys=True))
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return files


def _zip_time(mtime_ns: int) -> tuple[int, int, int, int, int, int]:
    moment = datetime.fromtimestamp(max(mtime_ns / 1e9, 315532800), UTC)  # ZIP starts in 1980
    return (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)


@dataclass(frozen=True, slots=True)
class _Planned:
    info: zipfile.ZipInfo
    entry: Entry


def _plan(archive: zipfile.ZipFile, limits: ArchiveLimits) -> tuple[list[_Planned], dict[str, Any]]:
    """Check every entry before anything is written."""
    infos = archive.infolist()
    if len(infos) > limits.max_entries:
        raise ArchiveError(
            f"{len(infos):,} entries, over the limit of {limits.max_entries:,}", None
        )
    try:
        info = archive.getinfo(MANIFEST)
    except KeyError:
        raise ArchiveError("no manifest.json: not a workspace archive", None) from None
    if info.file_size > limits.max_manifest_bytes:
        raise ArchiveError("manifest.json is too large", MANIFEST)
    try:
        manifest = json.loads(archive.read(MANIFEST))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"manifest.json is not valid JSON: {exc}", MANIFEST) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError("manifest.json does not describe a workspace archive", MANIFEST)
    if manifest.get("version") != VERSION:
        raise ArchiveError(f"unsupported archive version {manifest.get('version')!r}", MANIFEST)
    mtimes = manifest.get("mtimes", {})
    if not isinstance(mtimes, dict):
        raise ArchiveError("manifest.json: mtimes must be an object", MANIFEST)
    declared = 0
    seen: dict[str, int] = {}
    planned: list[_Planned] = []
    for info in infos:
        if info.filename == MANIFEST:
            continue
        if not info.flag_bits & 0x800 and not info.orig_filename.isascii():
            raise ArchiveError("entry name is not UTF-8", repr(info.orig_filename))
        if not info.filename.startswith(PREFIX):
            raise ArchiveError("entry outside files/", info.filename)
        raw = info.filename[len(PREFIX) :]
        if (
            raw.startswith("/")
            or "\\" in raw
            or any(p in ("", ".", "..") for p in raw.rstrip("/").split("/"))
        ):
            raise PathEscapeError("entry path is absolute or leaves the workspace", info.filename)
        try:
            path = normalize_path(raw, None, _PATH_LIMITS)
        except FsError as exc:
            raise ArchiveError(f"bad entry path: {exc.strerror}", info.filename) from None
        if path in seen:
            raise ArchiveError("duplicate entry", info.filename)
        mode = info.external_attr >> 16
        kind = _stat.S_IFMT(mode) or (_stat.S_IFDIR if info.is_dir() else _stat.S_IFREG)
        if info.is_dir() != (kind == _stat.S_IFDIR):
            raise ArchiveError("entry type and name disagree", info.filename)
        if kind not in (_stat.S_IFREG, _stat.S_IFDIR, _stat.S_IFLNK):
            raise ArchiveError("only files, directories and symlinks are allowed", info.filename)
        declared += info.file_size
        if declared > limits.max_total_bytes:
            raise LimitExceededError(
                f"archive expands past {limits.max_total_bytes:,} bytes", info.filename
            )
        if info.file_size > BLOCK and info.file_size > limits.max_ratio * max(
            info.compress_size, 1
        ):
            raise LimitExceededError(
                f"compression ratio over {limits.max_ratio}: a zip bomb?", info.filename
            )
        target = None
        if kind == _stat.S_IFLNK:
            if info.file_size > 4096:
                raise ArchiveError("symlink target too long", info.filename)
            target = archive.read(info).decode("utf-8", "surrogateescape")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
                raise PathEscapeError("symlink points outside the workspace", info.filename)
        seen[path] = kind
        mtime = mtimes.get(path, 0)
        entry = Entry(path, (kind | (mode & 0o7777)) if _stat.S_IMODE(mode) else kind | 0o644,
                      mtime if isinstance(mtime, int) else 0, info.file_size, target)  # fmt: skip
        planned.append(_Planned(info, entry))
    for path in seen:  # every parent must be a directory, never a file
        parent = path.rpartition("/")[0]
        while parent:
            if seen.get(parent, _stat.S_IFDIR) != _stat.S_IFDIR:
                raise ArchiveError("a file stands where a directory is needed", PREFIX + parent)
            parent = parent.rpartition("/")[0]
    files = sum(1 for p in planned if _stat.S_IFMT(p.entry.mode) != _stat.S_IFDIR)
    if manifest.get("file_count") != files:
        raise ArchiveError(
            f"manifest says {manifest.get('file_count')} files, archive has {files}", MANIFEST
        )
    planned.sort(key=lambda p: p.entry.path.count("/"))
    return planned, manifest


class _Counted:
    """A member stream that refuses to yield more than its declared size."""

    def __init__(self, stream: IO[bytes], declared: int, name: str) -> None:
        self._stream = stream
        self._left = declared
        self._name = name

    def read(self, size: int = -1) -> bytes:
        block = self._stream.read(BLOCK if size < 0 else min(size, BLOCK))
        self._left -= len(block)
        if self._left < 0:
            raise ArchiveError("entry holds more than it declares", self._name)
        return block

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


def read_archive(
    target: ArchiveTarget,
    path: str | os.PathLike[str],
    *,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
) -> int:
    """Replace ``target``'s content with the archive at ``path``; return the file count.

    Every entry is checked first; a check or read that fails later (CRC,
    size lies) undoes the import, so the target is either the archive or
    exactly what it was.
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ArchiveError(f"not a readable ZIP archive: {exc}", os.fspath(path)) from None
    with archive:
        try:
            planned, _ = _plan(archive, limits)
        except (zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as exc:
            raise ArchiveError(f"corrupt archive: {exc}", os.fspath(path)) from None
        target.begin()
        try:
            for item in planned:
                if _stat.S_ISREG(item.entry.mode):
                    member = archive.open(item.info)
                    with _Counted(member, item.info.file_size, item.info.filename) as data:
                        target.add(item.entry, data)
                else:
                    target.add(item.entry, None)
        except (
            zipfile.BadZipFile,
            EOFError,
            RuntimeError,
            NotImplementedError,
            OSError,
            ValueError,
        ) as exc:
            target.abort()
            if isinstance(exc, FsError):
                raise
            raise ArchiveError(f"corrupt archive: {exc}", os.fspath(path)) from None
        except BaseException:
            target.abort()
            raise
        target.commit()
    return sum(1 for p in planned if not _stat.S_ISDIR(p.entry.mode))
