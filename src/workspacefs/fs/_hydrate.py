"""Hydration: copy a host directory into the tree, inside allowed roots only.

The host is touched only through descriptors, with the rules ``HostFilesystem``
follows (one implementation: ``DirectoryBackend``, ``locate`` and the
``workspacefs.posix`` primitives): ``host_path`` is walked from an allowed root's
descriptor, following symlinks only while they stay inside that root; the
tree below is walked with ``walk_directory`` (a directory swapped for a
symlink is not entered) and each file is opened beneath the source with
``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` or its component walk.
Symlinks are copied when their target stays inside ``host_path`` as written,
and refused (the whole hydration, nothing changed) when their chain of links
would lead out anyway (``link_reach``). Setuid and setgid bits are dropped
unless ``HostMount.special_modes`` asks for them (``sanitised_mode``); a
directory keeps its sticky bit, and the copied directory its own mode.
"""

from __future__ import annotations

import errno
import os
import stat as _stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from .._errors import (
    InvalidArgumentError,
    LimitExceededError,
    NoSpaceError,
    NotFoundError,
    NotSupportedError,
    PathEscapeError,
)
from ..posix import (
    BLOCK,
    DIRECTORY_FLAGS,
    open_beneath,
    open_regular,
    same_object,
    walk_directory,
)
from ..tree import NAME_MAX, Tree
from ._backend import Kind
from ._directory import DirectoryBackend
from ._limits import Limits
from ._links import LinkReach, leaves_as_written, link_reach
from ._paths import normalize
from ._patterns import path_matcher
from ._resolve import locate

SPECIAL_BITS = _stat.S_ISUID | _stat.S_ISGID | _stat.S_ISVTX
"""Setuid, setgid and sticky: the bits copies from elsewhere lose unless asked."""
# Host paths follow POSIX limits, not the per-call protocol limits.
_HOST_LIMITS = Limits(max_path_depth=4096, max_segment_length=NAME_MAX)


@dataclass(frozen=True, slots=True)
class HostMount:
    """A host directory to copy into the workspace.

    Args:
        host_path: Directory (or file) on the host, absolute or relative to an
            allowed root.
        include_glob: Copy only files matching one of these (none: all).
            A pattern without ``/`` matches the name, one with ``/`` the path
            relative to ``host_path``.
        exclude_glob: Skip files matching one of these.
        mount_path: Where it appears in the workspace (default: ``host_path``
            if relative, else its last segment).
        max_bytes: Refuse the whole copy if the selected files exceed this.
        special_modes: Keep setuid, setgid and sticky bits (refused when
            running as root: the copies would be root's).
    """

    host_path: str
    include_glob: tuple[str, ...] = ()
    exclude_glob: tuple[str, ...] = ()
    mount_path: str | None = None
    max_bytes: int | None = None
    special_modes: bool = False


def host_path_candidates(
    host_path: str, allowed_roots: Sequence[str | os.PathLike[str]]
) -> list[tuple[str, str]]:
    """(allowed root, path relative to it) pairs ``host_path`` may name, checked as text.

    A relative path may lie in any root; an absolute one must be under one,
    as written or once its links are resolved (that only picks the root: the
    path itself is walked later through descriptors, from that root).
    """
    roots = [os.path.realpath(root) for root in allowed_roots]
    if not roots:
        raise PathEscapeError("no allowed host roots were given", host_path)
    if not os.path.isabs(host_path):
        return [(root, host_path) for root in roots]
    for candidate in (os.path.normpath(host_path), os.path.realpath(host_path)):
        for root in roots:
            if candidate == root or candidate.startswith(root.rstrip("/") + "/"):
                return [(root, candidate[len(root) :].lstrip("/"))]
    raise PathEscapeError("host path is outside the allowed roots", host_path)


def _located(candidates: list[tuple[str, str]], shown: str) -> tuple[DirectoryBackend, int, str]:
    """(backend of the root, descriptor, file name or "") of the first candidate that exists:
    the directory itself, or the directory holding the file.

    Raises:
        PathEscapeError: ``..`` or a symlink would leave the root.
        NotFoundError: No root holds it.
    """
    for root, relative in candidates:
        path = normalize(relative, None, _HOST_LIMITS)
        backend = DirectoryBackend(root)
        with locate(backend, path) as at:
            entry = at.entry
            if entry is not None and entry.kind is Kind.DIRECTORY:
                return backend, backend.enter(at.parent, at.name, entry), ""
            if entry is not None and entry.kind is Kind.FILE:
                return backend, os.open(".", os.O_PATH | os.O_CLOEXEC, dir_fd=at.parent), at.name
        backend.close()
    raise NotFoundError("host path does not exist", shown)


