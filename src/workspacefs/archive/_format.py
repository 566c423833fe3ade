"""The workspace archive: one ZIP format that every backend exports and imports.

Layout::

    manifest.json          {"format": "workspacefs-archive", "version": 1 or 2,
                            "created_at": ISO-8601, "file_count": N, "total_bytes": B,
                            "mtimes": {name: ns, ...}, "sizes": {name: bytes, ...}}
    files/<name>           a regular file's bytes
    files/<name>           a symlink: its target as the bytes, S_IFLNK in the mode
    files/<name>/          a directory (so empty ones survive)

Each entry's Unix mode (file type and permission bits, so the exec bit) is
in the ZIP external attributes, as Info-ZIP writes them, so ``unzip`` on
Linux restores modes and symlinks too. ZIP times have a 2-second
resolution, so exact mtimes (ns) are in the manifest, and so are the sizes
of files, which bound what each entry may expand to.

Versions (the writer uses the lowest one that holds the tree, so archives
of ordinary trees stay readable by older releases):

* **1**: names are the paths (UTF-8); every symlink stays inside the workspace.
* **2**: names are escaped (``_names``): any name a tree holds, not UTF-8 or
  with a backslash, round-trips. Symlinks may lead out of the workspace when
  their target says so (a venv's ``bin/python -> /usr/bin/python3``); they
  are restored as links, never followed. Version 1 archives still import.

A link that reads as staying inside but leads out through other links (a
"hidden escape", see ``fs.link_reach``) is refused in every version, on
import and on export alike. Export runs every import check before it
publishes the archive, so an archive that was written can always be imported.

Export and import stream: file content moves in 1 MiB blocks, so neither
holds a second copy of the workspace in memory. What is known before a byte
moves is checked before a byte moves: export refuses files whose sizes pass
``max_total_bytes`` before it compresses anything (ZIP holds no holes: a
64 GiB sparse file would be 64 GiB to compress), and import refuses an
archive whose declared sizes do not fit the target (``ArchiveTarget.reserve``:
a workspace's free memory budget, a directory's free disk space) before it
writes anything.
"""

from __future__ import annotations

import errno
import json
import os
import stat as _stat
import zipfile
from datetime import UTC, datetime
from typing import IO

from .._errors import FsError, LimitExceededError, NoSpaceError
from ..posix import open_private_file
from ..tree import PATH_MAX
from ._names import needs_escaping
from ._plan import check_path, check_tree, member_key, plan
from ._types import (
    BLOCK,
    DEFAULT_ARCHIVE_LIMITS,
    FORMAT,
    MANIFEST,
    PREFIX,
    ArchiveError,
    ArchiveLimits,
    ArchiveSource,
    ArchiveTarget,
    Entry,
    symlink_target,
)


def _unix_attributes(mode: int) -> int:
    return (mode & 0xFFFF) << 16


def _checked_entries(source: ArchiveSource, limits: ArchiveLimits) -> tuple[list[Entry], int]:
    """The source's entries, checked as import will check them; and the version they need."""
    entries: list[Entry] = []
    seen: set[str] = set()
    escaping = False
    total = 0
    for entry in source.entries():
        kind = _stat.S_IFMT(entry.mode)
        if kind not in (_stat.S_IFREG, _stat.S_IFDIR, _stat.S_IFLNK):
            continue  # fifos, sockets and devices are not workspace content
        check_path(entry.path, entry.path)
        if entry.path in seen:
            raise ArchiveError("duplicate entry", entry.path)
        seen.add(entry.path)
        if kind == _stat.S_IFREG:
            total += entry.size
            _check_total(entry, total, limits)
        if kind == _stat.S_IFLNK:
            target = symlink_target(entry)
            raw = target.encode("utf-8", "surrogateescape")
            if not raw or b"\0" in raw or len(raw) > PATH_MAX:
                raise ArchiveError("symlink target is empty, too long or holds a NUL", entry.path)
        escaping = escaping or needs_escaping(entry.path)
        entries.append(entry)
        if len(entries) >= limits.max_entries:
            raise LimitExceededError(
                f"over {limits.max_entries:,} entries: an archive this large would be refused",
                entry.path,
            )
    links_out = check_tree(entries, 2)
    return entries, 2 if escaping or links_out else 1


