"""Three states of a workspace for merge tests, and digests of what a workspace holds.

A ``State`` maps a path to its content, ``("x", content)`` for an executable
file, ``("m", mode, content)`` for a file of another mode, or ``("l", target)``
for a symlink. ``three_way`` builds base, ours and theirs as a workspace (ours)
and a fork of its base (theirs). The digests cover every path, its full mode,
its content or target, and its times: equal digests mean nothing changed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from workspacefs import InMemoryFilesystem

Entry = bytes | tuple[str, bytes] | tuple[str, int, bytes]
State = dict[str, Entry]


def _parts(value: Entry) -> tuple[str, int, bytes]:
    if isinstance(value, bytes):
        return "f", 0o644, value
    if len(value) == 3:
        kind, mode, data = value
        return kind, mode, data
    kind, data = value
    return kind, 0o755 if kind == "x" else 0o644, data


def fill(fs: InMemoryFilesystem, state: State) -> None:
    """Make the workspace hold exactly ``state``, changing only what differs (so a
    merge sees only those paths changed)."""
    now = contents(fs)
    wanted_dirs = {"/".join(p.split("/")[:i]) for p in state for i in range(1, p.count("/") + 1)}
    with fs.transaction() as tree:
        for path in sorted(set(now) - set(state), reverse=True):
            parent_path, _, name = path.rpartition("/")
            tree.unlink(tree.resolve_path(parent_path) or 1, name)
        dirs = [p for p, _, node in tree.walk() if stat.S_ISDIR(node.mode)]
        for path in sorted(dirs, reverse=True):
            if path not in wanted_dirs:
                parent_path, _, name = path.rpartition("/")
                ino = tree.resolve_path(path)
                if ino is not None:
                    tree.empty(ino)
                    tree.rmdir(tree.resolve_path(parent_path) or 1, name)
        for path, value in state.items():
            if now.get(path) == value or contents_equal(now.get(path), value):
                continue
            kind, mode, data = _parts(value)
            parent_path, _, name = path.rpartition("/")
            parent = tree.make_dirs(parent_path)
            if tree.find(parent, name) is not None:
                tree.unlink(parent, name)
            if kind == "l":
                tree.symlink(parent, name, data.decode())
            else:
                ino = tree.create(parent, name, mode)
                tree.write(ino, 0, data)


def contents_equal(a: Entry | None, b: Entry) -> bool:
    """True if two entries hold the same kind, mode and data."""
    return a is not None and _parts(a) == _parts(b)


def contents(fs: InMemoryFilesystem) -> State:
    """What the workspace holds, as a ``State`` (modes other than 644 and 755 spelt out)."""
    out: State = {}
    tree = fs.tree
    with tree.lock:
        for path, ino, node in tree.walk():
            if stat.S_ISLNK(node.mode):
                out[path] = ("l", tree.readlink(ino).encode())
            elif stat.S_ISREG(node.mode):
                data = tree.read(ino, 0, node.size)
                mode = stat.S_IMODE(node.mode)
                if mode == 0o644:
                    out[path] = data
                else:
                    out[path] = ("x", data) if mode == 0o755 else ("m", mode, data)
    return out


def three_way(
    base: State, ours: State, theirs: State
) -> tuple[InMemoryFilesystem, InMemoryFilesystem]:
    """(the workspace holding ``ours``, a fork of its ``base`` holding ``theirs``)."""
    workspace = InMemoryFilesystem()
    fill(workspace, base)
    fork = workspace.fork()
    fill(workspace, ours)
    fill(fork, theirs)
    return workspace, fork


def digest(fs: InMemoryFilesystem) -> str:
    """Every path of the workspace with its mode, content (or target) and times."""
    hasher = hashlib.sha256()
    tree = fs.tree
    with tree.lock:
        for path, ino, node in sorted(tree.walk(), key=lambda item: item[0]):
            times = (node.mtime_ns, node.ctime_ns)
            hasher.update(f"{path}\0{node.mode:o}\0{times}\0".encode("utf-8", "surrogateescape"))
            if stat.S_ISREG(node.mode):
                hasher.update(tree.read(ino, 0, node.size))
            elif stat.S_ISLNK(node.mode):
                hasher.update(tree.readlink(ino).encode("utf-8", "surrogateescape"))
    return hasher.hexdigest()


def directory_digest(root: Path) -> str:
    """Every path under ``root`` (a mount) with its mode, content (or target) and mtime."""
    hasher = hashlib.sha256()
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted([*dirs, *files]):
            path = os.path.join(directory, name)
            info = os.lstat(path)
            relative = os.path.relpath(path, root)
            hasher.update(f"{relative}\0{info.st_mode:o}\0{info.st_mtime_ns}\0".encode())
            if stat.S_ISREG(info.st_mode):
                hasher.update(Path(path).read_bytes())
            elif stat.S_ISLNK(info.st_mode):
                hasher.update(os.readlink(path).encode())
    return hasher.hexdigest()
