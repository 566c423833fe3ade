"""glob and grep over any backend that can list a directory and read a file.

Backends provide a ``scan(path)`` callback listing a directory as ``Listing``s
(symlinks followed, ``[]`` if ``path`` is not a directory); the walking,
matching and sorting live here once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .._errors import InvalidPathError
from ._paths import join
from ._patterns import compile_regex, has_magic, path_matcher, segment_matcher
from ._results import GlobMatch, GrepMatch


@dataclass(frozen=True, slots=True)
class Listing:
    """One name of a directory, as walkers see it.

    ``is_dir``/``is_file`` describe what a symlink leads to inside the
    workspace (both False when it dangles, loops or leaves); ``key`` is the
    (device, inode) it resolves to, None when it resolves to nothing.
    """

    name: str
    is_dir: bool
    is_file: bool
    is_link: bool
    key: tuple[int, int] | None


Scan = Callable[[str], Iterable[Listing]]

BINARY_SNIFF_BYTES = 8192
"""A file with a NUL byte in this prefix is binary and skipped by grep."""


def glob_paths(scan: Scan, base: str, pattern: str) -> list[GlobMatch]:
    """Match ``pattern`` below the directory ``base``; results sorted by path."""
    dirs_only = pattern.endswith("/")
    segments = [segment for segment in pattern.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise InvalidPathError("'..' is not allowed in glob patterns", pattern)
    found: dict[str, bool] = {}
    if segments:
        _match(scan, base, segments, found)
    found.pop(base, None)  # the base itself is never a match, as with glob's root_dir
    return [
        GlobMatch(path, is_file)
        for path, is_file in sorted(found.items())
        if path and (not dirs_only or not is_file)
    ]


def _match(scan: Scan, directory: str, segments: list[str], found: dict[str, bool]) -> None:
    segment, rest = segments[0], segments[1:]
    if segment == "**":
        if rest:
            _match(scan, directory, rest, found)
        elif directory:
            found[directory] = False
        for path, is_dir, is_file in _descendants(scan, directory):
            if rest and is_dir:
                _match(scan, path, rest, found)
            elif not rest:
                found[path] = is_file
        return
    matches = segment_matcher(segment) if has_magic(segment) else segment.__eq__
    hidden_ok = segment.startswith(".")
    for listed in scan(directory):
        name, is_dir, is_file = listed.name, listed.is_dir, listed.is_file
        if (name.startswith(".") and not hidden_ok) or not matches(name):
            continue
        path = join(directory, name)
        if not rest:
            found[path] = is_file
        elif is_dir:
            _match(scan, path, rest, found)


def _descendants(scan: Scan, directory: str) -> Iterable[tuple[str, bool, bool]]:
    """Every non-hidden path below ``directory``, not entering hidden directories."""
    stack = [directory]
    while stack:
        current = stack.pop()
        for listed in scan(current):
            name, is_dir, is_file = listed.name, listed.is_dir, listed.is_file
            if name.startswith("."):
                continue
            path = join(current, name)
            yield path, is_dir, is_file
            if is_dir:
                stack.append(path)


def walk_files(scan: Scan, base: str) -> list[str]:
    """Every file below ``base`` (hidden ones included), sorted by path."""
    files: list[str] = []
    stack = [base]
    while stack:
        current = stack.pop()
        for listed in scan(current):
            name, is_dir, is_file = listed.name, listed.is_dir, listed.is_file
            path = join(current, name)
            if is_dir:
                stack.append(path)
            elif is_file:
                files.append(path)
    files.sort()
    return files


def grep_below(
    pattern: str,
    path: str,
    *,
    is_directory: bool,
    scan: Scan,
    read: Callable[[str], bytes],
    file_glob: str | None,
    max_matches: int,
) -> list[GrepMatch]:
    """grep a file, or every file below a directory (globs match relative to it)."""
    if is_directory:
        files, base = walk_files(scan, path), path
    else:
        files, base = [path], path.rpartition("/")[0]
    return grep_files(pattern, files, read, base=base, file_glob=file_glob, max_matches=max_matches)


def grep_files(
    pattern: str,
    files: Iterable[str],
    read: Callable[[str], bytes],
    *,
    base: str,
    file_glob: str | None,
    max_matches: int,
) -> list[GrepMatch]:
    """The first match on each matching line of ``files``, in (path, line) order."""
    regex = compile_regex(pattern)
    wanted = path_matcher(file_glob) if file_glob else None
    prefix = len(base) + 1 if base else 0
    matches: list[GrepMatch] = []
    for path in files:
        if wanted is not None and not wanted(path[prefix:]):
            continue
        data = read(path)
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            continue
        text = data.decode("utf-8", "replace")
        if regex.search(text) is None:
            continue
        for number, line in enumerate(text.split("\n"), start=1):
            found = regex.search(line)
            if found is None:
                continue
            matches.append(GrepMatch(path, number, line.rstrip("\r"), *found.span()))
            if len(matches) >= max_matches:
                return matches
    return matches
