"""A comparable picture of a directory tree: what a user of it could observe."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

Entry = tuple[str, int, int, str]  # kind, permission bits, size, content digest or link target


def tree_state(root: Path, *, ignore: tuple[str, ...] = ()) -> dict[str, Entry]:
    """Every path below ``root`` with its kind, mode bits, size and content."""
    state: dict[str, Entry] = {}
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            full = os.path.join(top, name)
            relative = os.path.relpath(full, root)
            if any(relative == skip or relative.startswith(skip + "/") for skip in ignore):
                continue
            info = os.lstat(full)
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                state[relative] = ("link", mode, 0, os.readlink(full))
            elif stat.S_ISDIR(info.st_mode):
                state[relative] = ("dir", mode, 0, "")
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
                state[relative] = ("file", mode, info.st_size, digest)
            else:
                state[relative] = ("special", mode, 0, stat.filemode(info.st_mode))
    return state
