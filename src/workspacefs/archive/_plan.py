"""Every check an archive passes before anything is imported, in one place.

Import runs ``plan`` on the archive it reads; export runs the same checks on
the entries it is about to write, and ``plan`` again on the written file
before publishing it, so an archive that was written can always be imported.
"""

from __future__ import annotations

import json
import stat as _stat
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._errors import FsError, InvalidContentError, LimitExceededError, PathEscapeError
from ..fs import Kind, Limits, LinkReach, link_reach, normalize_path, recorded_time
from ..tree import NAME_MAX, PATH_MAX
from ._names import escape, unescape
from ._types import (
    BLOCK,
    FORMAT,
    MANIFEST,
    PREFIX,
    SEED_VERSION,
    VERSIONS,
    ArchiveError,
    ArchiveLimits,
    Entry,
)

# Archive paths follow POSIX limits, not the per-call protocol limits.
_PATH_LIMITS = Limits(max_path_depth=2048, max_segment_length=NAME_MAX)
_KINDS = {_stat.S_IFREG: Kind.FILE, _stat.S_IFDIR: Kind.DIRECTORY, _stat.S_IFLNK: Kind.SYMLINK}


@dataclass(frozen=True, slots=True)
class Planned:
    """One checked entry: the ZIP member and what it becomes."""

    info: zipfile.ZipInfo
    entry: Entry


def member_key(path: str, version: int) -> str:
    """How the manifest's maps and the ZIP member (after ``files/``) name a path."""
    return escape(path) if version >= 2 else path


def check_path(path: str, shown: str) -> str:
    """``path`` if it is a normalised relative path within POSIX limits."""
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in path.split("/")):
        raise PathEscapeError("entry path is absolute or leaves the workspace", shown)
    if "\0" in path:
        raise ArchiveError("entry path holds a NUL byte", shown)
    try:
        normalize_path(path, None, _PATH_LIMITS)
    except FsError as exc:
        raise ArchiveError(f"bad entry path: {exc.strerror}", shown) from None
    if any(len(part.encode("utf-8", "surrogateescape")) > NAME_MAX for part in path.split("/")):
        raise ArchiveError(f"a name is longer than {NAME_MAX} bytes", shown)
    return path


def check_tree(entries: Iterable[Entry], version: int) -> bool:
    """Check entries as a whole: parents are directories, links lead nowhere hidden.

    Returns True if a link leads out of the workspace, and says so (which
    needs version 2; version 1 refuses it).

    Raises:
        ArchiveError: A file stands where a directory is needed.
        PathEscapeError: A link hides an escape (or, in version 1, leaves at all).
    """
    tree: dict[str, tuple[Kind, str | None]] = {}
    for entry in entries:
        tree[entry.path] = (_KINDS[_stat.S_IFMT(entry.mode)], entry.target)
    for path in tree:
        parent = path.rpartition("/")[0]
        while parent:
            if tree.get(parent, (Kind.DIRECTORY, None))[0] is not Kind.DIRECTORY:
                raise ArchiveError("a file stands where a directory is needed", PREFIX + parent)
            parent = parent.rpartition("/")[0]
    out = False
    for path, (kind, target) in tree.items():
        if kind is not Kind.SYMLINK or target is None:
            continue
        reach = link_reach(path, target, tree.get)
        if reach is LinkReach.HIDDEN_ESCAPE:
            raise PathEscapeError(
                "symlink reads as staying inside but its chain of links leads outside",
                PREFIX + path,
            )
        if reach is LinkReach.DECLARED_OUT:
            if version < 2:
                raise PathEscapeError("symlink points outside the workspace", PREFIX + path)
            out = True
    return out


def read_manifest(archive: zipfile.ZipFile, limits: ArchiveLimits) -> dict[str, Any]:
    """The manifest, checked for what every version has."""
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
    if not isinstance(manifest, dict):
        raise ArchiveError("manifest.json does not describe a workspace archive", MANIFEST)
    if "format" not in manifest and manifest.get("version") == SEED_VERSION:
        # Seed 003's archives ("pure data": no format marker, no modes or times) read as
        # version 1, whose names are the paths, as theirs are.
        return {**manifest, "version": 1}
    if manifest.get("format") != FORMAT:
        raise ArchiveError("manifest.json does not describe a workspace archive", MANIFEST)
    if manifest.get("version") not in VERSIONS:
        raise ArchiveError(f"unsupported archive version {manifest.get('version')!r}", MANIFEST)
    for key in ("mtimes", "sizes"):
        if not isinstance(manifest.get(key, {}), dict):
            raise ArchiveError(f"manifest.json: {key} must be an object", MANIFEST)
    return manifest


