"""Patches: what changed between two states of a workspace, as ``git diff`` prints it.

One implementation for every place that shows a patch (``workspacefs diff
--patch``, the agents' ``diff`` tool and undo, the debug UI):

* Each file's section starts ``diff --git a/P b/P`` with git's mode lines
  (``new file mode 100644``, ``deleted file mode 120000``, ``old mode`` and
  ``new mode``). Blob ids (``index`` lines) are left out: nothing is hashed,
  and ``git apply`` does not need them.
* A symlink is shown as a link, whatever it points to (outside the
  workspace, a directory, nothing): mode 120000, its content the target as
  written, with no newline at the end. It is never followed. A file that
  became a link, or a link that became a file, is a deletion and an addition,
  as git shows a type change.
* A file over ``PATCH_TEXT_LIMIT`` bytes is never read: its section says "Binary
  files ... differ" with both sizes. A binary file (a NUL byte in its first
  8,000 bytes, as git decides, or not UTF-8) is not shown either.

Memory is bounded by what one file may show (``PATCH_TEXT_LIMIT`` bytes a side);
time by the caller: ``build_patch`` stops at ``max_lines`` and when
``expired()`` says so, and says where it stopped.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ._entries import TreeEntry
from ._protocol import Filesystem

PATCH_TEXT_LIMIT = 1 << 20
"""Largest file (bytes) a patch shows; a bigger one is named with its sizes, never read."""
PATCH_LINE_LIMIT = 20_000
"""Most lines a side that are compared (difflib is quadratic at worst)."""
SNIFF_BYTES = 8000
"""A NUL byte this early makes a file binary, as git decides (``buffer_is_binary``)."""
CONTEXT = 3
"""Lines of context around each change, as ``git diff``."""
READ_BLOCK = 1 << 20
"""Bytes a ``FilesystemSource`` asks for per ``read_bytes``."""
NO_NEWLINE = "\\ No newline at end of file"

_LINK_MODE = 0o120000


class PatchSource(Protocol):
    """One side of a patch: what is at a path, and the first bytes of a file."""

    def entry(self, path: str) -> TreeEntry | None:
        """What is at ``path``, a symlink not followed; None if nothing is."""
        ...

    def read(self, path: str, limit: int) -> bytes:
        """The first ``limit`` bytes of the regular file at ``path``."""
        ...


class FilesystemSource:
    """A ``PatchSource`` over any ``Filesystem``, through the protocol (``stat``,
    ``readlink``, ``read_bytes``).

    The protocol follows a symlink met on the way to a path; a patch must not:
    ``d/x`` names nothing in a state where ``d`` is a link. So the directories
    above each path are checked to be no links, each once per source.
    """

    def __init__(self, filesystem: Filesystem) -> None:
        self._fs = filesystem
        self._directories: dict[str, bool] = {}  # path -> a real directory, no link

    def _reached(self, path: str) -> bool:
        """True if every directory above ``path`` is a directory, not a link."""
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            above = "/".join(parts[:depth])
            known = self._directories.get(above)
            if known is None:
                try:
                    info = self._fs.stat(above)
                    known = info.is_directory and not info.is_symlink
                except (FileNotFoundError, NotADirectoryError):
                    known = False
                self._directories[above] = known
            if not known:
                return False
        return True

    def entry(self, path: str) -> TreeEntry | None:
        if not self._reached(path):
            return None
        try:
            info = self._fs.stat(path or ".")
        except (FileNotFoundError, NotADirectoryError):
            return None
        if info.is_symlink:  # stat describes what the link leads to: read the link itself
            target = self._fs.readlink(path)
            return TreeEntry(path, "symlink", len(target), _LINK_MODE | 0o777, target)
        if info.is_directory:
            return TreeEntry(path, "directory", 0, info.mode)
        if info.is_file:
            return TreeEntry(path, "file", info.size_bytes, info.mode)
        return TreeEntry(path, "other", 0, info.mode)

    def read(self, path: str, limit: int) -> bytes:
        data = bytearray()
        while len(data) < limit:
            part = self._fs.read_bytes(
                path, offset=len(data), limit=min(READ_BLOCK, limit - len(data))
            )
            data += part.content
            if not part.truncated or not part.content:
                break
        return bytes(data)


def is_binary(data: bytes) -> bool:
    """True if git would call ``data`` binary (a NUL byte among its first
    ``SNIFF_BYTES``): no line-wise diff or merge of it."""
    return b"\0" in data[:SNIFF_BYTES]


def git_mode(entry: TreeEntry) -> str | None:
    """The mode git records for ``entry``; None for what git does not hold."""
    if entry.kind == "symlink":
        return "120000"
    if entry.kind == "file":
        return "100755" if entry.mode & 0o100 else "100644"
    return None


@dataclass(frozen=True, slots=True)
class _Side:
    """One side of a file's section: its name in the patch and its lines, or why none."""

    name: str
    size: int
    lines: list[str] | None
    why: Literal["text", "binary", "too_large", "too_long"]
    data: bytes | None = None  # a binary file's bytes, to tell whether they changed