def _check_total(entry: Entry, total: int, limits: ArchiveLimits) -> None:
    """Refuse, naming the file, once the files' sizes pass what import accepts."""
    if total <= limits.max_total_bytes:
        return
    files = "" if total == entry.size else f", which brings the files to {total:,} bytes"
    raise LimitExceededError(
        f"{entry.path} is {entry.size:,} bytes{files}, over the archive limit of "
        f"{limits.max_total_bytes:,} bytes (an archive holds no holes: a sparse file "
        "is stored at its full size)",
        entry.path,
    )


def write_archive(
    source: ArchiveSource,
    path: str | os.PathLike[str],
    *,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
) -> int:
    """Write ``source`` as an archive at ``path``; return the number of files.

    Anything ``read_archive`` with the same ``limits`` would refuse is refused
    here, before the archive is published: it appears at ``path`` complete and
    importable, or not at all.

    Raises:
        ArchiveError / PathEscapeError / LimitExceededError: What import would refuse.
    """
    entries, version = _checked_entries(source, limits)
    # As the seed's backends do: the archive's directory is made if missing (private).
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
    mtimes: dict[str, int] = {}
    sizes: dict[str, int] = {}
    files = total = 0
    temp = f"{os.fspath(path)}.partial"
    try:
        # 0600 whatever the umask: it holds every file of the workspace, whatever its mode.
        with (
            os.fdopen(open_private_file(temp), "w+b") as out_file,
            zipfile.ZipFile(out_file, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
        ):
            for entry in entries:
                key = member_key(entry.path, version)
                mtimes[key] = entry.mtime_ns
                kind = _stat.S_IFMT(entry.mode)
                name = PREFIX + key + ("/" if kind == _stat.S_IFDIR else "")
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
                else:
                    written = 0
                    with (
                        source.open(entry.path) as content,
                        archive.open(info, "w", force_zip64=True) as out,
                    ):
                        while block := content.read(BLOCK):
                            out.write(block)
                            written += len(block)
                            # A host file may grow after it was listed: checked as it comes.
                            _check_total(
                                Entry(entry.path, entry.mode, 0, written), total + written, limits
                            )
                    sizes[key] = written
                    total += written
                    files += 1
            manifest = {
                "format": FORMAT,
                "version": version,
                "created_at": datetime.now(UTC).isoformat(),
                "file_count": files,
                "total_bytes": total,
                "mtimes": mtimes,
                "sizes": sizes,
            }
            archive.writestr(MANIFEST, json.dumps(manifest, sort_keys=True))
        with zipfile.ZipFile(temp) as written_archive:
            plan(written_archive, limits)  # what import checks, on what was written
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return files


def _zip_time(mtime_ns: int) -> tuple[int, int, int, int, int, int]:
    # A ZIP header holds 1980 to 2107; the manifest keeps the exact time.
    moment = datetime.fromtimestamp(min(max(mtime_ns // 10**9, 315532800), 4354819198), UTC)
    return (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)


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
    exactly what it was. Entries reach the target parents first, in
    depth-first path order.
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ArchiveError(f"not a readable ZIP archive: {exc}", os.fspath(path)) from None
    with archive:
        try:
            planned, _ = plan(archive, limits)
        except (zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as exc:
            raise ArchiveError(f"corrupt archive: {exc}", os.fspath(path)) from None
        declared = sum(p.info.file_size for p in planned if _stat.S_ISREG(p.entry.mode))
        target.reserve(declared)
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
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise NoSpaceError(
                    f"no space left for the archive's files: {exc.strerror}", exc.filename
                ) from exc
            raise ArchiveError(f"corrupt archive: {exc}", os.fspath(path)) from None
        except BaseException:
            target.abort()
            raise
        target.commit()
    return sum(1 for p in planned if not _stat.S_ISDIR(p.entry.mode))