def _entry_path(info: zipfile.ZipInfo, version: int) -> tuple[str, str]:
    """(path, manifest key) of a member."""
    if not info.flag_bits & 0x800 and not info.orig_filename.isascii():
        raise ArchiveError("entry name is not UTF-8", repr(info.orig_filename))
    if not info.filename.startswith(PREFIX):
        raise ArchiveError("entry outside files/", info.filename)
    key = info.filename[len(PREFIX) :]
    key = key[:-1] if key.endswith("/") else key
    try:
        path = unescape(key) if version >= 2 else key
    except InvalidContentError:
        raise ArchiveError("entry name is not in its escaped form", info.filename) from None
    return check_path(path, info.filename), key


def _mode(info: zipfile.ZipInfo, foreign: bool) -> int:
    mode = info.external_attr >> 16
    kind = _stat.S_IFMT(mode) or (_stat.S_IFDIR if info.is_dir() else _stat.S_IFREG)
    if info.is_dir() != (kind == _stat.S_IFDIR):
        raise ArchiveError("entry type and name disagree", info.filename)
    if kind not in _KINDS:
        raise ArchiveError("only files, directories and symlinks are allowed", info.filename)
    # No Unix attributes at all; or a seed 003 archive's entry without a file type,
    # whose bits are only what Python's ``writestr`` puts on every entry (0o600).
    if not _stat.S_IFMT(mode) and (foreign or not _stat.S_IMODE(mode)):
        return kind | (0o755 if kind == _stat.S_IFDIR else 0o644)
    return kind | _stat.S_IMODE(mode)


def _zip_mtime(info: zipfile.ZipInfo) -> int:
    """The member's ZIP header time (local time, 2-second steps) in ns since the epoch."""
    try:
        return int(time.mktime((*info.date_time, 0, 0, -1))) * 10**9
    except (OverflowError, ValueError):
        return 0


def plan(archive: zipfile.ZipFile, limits: ArchiveLimits) -> tuple[list[Planned], dict[str, Any]]:
    """Check every entry before anything is written; entries in depth-first path order."""
    infos = archive.infolist()
    if len(infos) > limits.max_entries:
        raise ArchiveError(
            f"{len(infos):,} entries, over the limit of {limits.max_entries:,}", None
        )
    manifest = read_manifest(archive, limits)
    version: int = manifest["version"]
    mtimes: dict[str, Any] = manifest.get("mtimes", {})
    sizes: dict[str, Any] = manifest.get("sizes", {})
    foreign = "format" not in manifest  # seed 003's (``read_manifest`` refuses others)
    declared = 0
    planned: dict[str, Planned] = {}
    for info in infos:
        if info.filename == MANIFEST:
            continue
        path, key = _entry_path(info, version)
        if path in planned:
            raise ArchiveError("duplicate entry", info.filename)
        mode = _mode(info, foreign)
        declared += info.file_size
        if declared > limits.max_total_bytes:
            raise LimitExceededError(
                f"archive expands past {limits.max_total_bytes:,} bytes", info.filename
            )
        # Expansion is bounded by the declared sizes (each member is read no further
        # than its size): the ratio test only guards members whose size nothing vouches for.
        vouched = _stat.S_ISREG(mode) and sizes.get(key) == info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if not vouched and info.file_size > BLOCK and ratio > limits.max_ratio:
            raise LimitExceededError(
                f"compression ratio over {limits.max_ratio}: a zip bomb?", info.filename
            )
        target = None
        if _stat.S_ISLNK(mode):
            if info.file_size > PATH_MAX:
                raise ArchiveError("symlink target too long", info.filename)
            target = archive.read(info).decode("utf-8", "surrogateescape")
            if not target or "\0" in target:
                raise ArchiveError("symlink target is empty or holds a NUL byte", info.filename)
        mtime = mtimes.get(key, _zip_mtime(info) if foreign else 0)
        mtime = recorded_time(mtime, "mtime") if type(mtime) is int else 0
        planned[path] = Planned(info, Entry(path, mode, mtime, info.file_size, target))
    check_tree((p.entry for p in planned.values()), version)
    files = sum(1 for p in planned.values() if not _stat.S_ISDIR(p.entry.mode))
    if manifest.get("file_count") != files:
        raise ArchiveError(
            f"manifest says {manifest.get('file_count')} files, archive has {files}", MANIFEST
        )
    ordered = sorted(planned.values(), key=lambda p: p.entry.path.split("/"))
    return ordered, manifest
