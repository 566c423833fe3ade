"""File trees as workloads on a mount see them: path -> bytes, a directory or a link;
read from a mount and compared with a recorded step, a path the next step writes
allowed midway."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .history import Step


@dataclass(frozen=True, slots=True)
class Directory:
    """A directory (its entries are paths of their own)."""


@dataclass(frozen=True, slots=True)
class Link:
    """A symbolic link."""

    target: str


Entry = bytes | Directory | Link
Files = dict[str, Entry]
"""A file tree: relative path -> what is there."""

DIRECTORY = Directory()


def read_files(root: Path) -> Files:
    """Every path under ``root``, as it serves it."""
    found: Files = {}
    for directory, names, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        for name in names + files:
            path = os.path.normpath(os.path.join(relative, name))
            full = os.path.join(directory, name)
            info = os.lstat(full)
            if stat.S_ISDIR(info.st_mode):
                found[path] = DIRECTORY
            elif stat.S_ISLNK(info.st_mode):
                found[path] = Link(os.readlink(full))
            else:
                with open(full, "rb") as handle:
                    found[path] = handle.read()
    return found


def _midway(found: Entry | None, before: Entry | None, after: Entry | None) -> bool:
    """Whether a path a step writes may read ``found`` while the step runs: as before,
    absent, or part of what the step writes."""
    if found is None or found in (before, after):
        return True
    return isinstance(found, bytes) and isinstance(after, bytes) and after.startswith(found)


def files_match(observed: Files, step: Step[Files], following: Step[Files] | None) -> bool:
    """Whether ``observed`` is ``step``'s tree, with ``following``'s paths maybe midway."""
    state = step.state
    touched = frozenset() if following is None else following.touched
    if any(observed.get(p) != state.get(p) for p in (observed.keys() | state.keys()) - touched):
        return False
    after = {} if following is None else following.state
    return all(_midway(observed.get(p), state.get(p), after.get(p)) for p in touched)


def describe_files(observed: Files, state: Files) -> str:
    """What differs between two trees, briefly."""
    lines = []
    for path in sorted(observed.keys() | state.keys()):
        found, wanted = observed.get(path), state.get(path)
        if found != wanted:
            lines.append(f"{path}: {_brief(found)}, expected {_brief(wanted)}")
    return "; ".join(lines[:8]) + (f" (and {len(lines) - 8} more)" if len(lines) > 8 else "")


def _brief(entry: Entry | None) -> str:
    if isinstance(entry, bytes):
        return f"{len(entry)} bytes {entry[:24]!r}"
    return "absent" if entry is None else repr(entry)