@dataclass(frozen=True, slots=True)
class _Item:
    path: str  # relative to host_path ("" for a single file)
    info: os.stat_result
    target: str | None = None


def _plan(source: int, mount: HostMount) -> tuple[list[_Item], list[_Item]]:
    """(directories, selected files and symlinks) below the directory ``source``."""
    include = [path_matcher(p) for p in mount.include_glob]
    exclude = [path_matcher(p) for p in mount.exclude_glob]
    directories: list[_Item] = []
    chosen: list[_Item] = []
    for walked in walk_directory(source):
        mode = walked.info.st_mode
        if _stat.S_ISDIR(mode):
            directories.append(_Item(walked.path, walked.info))
            continue
        if not (_stat.S_ISREG(mode) or _stat.S_ISLNK(mode)):
            continue
        if include and not any(match(walked.path) for match in include):
            continue
        if any(match(walked.path) for match in exclude):
            continue
        if _stat.S_ISLNK(mode):
            try:
                target = os.readlink(walked.name, dir_fd=walked.parent)
            except OSError:
                continue
            if leaves_as_written(walked.path, target):
                continue  # points outside host_path: not copied
            chosen.append(_Item(walked.path, walked.info, target))
        else:
            chosen.append(_Item(walked.path, walked.info))
    return directories, chosen


def _refuse_hidden_escapes(chosen: list[_Item]) -> None:
    """Judge each copied link against the tree being built (see ``link_reach``)."""
    built: dict[str, tuple[Kind, str | None]] = {}
    for item in chosen:
        kind = Kind.SYMLINK if item.target is not None else Kind.FILE
        built[item.path] = (kind, item.target)
        parent = item.path.rpartition("/")[0]
        while parent and parent not in built:
            built[parent] = (Kind.DIRECTORY, None)
            parent = parent.rpartition("/")[0]
    for item in chosen:
        if item.target is None:
            continue
        if link_reach(item.path, item.target, built.get) is not LinkReach.INSIDE:
            raise PathEscapeError(
                "symlink reads as staying inside but its chain of links leads outside",
                item.path,
            )


def hydrate(
    tree: Tree,
    mount: HostMount,
    allowed_roots: Sequence[str | os.PathLike[str]],
    normalize_path: Callable[[str], str],
    owner: tuple[int, int],
) -> int:
    """Copy ``mount`` into ``tree`` (caller holds the lock and undoes on error); the count.

    Nothing is copied if the selection exceeds ``max_bytes``, or if a copied
    symlink's chain of links would lead outside ``host_path``.
    """
    if mount.special_modes and os.geteuid() == 0:
        raise InvalidArgumentError("special modes of host files are never kept as root", None)
    candidates = host_path_candidates(mount.host_path, allowed_roots)
    backend, handle, single = _located(candidates, mount.host_path)
    try:
        source_name = os.path.basename(os.path.normpath(mount.host_path))
        default = mount.host_path if not os.path.isabs(mount.host_path) else source_name
        destination = normalize_path(mount.mount_path if mount.mount_path is not None else default)
        source = handle
        directories: list[_Item] = []
        if single:
            chosen = [_Item("", os.stat(single, dir_fd=handle, follow_symlinks=False))]
        else:
            directories, chosen = _plan(source, mount)
        _refuse_hidden_escapes(chosen)
        total = sum(item.info.st_size for item in chosen if item.target is None)
        if mount.max_bytes is not None and total > mount.max_bytes:
            raise LimitExceededError(
                f"host files total {total:,} bytes, over max_bytes {mount.max_bytes:,}",
                mount.host_path,
            )
        _reserve(tree, chosen, mount.host_path)
        budget = mount.max_bytes
        for item in chosen:
            target_path = f"{destination}/{item.path}".strip("/") if item.path else destination
            parent_path, _, name = target_path.rpartition("/")
            parent = tree.make_dirs(parent_path, 0o755, *owner)
            if item.target is not None:
                tree.symlink(parent, name, item.target, *owner)
                continue
            copied = _copy_file(tree, parent, name, source, item, single, mount, owner, budget)
            if budget is not None:
                budget -= copied
        if not single:  # last: adding entries touched their times
            top = _Item("", os.fstat(source))  # the directory itself: --from DIR's root
            _copy_directory_attributes(tree, destination, [*directories, top], mount)
    finally:
        os.close(handle)
        backend.close()
    return len(chosen)


def _copy_directory_attributes(
    tree: Tree, destination: str, directories: list[_Item], mount: HostMount
) -> None:
    """Give the directories copied to ``destination`` their host modes and mtimes."""
    for item in directories:
        ino = tree.resolve_path(f"{destination}/{item.path}".strip("/"))
        if ino is not None:
            mode = sanitised_mode(item.info.st_mode, mount.special_modes)
            tree.setattr(ino, mode=_stat.S_IMODE(mode), mtime_ns=item.info.st_mtime_ns)


