"""glob and grep over any backend that can list a directory and read a file.

Backends provide two callbacks and take their lock inside each call, so no
walk holds a lock across directories:

- ``scan(path)`` lists one directory (a normalised path, ``""`` for the
  root) as a ``Listing``: its identity and its entries, ``NOT_LISTED`` if
  it is not a directory;
- ``read_blocks(path)`` yields a file's whole content in blocks (nothing if
  it vanished or is not a regular file).

The walking, loop detection, matching and ordering live here once.

Links are followed as GNU ``grep -R`` and ``glob.glob`` follow them; a
directory reached again through a link while it is being walked (an ancestor,
by device and inode, as fts and bash's globstar check) is a loop and not
walked again (a walk learns a directory's identity from its own listing). A
path the protocol could not address -- deeper than the path depth limit, a
name over the segment limit, or more links on the way than a path resolution
follows -- is never returned, since ``read`` would refuse it.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import re2

from ._backend import Kind
from ._limits import DEFAULT_LIMITS, Limits
from ._patterns import LinePattern, States, compile_glob, compile_line_pattern, path_matcher
from ._resolve import MAX_SYMLINK_HOPS
from ._results import GlobMatch, GrepMatch

Key = tuple[int, int]
"""(device, inode) of what a directory entry resolves to: its identity for loop checks."""


@dataclass(frozen=True, slots=True)
class Listing:
    """One directory as the walkers see it.

    ``entries`` are its (name, kind) pairs in no particular order, each kind
    as ``lstat`` says (a symlink is ``Kind.SYMLINK``). ``links`` says what
    each symlink among them leads to when followed inside the workspace:
    ``Kind.FILE``, ``Kind.DIRECTORY`` or ``Kind.OTHER``, or None for one that
    dangles, loops or leaves. ``key`` is the directory's own identity, which
    walkers compare with the directories they are inside to see a loop; None
    when it could not be listed (``entries`` is then empty).
    """

    key: Key | None
    entries: Sequence[tuple[str, Kind]]
    links: Mapping[str, Kind | None]


NOT_LISTED = Listing(None, (), {})
"""What a scan of something that is not a directory (or is gone) gives."""

RUN_AHEAD_FROM = 4 << 10
"""Bytes from which RE2's own run-ahead to a pattern's first text beats a substring search:
each call into RE2 costs about a microsecond, a substring search a quarter of one per KiB."""

Scan = Callable[[str], Listing]
ReadBlocks = Callable[[str], Iterable[bytes]]

BINARY_SNIFF_BYTES = 96 << 10
"""A file with a NUL byte in this prefix is binary and skipped by grep.

