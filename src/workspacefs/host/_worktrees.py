"""Linked worktrees of the shadow provider, made and removed through descriptors.

A worktree is written by hand (libgit2 attaches worktrees only to
``refs/heads`` branches, which belong to the user): an admin directory in the
store's ``worktrees/``, a ``.git`` file in the new directory pointing at it,
the commit's files written one by one beneath the new directory's descriptor
(a directory swapped for a symlink meanwhile is replaced, never written
through), and an index with their stat data.

Removal trusts nothing it reads back: the admin directory's ``gitdir``
record names a directory, which is removed only if it is a real directory
whose ``.git`` file points back at that admin directory.
"""

from __future__ import annotations

import contextlib
import os

import pygit2
from pygit2.enums import FilterMode

from .._errors import AlreadyExistsError
from ..git import MODE_EXECUTABLE, MODE_LINK, decode_name, read_blob
from ..posix import (
    DIRECTORY_FLAGS,
    make_directories,
    open_directory,
    open_regular,
    remove_entry,
    replace_file,
    replace_symlink,
    scan_directory,
)
from ._index import IndexEntry, index_entry, write_index
from ._snapshots import tree_files

GITLINK = 0o160000


def smudged(repo: pygit2.Repository, path: str, data: bytes) -> bytes:
    """A blob's bytes as a checkout writes them (``.gitattributes`` filters applied)."""
    filters = repo.load_filter_list(path, FilterMode.TO_WORKTREE)
    return data if filters is None else bytes(filters.apply_to_buffer(data))


def write_file(
    repo: pygit2.Repository,
    root: int,
    path: str,
    mode: int,
    oid: pygit2.Oid,
    *,
    read_only: bool = False,
) -> os.stat_result:
    """Write one tree entry at ``path`` beneath ``root``, replacing whatever stands there."""
    parent, _, name = path.rpartition("/")
    directory = make_directories(root, parent, replace=True)
    try:
        data = read_blob(repo.odb, oid)
        if mode == MODE_LINK:
            return replace_symlink(directory, name, decode_name(data))
        permissions = 0o755 if mode == MODE_EXECUTABLE else 0o644
        if read_only:
            permissions &= ~0o222
        return replace_file(directory, name, smudged(repo, path, data), mode=permissions)
    finally:
        os.close(directory)


def _write_text(directory: int, name: str, text: str) -> None:
    replace_file(directory, name, text.encode(), mode=0o644)


def add_worktree(
    store: pygit2.Repository,
    name: str,
    path: str,
    head: str,
    commit: pygit2.Commit,
    *,
    read_only: bool = False,
) -> str:
    """A linked worktree at the new directory ``path`` whose HEAD is ``head``."""
    admin = os.path.join(store.path, "worktrees", name)
    if os.path.lexists(admin):
        raise AlreadyExistsError("worktree already exists", path)
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    parent = os.open(os.path.dirname(path), DIRECTORY_FLAGS)
    try:
        try:
            os.mkdir(os.path.basename(path), 0o755, dir_fd=parent)
        except FileExistsError:
            raise AlreadyExistsError("worktree already exists", path) from None
        top = open_directory(parent, os.path.basename(path))
    finally:
        os.close(parent)
    try:
        store_fd = os.open(store.path, DIRECTORY_FLAGS)
        try:
            worktrees = make_directories(store_fd, "worktrees")
        finally:
            os.close(store_fd)
        try:
            os.mkdir(name, 0o755, dir_fd=worktrees)
            admin_fd = open_directory(worktrees, name)
        finally:
            os.close(worktrees)
        try:
            _write_text(admin_fd, "gitdir", os.path.join(path, ".git") + "\n")
            _write_text(admin_fd, "commondir", "../..\n")
            _write_text(admin_fd, "HEAD", head + "\n")
            if read_only:
                _write_text(admin_fd, "locked", "workspacefs read-only seek\n")
        finally:
            os.close(admin_fd)
        _write_text(top, ".git", f"gitdir: {admin}\n")
        worktree = pygit2.Repository(path)
        entries: list[IndexEntry] = []
        for file, (mode, oid) in sorted(tree_files(store.odb, commit.tree_id).items()):
            if mode == GITLINK:
                continue
            info = write_file(worktree, top, file, mode, oid, read_only=read_only)
            entries.append(index_entry(file, mode, oid, info))
        write_index(os.path.join(admin, "index"), entries)
    finally:
        os.close(top)
    return path


def _points_back(path: str, admin: str) -> bool:
    """True if ``path`` is a real directory whose ``.git`` file names ``admin``."""
    with contextlib.ExitStack() as stack:
        try:
            parent = os.open(os.path.dirname(path), DIRECTORY_FLAGS)
            stack.callback(os.close, parent)
            top = open_directory(parent, os.path.basename(path))
            stack.callback(os.close, top)
            fd = open_regular(top, ".git")
        except OSError:
            return False
        with os.fdopen(fd, "rb") as handle:
            content = handle.read(1 << 16)
    return content.strip() == f"gitdir: {admin}".encode("utf-8", "surrogateescape")


def remove_worktrees(store: pygit2.Repository, prefix: str) -> None:
    """Remove the worktrees whose admin directories start with ``prefix``, and those."""
    root = os.path.join(store.path, "worktrees")
    try:
        worktrees = os.open(root, DIRECTORY_FLAGS)
    except OSError:
        return
    try:
        for name, _ in scan_directory(worktrees):
            if not name.startswith(prefix):
                continue
            admin = os.path.join(root, name)
            recorded = _read_record(worktrees, name)
            if recorded is not None:
                path = os.path.dirname(recorded)
                if _points_back(path, admin):
                    parent = os.open(os.path.dirname(path), DIRECTORY_FLAGS)
                    try:
                        remove_entry(parent, os.path.basename(path))
                    finally:
                        os.close(parent)
            remove_entry(worktrees, name)
    finally:
        os.close(worktrees)


def _read_record(worktrees: int, name: str) -> str | None:
    """The ``gitdir`` file of an admin directory (data, checked before any use)."""
    try:
        admin = open_directory(worktrees, name)
    except OSError:
        return None
    try:
        fd = open_regular(admin, "gitdir")
    except OSError:
        return None
    finally:
        os.close(admin)
    with os.fdopen(fd, "rb") as handle:
        text = handle.read(1 << 16).decode("utf-8", "surrogateescape").strip()
    return text if os.path.isabs(text) else None
