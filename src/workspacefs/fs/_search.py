"""glob and grep over any backend that can list a directory and read a file.

Backends provide two callbacks and take their lock inside each call, so no
walk holds a lock across directories:

- ``scan(path)`` lists one directory (a normalised path, ``""`` for the
  root; ``[]`` if it is not a directory) as ``Listing`` entries;
- ``read_blocks(path)`` yields a file's whole content in blocks (nothing if
  it vanished or is not a regular file).

The walking, loop detection, matching and ordering live here once.

Links are followed as GNU ``grep -R`` and ``glob.glob`` follow them; a
directory reached again through a link while it is being walked (an ancestor,
by device and inode, as fts and bash's globstar check) is a loop and not
entered again. A path the protocol could not address -- deeper than the path
depth limit, a name over the segment limit, or more links on the way than a
path resolution follows -- is never returned, since ``read`` would refuse it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import re2

from ._limits import DEFAULT_LIMITS, Limits
from ._paths import join
from ._patterns import LinePattern, compile_glob, compile_line_pattern, path_matcher
from ._resolve import MAX_SYMLINK_HOPS
from ._results import GlobMatch, GrepMatch

Key = tuple[int, int]
"""(device, inode) of what a directory entry resolves to: its identity for loop checks."""


@dataclass(frozen=True, slots=True)
class Listing:
    """One directory entry as the walkers see it.

    ``is_dir`` and ``is_file`` describe what the entry is after following a
    symlink that stays inside the workspace; both are False for a dangling,
    looping or escaping link (and for special files). ``key`` identifies what
    the entry resolves to, None when it resolves to nothing.
    """

    name: str
    is_dir: bool
    is_file: bool
    is_link: bool
    key: Key | None


Scan = Callable[[str], Iterable[Listing]]
ReadBlocks = Callable[[str], Iterable[bytes]]

BINARY_SNIFF_BYTES = 96 << 10
"""A file with a NUL byte in this prefix is binary and skipped by grep.