96 KiB is GNU grep 3.8's first buffer, the part it checks before printing
anything. A NUL further on ends the search of the file there: lines before
the one holding it are reported (GNU grep, reading in buffers, reports the
lines of the buffers before the one holding it).
"""


def _depth(path: str) -> int:
    return path.count("/") + 1 if path else 0


_by_path = operator.attrgetter("path")


# -- glob ------------------------------------------------------------------------


def glob_paths(
    scan: Scan, base: str, pattern: str, *, limits: Limits = DEFAULT_LIMITS
) -> list[GlobMatch]:
    """Match ``pattern`` below the directory ``base``; results sorted by path.

    A directory's children are matched when it is listed, and a child
    directory is queued with two state sets: the one to use if it is a loop
    (an ancestor reached again, which its listing's key tells) and the one
    otherwise. So no directory is looked at twice to know its identity.
    """
    program = compile_glob(pattern)
    found: list[GlobMatch] = []
    max_depth, max_name = limits.max_path_depth, limits.max_segment_length
    depth = _depth(base) + 1
    if not program.start or depth > max_depth:  # no entry of base could be addressed
        return found
    file, directory, symlink = Kind.FILE, Kind.DIRECTORY, Kind.SYMLINK
    no_keys: frozenset[Key] = frozenset()
    # (path, states, states if it is a loop, depth of its entries, links on the way, ancestors)
    pending = [(base, program.start, program.start, depth, 0, no_keys)]
    while pending:
        path, states, loop_states, depth, links, ancestors = pending.pop()
        listing = scan(path)
        entered = _entered(listing.key, ancestors, states, loop_states)
        if entered is None:
            continue
        states, ancestors = entered
        plan = program.plan(states)
        match_leaf, match_hidden_leaf, enter = plan.match_leaf, plan.match_hidden_leaf, plan.enter
        targets = listing.links
        prefix = path + "/" if path else ""
        for name, kind in listing.entries:
            if len(name) > max_name:
                continue
            is_link = kind is symlink
            if is_link:
                if links >= MAX_SYMLINK_HOPS:
                    continue
                kind = targets[name]  # type: ignore[assignment]  # None: a link to nothing
            if kind is not directory:
                if (match_hidden_leaf if name[:1] == "." else match_leaf)(name):
                    found.append(GlobMatch(prefix + name, kind is file))
                continue
            matched, below, loop_below = enter(name)
            if matched:
                found.append(GlobMatch(prefix + name, False))
            if below and depth < max_depth:  # else none of its entries could be addressed
                child = (prefix + name, below, loop_below, depth + 1, links + is_link, ancestors)
                pending.append(child)
    found.sort(key=_by_path)
    return found


def _entered(
    key: Key | None, ancestors: frozenset[Key], states: States, loop_states: States
) -> tuple[States, frozenset[Key]] | None:
    """The states a directory's entries are matched with, and the ancestors of its
    children; None if it is an ancestor reached again with nothing left to match."""
    if key in ancestors:
        return (loop_states, ancestors) if loop_states else None
    if key is None:
        return states, ancestors
    return states, ancestors | {key}


# -- walking for grep --------------------------------------------------------------


def _in_path_order(listing: Listing) -> list[tuple[str, Kind]]:
    """The entries sorted as their full paths compare: children of "a" sort as "a/...",
    so "a.b/x" < "a/x"."""
    directory, symlink, targets = Kind.DIRECTORY, Kind.SYMLINK, listing.links

    def order(entry: tuple[str, Kind]) -> str:
        name, kind = entry
        if kind is symlink:
            kind = targets[name]  # type: ignore[assignment]  # None: a link to nothing
        return name + "/" if kind is directory else name

    if not targets:
        return sorted(
            listing.entries, key=lambda entry: entry[0] + "/" if entry[1] is directory else entry[0]
        )
    return sorted(listing.entries, key=order)


def walk_files(scan: Scan, base: str, *, limits: Limits = DEFAULT_LIMITS) -> Iterator[str]:
    """Every file below ``base`` (hidden ones included), lazily, in path order.

    Each directory is listed when the walk reaches it, so a caller that stops
    early lists no more than it needed. A directory whose listing shows it is
    one the walk is inside (a loop through a link) is not walked again.
    """
    file, directory, symlink = Kind.FILE, Kind.DIRECTORY, Kind.SYMLINK
    max_depth, max_name = limits.max_path_depth, limits.max_segment_length
    depth = _depth(base) + 1
    if depth > max_depth:
        return
    stack: list[_Frame] = []
    ancestors: set[Key] = set()
    _enter(stack, ancestors, scan(base), base + "/" if base else "", depth, 0)
    while stack:
        entries, prefix, listing, key, depth, links = stack.pop()
        for name, kind in entries:
            if len(name) > max_name:
                continue
            if kind is file:
                yield prefix + name
                continue
            is_link = kind is symlink
            if is_link:
                if links >= MAX_SYMLINK_HOPS:
                    continue
                kind = listing.links[name]  # type: ignore[assignment]  # None: a link to nothing
                if kind is file:
                    yield prefix + name
                    continue
            if kind is not directory or depth >= max_depth:  # its entries would be too deep
                continue
            path = prefix + name
            below = scan(path)
            if not below.entries or below.key in ancestors:
                continue  # empty, gone, or a loop: nothing new below
            stack.append((entries, prefix, listing, key, depth, links))
            _enter(stack, ancestors, below, path + "/", depth + 1, links + is_link)
            break
        else:
            if key is not None:
                ancestors.discard(key)


_Frame = tuple[Iterator[tuple[str, Kind]], str, Listing, Key | None, int, int]
"""A directory being walked: its entries left, its prefix, its listing and key, the depth
of its entries, and the links followed on the way to it."""


def _enter(
    stack: list[_Frame], ancestors: set[Key], listing: Listing, prefix: str, depth: int, links: int
) -> None:
    """Walk the directory ``listing`` next, as one the walk is inside."""
    stack.append((iter(_in_path_order(listing)), prefix, listing, listing.key, depth, links))
    if listing.key is not None:
        ancestors.add(listing.key)


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
        files: Iterable[str] = walk_files(scan, path, limits=limits)
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
    more = iter(blocks)
    first = next(more, None)
    if first is None:
        return []
    second = next(more, None)
    if second is None:  # the whole file in one block (most files): one search, no copying
        return _grep_block(pattern, path, first, limit)
    return _grep_stream(pattern, path, itertools.chain((first, second), more), limit)


def _grep_block(pattern: LinePattern, path: str, data: bytes, limit: int) -> list[GrepMatch]:
    """``grep_blocks`` for a file read in one block."""
    found: list[GrepMatch] = []
    end = data.find(b"\0")
    if end >= 0:
        if end < BINARY_SNIFF_BYTES:
            return found
        end = data.rfind(b"\n", 0, end)  # the lines before the NUL's line
    elif data.endswith(b"\n"):
        end = len(data) - 1  # where the last line ends; no line after it
    else:
        end = len(data)
    if end >= 0:
        _search(pattern, path, data, end, 1, found, limit)
    return found


def _grep_stream(
    pattern: LinePattern, path: str, blocks: Iterable[bytes], limit: int
) -> list[GrepMatch]:
    """``grep_blocks`` for a file read in several blocks."""
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
    required = pattern.required
    if (
        required
        and (end < RUN_AHEAD_FROM or not pattern.runs_ahead)
        and buffer.find(required, 0, end) < 0
    ):
        return  # no line here holds text every match holds
    if pattern.line is not None:
        _search_each_line(pattern.line, path, buffer, end, line_number, found, limit)
        return
    regex, skip = pattern.buffer, pattern.skip
    position = counted = 0
    while True:
        if skip is not None:  # to the first line that may match, at RE2's fastest
            ahead = skip.search(buffer, position, end)
            if ahead is None:
                return
            position = buffer.rfind(b"\n", position, ahead.start()) + 1 or position
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
            _line_match(
                path,
                line_number,
                buffer[line_start:line_end],
                start - line_start,
                min(stop, line_end) - line_start,
            )
        )
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