def _split(text: str) -> list[str]:
    """The lines of ``text``, each with its "\\n" (git splits at "\\n" only); the
    last one without, when the text does not end with one."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _side(entry: TreeEntry | None, source: PatchSource, label: str, limit: int) -> _Side:
    if entry is None:
        return _Side("/dev/null", 0, [], "text")
    if entry.kind == "symlink":
        return _Side(label, entry.size, _split(entry.target or ""), "text")
    if entry.size > limit:
        return _Side(label, entry.size, None, "too_large")
    data = source.read(entry.path, limit)
    if is_binary(data):
        return _Side(label, entry.size, None, "binary", data)
    try:
        lines = _split(data.decode("utf-8"))
    except UnicodeDecodeError:
        return _Side(label, entry.size, None, "binary", data)
    if len(lines) > PATCH_LINE_LIMIT:
        return _Side(label, entry.size, None, "too_long")
    return _Side(label, entry.size, lines, "text")


def _range(start: int, stop: int) -> str:
    """A hunk header's range, as git writes it (",1" left out; an empty side starts at
    the line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def hunks(old: Sequence[str], new: Sequence[str]) -> Iterator[str]:
    """The hunks from ``old`` to ``new`` lines (each with its "\\n", the last maybe
    without), as unified diff lines."""
    # autojunk would treat frequent lines (blank ones, braces) as noise: odd hunks.
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@"
        for tag, i1, i2, j1, j2 in group:
            runs = [(" ", old[i1:i2])] if tag == "equal" else [("-", old[i1:i2]), ("+", new[j1:j2])]
            for op, lines in runs:
                for line in lines:
                    if line.endswith("\n"):
                        yield op + line[:-1]
                    else:
                        yield op + line
                        yield NO_NEWLINE


def _section(
    path: str,
    old: TreeEntry | None,
    new: TreeEntry | None,
    before: PatchSource,
    after: PatchSource,
    limit: int,
) -> Iterator[str]:
    head = [f"diff --git a/{path} b/{path}"]
    if old is None and new is not None:
        head.append(f"new file mode {git_mode(new)}")
    elif new is None and old is not None:
        head.append(f"deleted file mode {git_mode(old)}")
    elif old is not None and new is not None and git_mode(old) != git_mode(new):
        head += [f"old mode {git_mode(old)}", f"new mode {git_mode(new)}"]
    left = _side(old, before, f"a/{path}", limit)
    right = _side(new, after, f"b/{path}", limit)
    if left.lines is None or right.lines is None:
        if left.data is not None and left.data == right.data:
            note = None  # the same bytes: only the mode changed, if anything
        else:
            note = f"Binary files {left.name} and {right.name} differ" + _why(left, right, limit)
        if note is not None or len(head) > 1:
            yield from head
        if note is not None:
            yield note
        return
    body = hunks(left.lines, right.lines)
    first = next(body, None)
    if first is None and len(head) == 1:
        return  # nothing git would show
    yield from head
    if first is not None:
        yield f"--- {left.name}"
        yield f"+++ {right.name}"
        yield first
        yield from body


def _why(left: _Side, right: _Side, limit: int) -> str:
    if "too_large" in (left.why, right.why):
        return f" ({left.size:,} -> {right.size:,} bytes, over the {limit:,}-byte limit)"
    if "too_long" in (left.why, right.why):
        lines = f"over {PATCH_LINE_LIMIT:,} lines to compare"
        return f" ({left.size:,} -> {right.size:,} bytes, {lines})"
    return ""


def _shown(entry: TreeEntry | None) -> TreeEntry | None:
    """``entry`` if a patch shows it (files and links: what git holds)."""
    return entry if entry is not None and git_mode(entry) is not None else None


def file_patch(
    path: str, before: PatchSource, after: PatchSource, *, limit: int = PATCH_TEXT_LIMIT
) -> Iterator[str]:
    """The lines of the patch of one path (none if nothing git shows changed)."""
    old, new = _shown(before.entry(path)), _shown(after.entry(path))
    if old is not None and new is not None and old.kind != new.kind:
        yield from _section(path, old, None, before, after, limit)
        yield from _section(path, None, new, before, after, limit)
    elif old is not None or new is not None:
        yield from _section(path, old, new, before, after, limit)


def patch_lines(
    before: PatchSource, after: PatchSource, paths: Iterable[str], *, limit: int = PATCH_TEXT_LIMIT
) -> Iterator[str]:
    """The whole patch of ``paths``, line by line, lazily (for a stream: the lines
    of one file at most are held)."""
    for path in paths:
        yield from file_patch(path, before, after, limit=limit)


Stop = Literal["max_lines", "deadline"]


@dataclass(frozen=True, slots=True)
class Patch:
    """The first lines of a patch, and where and why it stopped."""

    lines: tuple[str, ...]
    stopped: Stop | None = None
    """``max_lines``: there were more lines; ``deadline``: ``expired()`` said so."""
    files_left_out: int = 0
    """Paths whose section is not shown in full (0 when nothing was left out)."""

    @property
    def truncated(self) -> bool:
        """True if the patch goes on beyond ``lines``."""
        return self.stopped is not None


def build_patch(
    before: PatchSource,
    after: PatchSource,
    paths: Sequence[str],
    *,
    max_lines: int,
    expired: Callable[[], bool] | None = None,
    limit: int = PATCH_TEXT_LIMIT,
) -> Patch:
    """At most ``max_lines`` lines of the patch of ``paths``.

    Nothing past the last line shown is read or compared. ``expired`` is asked
    before each file but the first (so a patch always makes progress); once it
    says True, the patch stops there.
    """
    lines: list[str] = []
    for index, path in enumerate(paths):
        if index and expired is not None and expired():
            return Patch(tuple(lines), "deadline", len(paths) - index)
        for line in file_patch(path, before, after, limit=limit):
            if len(lines) >= max_lines:
                return Patch(tuple(lines), "max_lines", len(paths) - index)
            lines.append(line)
    return Patch(tuple(lines))