def _reserve(tree: Tree, chosen: list[_Item], shown: str) -> None:
    """Refuse (ENOSPC) before copying anything if the files' data cannot fit in what
    the budget has free. Data, not sizes: holes are not copied (``_data_blocks``), so
    a file counts its allocated blocks, at most its size. The transaction keeps what
    the copies replace until it ends, hence the free part. The budget's own check of
    each write stays the safety net (a host file may grow meanwhile)."""
    budget = tree.budget
    if budget.limit is None:
        return
    data = sum(
        min(item.info.st_size, item.info.st_blocks * 512) for item in chosen if item.target is None
    )
    free = budget.free or 0
    if data > free:
        raise NoSpaceError(
            f"host files hold {data:,} bytes of data, more than the workspace's memory "
            f"budget has free ({free:,} of {budget.limit:,} bytes)",
            shown,
        )


def sanitised_mode(mode: int, keep_special: bool) -> int:
    """``mode`` as a copy from elsewhere (a host directory, an archive, a repository)
    takes it: without setuid and setgid, and without a file's sticky bit, unless
    ``keep_special``.

    A directory's sticky bit stays: it only takes rights away (only an entry's
    owner may remove or rename it), and without it a world-writable directory
    such as ``/dev/shm`` (1777) would let anyone delete anyone's files.
    """
    if keep_special:
        return mode
    if _stat.S_ISDIR(mode):
        return mode & ~(_stat.S_ISUID | _stat.S_ISGID)
    return mode & ~SPECIAL_BITS


def _copy_file(
    tree: Tree,
    parent: int,
    name: str,
    source: int,
    item: _Item,
    single: str,
    mount: HostMount,
    owner: tuple[int, int],
    budget: int | None,
) -> int:
    """Stream one host file into the tree; the bytes copied."""
    if single:
        fd = open_regular(source, single)
    else:
        folder_path, _, file_name = item.path.rpartition("/")
        folder = open_beneath(source, folder_path, DIRECTORY_FLAGS)
        try:
            fd = open_regular(folder, file_name)
        finally:
            os.close(folder)
    info = os.fstat(fd)
    if not same_object(info, item.info):
        os.close(fd)
        raise NotFoundError("host file replaced during hydration", item.path or mount.host_path)
    existing = tree.directory(parent).entries.get(name)
    ino = existing if existing is not None else tree.create(parent, name, 0o644, *owner)
    tree.truncate(ino, 0)
    copied = 0
    try:
        shown = os.path.join(mount.host_path, item.path) if item.path else mount.host_path
        for offset, block in _data_blocks(fd, info.st_size, shown):
            copied += len(block)
            if budget is not None and copied > budget:
                raise LimitExceededError(
                    f"host files grew past max_bytes {mount.max_bytes:,}", mount.host_path
                )
            tree.write(ino, offset, block)
        tree.truncate(ino, max(info.st_size, tree.node(ino).size))  # a trailing hole
    finally:
        os.close(fd)
    mode = sanitised_mode(info.st_mode, mount.special_modes)
    tree.setattr(ino, mode=_stat.S_IMODE(mode), mtime_ns=info.st_mtime_ns)
    return copied


def _data_blocks(fd: int, size: int, shown: str) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of a file's data in blocks, skipping its holes (SEEK_DATA/SEEK_HOLE),
    so a sparse host file stays sparse in the tree and costs only its data.

    Exactly ``size`` bytes, the size the file had when it was opened: a file
    whose data does not end there is refused, not copied short or padded. That
    is a pseudo file, whose size says nothing of what it yields (most of /proc
    says 0 and yields data, /proc/self/pagemap without end; /sys says 4096 and
    yields a line), or one written while it was copied.

    Raises:
        NotSupportedError: The file does not hold ``size`` bytes.
    """
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data past offset: the rest is a hole
                break
            start, end = offset, size  # no hole support: read it all
        while start < end:
            block = os.pread(fd, min(BLOCK, end - start), start)
            if not block:
                raise _size_disagrees(size, shown)
            yield start, block
            start += len(block)
        offset = max(end, offset + 1)
    try:
        more = os.pread(fd, _PROBE, size)
    except OSError as exc:  # /proc/self/pagemap reads only in steps of 8
        raise _size_disagrees(size, shown) from exc
    if more:
        raise _size_disagrees(size, shown)


_PROBE = 4096
"""Bytes asked for past a file's size, to tell that it ends there."""


def _size_disagrees(size: int, shown: str) -> NotSupportedError:
    return NotSupportedError(
        f"host file does not hold the {size:,} bytes its size says: a pseudo file "
        "(as in /proc or /sys) or one written while copied; nothing was copied",
        shown,
    )