96 KiB is GNU grep 3.8's first buffer, the part it checks before printing
anything. A NUL further on ends the search of the file there: lines before
the one holding it are reported (GNU grep, reading in buffers, reports the
lines of the buffers before the one holding it).
"""


def _addressable(entry: Listing, depth: int, links: int, limits: Limits) -> bool:
    """True if the protocol can address ``entry`` at ``depth`` after ``links`` links."""
    return (
        depth <= limits.max_path_depth
        and len(entry.name) <= limits.max_segment_length
        and (not entry.is_link or links < MAX_SYMLINK_HOPS)
    )


def _depth(path: str) -> int:
    return path.count("/") + 1 if path else 0


# -- glob ------------------------------------------------------------------------


def glob_paths(
    scan: Scan,
    base: str,
    pattern: str,
    *,
    base_key: Key | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[GlobMatch]:
    """Match ``pattern`` below the directory ``base``; results sorted by path.

    ``base_key`` is the identity of ``base`` itself, so a link back to it is
    seen as a loop at once (without it, one level later).
    """
    program = compile_glob(pattern)
    found: list[GlobMatch] = []
    if not program.start:
        return found
    start_keys = frozenset({base_key}) if base_key is not None else frozenset()
    pending = [(base, program.start, _depth(base) + 1, 0, start_keys)]
    while pending:
        directory, states, depth, links, ancestors = pending.pop()
        for entry in scan(directory):
            if not _addressable(entry, depth, links, limits):
                continue
            is_loop = entry.is_dir and entry.key in ancestors
            matched, below = program.step(states, entry.name, is_dir=entry.is_dir, is_loop=is_loop)
            path = join(directory, entry.name)
            if matched:
                found.append(GlobMatch(path, entry.is_file))
            if below:
                keys = ancestors if entry.key is None else ancestors | {entry.key}
                pending.append((path, below, depth + 1, links + entry.is_link, keys))
    found.sort(key=lambda match: match.path)
    return found


# -- walking for grep --------------------------------------------------------------


def _path_order(entry: Listing) -> str:
    # Children of "a" sort as "a/...": so "a.b/x" < "a/x", as full paths compare.
    return entry.name + "/" if entry.is_dir else entry.name


def walk_files(
    scan: Scan,
    base: str,
    *,
    base_key: Key | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Iterator[str]:
    """Every file below ``base`` (hidden ones included), lazily, in path order.

    Each directory is listed when the walk reaches it, so a caller that stops
    early lists no more than it needed.
    """
    ancestors: set[Key] = set() if base_key is None else {base_key}
    frames = [(iter(sorted(scan(base), key=_path_order)), base, base_key, _depth(base) + 1, 0)]
    while frames:
        entries, directory, key, depth, links = frames[-1]
        entry = next(entries, None)
        if entry is None:
            frames.pop()
            ancestors.discard(key)
            continue
        if not _addressable(entry, depth, links, limits):
            continue
        path = join(directory, entry.name)
        if entry.is_file:
            yield path
        elif entry.is_dir and entry.key not in ancestors:
            listing = iter(sorted(scan(path), key=_path_order))
            frames.append((listing, path, entry.key, depth + 1, links + entry.is_link))
            if entry.key is not None:
                ancestors.add(entry.key)


# -- grep ------------------------------------------------------------------------


def grep_below(
    pattern: str,
    path: str,
    *,
    is_directory: bool,
    scan: Scan,
    read_blocks: ReadBlocks,
    file_glob: str | None,
    max_matches: int,
    base_key: Key | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[GrepMatch]:
    """grep a file, or every file below a directory (``file_glob`` matches relative to it).

    This is ``Filesystem.grep`` for every backend. It answers as ``grep -RnE``
    (GNU grep, UTF-8 locale, ``-I``) does: per line (``^``/``$`` anchor each
    line, no phantom line after a final newline), the first match of each
    line leftmost-longest, lines split on ``\\n`` only (a ``\\r`` stays in
    ``line_content``), whole files however large, binary files (a NUL in the
    first 96 KiB) skipped, links followed and loops skipped, results in
    (path, line) order up to ``max_matches``.

    What remains different is RE2's syntax (see docs/search.md): no
    backreferences or lookaround, ``\\<``/``\\>`` refused (use ``\\b``),
    ``\\w``, ``\\b``, ``\\d``, ``\\s`` and POSIX classes ASCII-only, ``a{,n}``
    literal, ``\\`` escaping inside brackets; and lines that are not UTF-8
    are reported with U+FFFD where GNU grep omits them.

    Raises:
        InvalidArgumentError: The pattern is not valid RE2 (a ValueError).
    """
    compiled = compile_line_pattern(pattern)  # a bad pattern fails before any walking
    if is_directory:
        files: Iterable[str] = walk_files(scan, path, base_key=base_key, limits=limits)
        base = path
    else:
        files, base = [path], path.rpartition("/")[0]
    return grep_files(
        compiled, files, read_blocks, base=base, file_glob=file_glob, max_matches=max_matches
    )


def grep_files(
    pattern: str | LinePattern,
    files: Iterable[str],
    read_blocks: ReadBlocks,
    *,
    base: str,
    file_glob: str | None,
    max_matches: int,
) -> list[GrepMatch]:
    """The first match on each matching line of ``files``, in (path, line) order.

    Lines are split on ``\\n`` only, as GNU grep does on Linux: a ``\\r``
    before it belongs to the line (``$`` does not match before it) and is
    kept in ``line_content``, which the match offsets index.
    """
    compiled = compile_line_pattern(pattern) if isinstance(pattern, str) else pattern
    wanted = path_matcher(file_glob) if file_glob else None
    prefix = len(base) + 1 if base else 0
    found: list[GrepMatch] = []
    for path in files:
        if wanted is not None and not wanted(path[prefix:]):
            continue
        blocks = read_blocks(path)
        try:
            found += grep_blocks(compiled, path, blocks, max_matches - len(found))
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()  # a generator stopped early releases its file now
        if len(found) >= max_matches:
            break
    return found


def grep_blocks(
    pattern: LinePattern, path: str, blocks: Iterable[bytes], limit: int
) -> list[GrepMatch]:
    """The first match on each matching line of one file's blocks, at most ``limit``.

    A block is searched up to its last newline; a line running over block
    boundaries is searched once it is whole.
    """
    found: list[GrepMatch] = []
    pending: list[bytes] = []  # the beginning of a line that has not ended yet
    line_number = 1  # the number of the next region's first line
    uncounted: tuple[bytes, int] | None = None  # the last region: counted only if more follow
    offset = 0
    for block in blocks:
        if uncounted is not None:
            line_number += uncounted[0].count(b"\n", 0, uncounted[1]) + 1
            uncounted = None
        nul = block.find(b"\0")
        if nul >= 0:
            if offset + nul < BINARY_SNIFF_BYTES:
                return []
            cut = block.rfind(b"\n", 0, nul)  # the lines before the NUL's line
            if cut >= 0 and len(found) < limit:
                buffer, end = _region(pending, block, cut)
                _search(pattern, path, buffer, end, line_number, found, limit)
            return found
        offset += len(block)
        if len(found) >= limit:
            if offset >= BINARY_SNIFF_BYTES:
                return found
            continue  # full, but a NUL in the sniffed prefix would still make it binary
        cut = block.rfind(b"\n")
        if cut < 0:
            pending.append(block)
            continue
        buffer, end = _region(pending, block, cut)
        _search(pattern, path, buffer, end, line_number, found, limit)
        uncounted = (buffer, end)
        pending = [block[cut + 1 :]] if cut + 1 < len(block) else []
    if pending and len(found) < limit:  # a last line without a newline
        if uncounted is not None:
            line_number += uncounted[0].count(b"\n", 0, uncounted[1]) + 1
        buffer = b"".join(pending)
        _search(pattern, path, buffer, len(buffer), line_number, found, limit)
    return found


def _region(pending: list[bytes], block: bytes, cut: int) -> tuple[bytes, int]:
    """The lines ending in ``block`` at or before ``cut``: a buffer and where its last ends."""
    if not pending:
        return block, cut
    buffer = b"".join((*pending, block))
    return buffer, len(buffer) - len(block) + cut


def _search(
    pattern: LinePattern,
    path: str,
    buffer: bytes,
    end: int,
    line_number: int,
    found: list[GrepMatch],
    limit: int,
) -> None:
    """Search the lines of ``buffer[:end]`` (the last one ends at ``end``), numbered from
    ``line_number``; append the first match of each matching line to ``found``."""
    if pattern.required and buffer.find(pattern.required, 0, end) < 0:
        return  # no line here holds text every match holds
    if pattern.line is not None:
        _search_each_line(pattern.line, path, buffer, end, line_number, found, limit)
        return
    regex = pattern.buffer
    position = counted = 0
    while True:
        hit = regex.search(buffer, position, end)
        if hit is None:
            return
        start, stop = hit.span()
        line_start = buffer.rfind(b"\n", position, start) + 1 or position
        line_end = buffer.find(b"\n", start, end)
        if line_end < 0:
            line_end = end
        line_number += buffer.count(b"\n", counted, line_start)
        counted = line_start
        found.append(
            _line_match(path, line_number, buffer[line_start:line_end],
                        start - line_start, min(stop, line_end) - line_start)
        )  # fmt: skip
        if len(found) >= limit or line_end >= end:
            return
        position = line_end + 1


def _search_each_line(
    regex: re2._Regexp,
    path: str,
    buffer: bytes,
    end: int,
    line_number: int,
    found: list[GrepMatch],
    limit: int,
) -> None:
    """``_search`` for patterns that must see one line as the whole text."""
    position = 0
    while len(found) < limit:
        line_end = buffer.find(b"\n", position, end)
        if line_end < 0:
            line_end = end
        line = buffer[position:line_end]
        hit = regex.search(line)
        if hit is not None:
            start, stop = hit.span()
            found.append(_line_match(path, line_number, line, start, stop))
        if line_end >= end:
            return
        position = line_end + 1
        line_number += 1


def _line_match(path: str, line_number: int, line: bytes, start: int, stop: int) -> GrepMatch:
    """A match with its line decoded and byte offsets turned into character offsets."""
    if line.isascii():
        return GrepMatch(path, line_number, line.decode("ascii"), start, stop)
    text = line.decode("utf-8", "replace")
    first = min(len(line[:start].decode("utf-8", "replace")), len(text))
    last = min(first + len(line[start:stop].decode("utf-8", "replace")), len(text))
    return GrepMatch(path, line_number, text, first, last)
