"""Hydration: copy a host directory into the tree, inside allowed roots only."""

from __future__ import annotations

import os
import stat as _stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._errors import (
    LimitExceededError,
    NotFoundError,
    PathEscapeError,
)
from ..tree import Tree
from ._patterns import path_matcher


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
    """

    host_path: str
    include_glob: tuple[str, ...] = ()
    exclude_glob: tuple[str, ...] = ()
    mount_path: str | None = None
    max_bytes: int | None = None


def resolve_host_path(host_path: str, allowed_roots: Sequence[str | os.PathLike[str]]) -> str:
    """The real path of ``host_path`` if it lies inside an allowed root."""
    roots = [os.path.realpath(root) for root in allowed_roots]
    if not roots:
        raise PathEscapeError("no allowed host roots were given", host_path)
    candidates = (
        [os.path.realpath(host_path)]
        if os.path.isabs(host_path)
        else [os.path.realpath(os.path.join(root, host_path)) for root in roots]
    )
    inside_any = False
    for candidate in candidates:
        if any(candidate == root or candidate.startswith(root + os.sep) for root in roots):
            inside_any = True
            if os.path.lexists(candidate):
                return candidate
    if not inside_any:
        raise PathEscapeError("host path is outside the allowed roots", host_path)
    raise NotFoundError("host path does not exist", host_path)


def _selected(
    relative: str, include: list[Callable[[str], bool]], exclude: list[Callable[[str], bool]]
) -> bool:
    if include and not any(match(relative) for match in include):
        return False
    return not any(match(relative) for match in exclude)


def _plan(source: str, mount: HostMount) -> list[tuple[str, os.stat_result]]:
    """(relative path, lstat) of everything to copy, directories first."""
    include = [path_matcher(p) for p in mount.include_glob]
    exclude = [path_matcher(p) for p in mount.exclude_glob]
    if not os.path.isdir(source):
        return [("", os.lstat(source))]
    plan: list[tuple[str, os.stat_result]] = []
    for top, dirs, files in os.walk(source):
        dirs.sort()
        base = os.path.relpath(top, source)
        base = "" if base == "." else base
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            relative = f"{base}/{name}" if base else name
            if _selected(relative, include, exclude):
                plan.append((relative, os.lstat(os.path.join(top, name))))
    return plan


def _link_stays_inside(source: str, relative: str, target: str) -> bool:
    if os.path.isabs(target):
        return False
    resolved = os.path.normpath(os.path.join(source, os.path.dirname(relative), target))
    return resolved == source or resolved.startswith(source + os.sep)


def hydrate(
    tree: Tree,
    mount: HostMount,
    allowed_roots: Sequence[str | os.PathLike[str]],
    normalize: Callable[[str], str],
    owner: tuple[int, int],
) -> int:
    """Copy ``mount`` into ``tree`` (caller holds the lock); return the file count.

    Symlinks are copied only when their target stays inside ``host_path``;
    file contents are read with ``O_NOFOLLOW``. Nothing is copied if the
    selection exceeds ``max_bytes``.
    """
    source = resolve_host_path(mount.host_path, allowed_roots)
    default = mount.host_path if not os.path.isabs(mount.host_path) else os.path.basename(source)
    destination = normalize(mount.mount_path if mount.mount_path is not None else default)
    plan = _plan(source, mount)
    if mount.max_bytes is not None:
        total = sum(st.st_size for _, st in plan if _stat.S_ISREG(st.st_mode))
        if total > mount.max_bytes:
            raise LimitExceededError(
                f"host files total {total:,} bytes, over max_bytes {mount.max_bytes:,}",
                mount.host_path,
            )
    copied = 0
    for relative, st in plan:
        full = os.path.join(source, relative) if relative else source
        target_path = f"{destination}/{relative}".strip("/") if relative else destination
        parent_path, _, name = target_path.rpartition("/")
        if _stat.S_ISLNK(st.st_mode):
            link = os.readlink(full)
            if not _link_stays_inside(source, relative, link):
                continue
            parent = tree.make_dirs(parent_path, 0o755, *owner)
            tree.symlink(parent, name, link, *owner)
        elif _stat.S_ISREG(st.st_mode):
            parent = tree.make_dirs(parent_path, 0o755, *owner)
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as handle:
                data = handle.read()
            existing = tree.directory(parent).entries.get(name)
            ino = existing if existing is not None else tree.create(parent, name, 0o644, *owner)
            tree.truncate(ino, 0)
            tree.write(ino, 0, data)
            tree.setattr(ino, mode=st.st_mode & 0o777, mtime_ns=st.st_mtime_ns)
        else:
            continue
        copied += 1
    return copied
