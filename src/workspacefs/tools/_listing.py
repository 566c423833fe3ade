"""``ls``, ``glob`` and ``rm``: what is where, and removing it.

``rm`` removes a regular file only if it still holds what rm read of it
(``if_match``), so its message names what it removed and a file another
writer replaced meanwhile is kept. A file over the read limit is removed
without that check, and a directory tree as it is when removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from .._errors import ContentChangedError
from ..fs import FileEntry, Filesystem, GlobMatch, content_digest, tree_key
from ._context import ToolContext, read_cap
from ._files import PATH_HELP
from ._messages import changed_meanwhile, count, failure, join_limited, parts, quote
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

MAX_ENTRIES = 1_000
"""Entries ``ls`` and ``glob`` show before saying how many more there are."""
MAX_PAGE = 10_000
"""Entries a page of ``TreeFilesystem.entries`` holds (its default and most)."""

Kind = Literal["file", "directory", "symlink"]


@dataclass(frozen=True, slots=True)
class ListedEntry:
    """One entry as ``ls`` shows it; a symlink's size is what it leads to (None: nothing)."""

    name: str
    path: str
    kind: Kind
    size: int | None
    target_kind: Literal["file", "directory"] | None = None


class LsParams(ToolParams):
    """Arguments of ``ls``."""

    path: str = Field(".", description="Directory to list. " + PATH_HELP)


def _entry(fs: Filesystem, item: FileEntry) -> ListedEntry:
    target: Literal["file", "directory"] | None = (
        "directory" if item.is_directory else "file" if item.is_file else None
    )
    size = fs.stat(item.path).size_bytes if item.is_file else None
    if item.is_symlink:
        return ListedEntry(item.name, item.path, "symlink", size, target)
    return ListedEntry(item.name, item.path, target or "file", size)


def _line(entry: ListedEntry) -> str:
    size = "-" if entry.size is None else f"{entry.size:,}"
    if entry.kind == "directory":
        return f"dir  {size:>13}  {entry.name}/"
    if entry.kind == "file":
        return f"file {size:>13}  {entry.name}"
    leads = {"directory": "a directory", "file": "a file", None: "nothing (dangling)"}
    slash = "/" if entry.target_kind == "directory" else ""
    return f"link {size:>13}  {entry.name}{slash} -> {leads[entry.target_kind]}"


def _paged(fs: Filesystem, path: str) -> list[ListedEntry] | None:
    """The entries of ``path`` with their sizes from the tree's own listing, a page a
    call (``TreeFilesystem.entries``: in memory, or one round trip to a daemon)
    rather than a ``stat`` per entry; None where the filesystem has none, or
    ``path`` is a link (the listing does not follow it; ``list`` does)."""
    page_of = getattr(fs, "entries", None)
    if not callable(page_of):
        return None
    try:
        found: list[ListedEntry] = []
        after = ""
        while True:
            page = page_of(path, after=after, recursive=False)
            for item in page:
                at, kind = item.path, item.kind
                name = at.rpartition("/")[2]
                if kind == "file":
                    found.append(ListedEntry(name, at, "file", item.size))
                elif kind == "directory":
                    found.append(ListedEntry(name, at, "directory", None))
                elif kind == "symlink":
                    found.append(_entry(fs, FileEntry(name, at, *_leads(fs, at))))
                else:  # a fifo or device shows as a file without size, as ``list`` has it
                    found.append(ListedEntry(name, at, "file", None))
            if len(page) < MAX_PAGE:
                return sorted(found, key=_by_name)
            after = tree_key(page[-1])
    except NotADirectoryError:
        return None


def _leads(fs: Filesystem, path: str) -> tuple[bool, bool, bool]:
    """(is_file, is_directory, is_symlink) of the link at ``path``, as ``list`` says."""
    try:
        found = fs.stat(path)
    except (OSError, ValueError):
        return False, False, True
    return found.is_file, found.is_directory, True


def _by_name(entry: ListedEntry) -> str:
    return entry.name


def ls(params: LsParams, *, context: ToolContext) -> ToolResult[tuple[ListedEntry, ...]]:
    """List a directory: kind, size in bytes, name; directories end with ``/``."""
    fs, path = context.workspace(), params.path
    try:
        paged = _paged(fs, path)
        if paged is not None:
            entries = tuple(paged)
        else:
            entries = tuple(_entry(fs, item) for item in fs.list(path))
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("list", path, exc))
    if not entries:
        return ToolResult.ok(f"{quote(path)} is an empty directory.", entries)
    dirs = sum(entry.kind == "directory" for entry in entries)
    links = sum(entry.kind == "symlink" for entry in entries)
    kinds = parts(
        (len(entries) - dirs - links, "file", "files"),
        (dirs, "directory", "directories"),
        (links, "symlink", "symlinks"),
    )
    shown, more = join_limited(list(map(_line, entries)), MAX_ENTRIES)
    text = f"{quote(path)}: {count(len(entries), 'entry', 'entries')} ({kinds})\n"
    text += "kind  size (bytes)  name\n" + "\n".join(shown)
    if more:
        text += f"\n... and {count(more, 'more entry', 'more entries')}; use glob to narrow."
    return ToolResult.ok(text, entries)


class GlobParams(ToolParams):
    """Arguments of ``glob``."""

    pattern: str = Field(
        min_length=1,
        description=(
            "Glob pattern relative to `path`: `*` and `?` within a name, `**` for any depth "
            "(e.g. `**/*.py`), `[abc]` classes. Names starting with `.` match only patterns "
            "that start with `.`."
        ),
    )
    path: str = Field(".", description="Directory to search below. " + PATH_HELP)


def glob(params: GlobParams, *, context: ToolContext) -> ToolResult[tuple[GlobMatch, ...]]:
    """Paths matching a glob pattern, sorted; directories end with ``/``."""
    fs, path = context.workspace(), params.path
    try:
        matches = tuple(fs.glob(params.pattern, path=path))
        if not matches and not fs.stat(path).is_directory:
            return ToolResult.fail(f"Cannot glob in {quote(path)}: it is not a directory.")
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("glob in", path, exc))
    where = f"`{params.pattern}` under {quote(path)}"
    if not matches:
        return ToolResult.ok(
            f"No paths match {where}. Patterns are relative to `path`; "
            "use `**/` to reach subdirectories.",
            matches,
        )
    lines = (match.path if match.is_file else match.path + "/" for match in matches)
    shown, more = join_limited(lines, MAX_ENTRIES)
    text = f"{count(len(matches), 'path')} match {where}:\n" + "\n".join(shown)
    if more:
        text += f"\n... and {count(more, 'more path')}; narrow the pattern or the path."
    return ToolResult.ok(text, matches)


class RmParams(ToolParams):
    """Arguments of ``rm``."""

    path: str = Field(description="File, symlink or directory to remove. " + PATH_HELP)
    recursive: bool = Field(
        False, description="Required to remove a directory; removes everything in it."
    )


@dataclass(frozen=True, slots=True)
class Removal:
    """What ``rm`` removed: the path and the entries inside it (0 for a file)."""

    path: str
    files: int = 0
    directories: int = 0
    symlinks: int = 0

    @property
    def entries(self) -> int:
        """Entries removed below ``path``."""
        return self.files + self.directories + self.symlinks


def _inside(fs: Filesystem, path: str) -> tuple[int, int, int]:
    """(files, directories, symlinks) below a directory; symlinks are not entered."""
    files = directories = symlinks = 0
    stack = [path]
    while stack:
        for item in fs.list(stack.pop()):
            if item.is_symlink:
                symlinks += 1
            elif item.is_directory:
                directories += 1
                stack.append(item.path)
            else:
                files += 1
    return files, directories, symlinks


def rm(params: RmParams, *, context: ToolContext) -> ToolResult[Removal]:
    """Remove a file or symlink, or a directory tree with ``recursive``."""
    fs, path = context.workspace(), params.path
    try:
        stat = fs.stat(path)
        is_dir = stat.is_directory and not stat.is_symlink
        inside = _inside(fs, path) if is_dir else (0, 0, 0)
        if is_dir and not params.recursive:
            return ToolResult.fail(
                f"Cannot remove {quote(path)}: it is a directory with "
                f"{count(sum(inside), 'entry', 'entries')} in it; pass recursive=true to remove "
                "it and everything in it."
            )
        size, if_match = stat.size_bytes, None
        if stat.is_file and not stat.is_symlink:
            data = fs.read_bytes(path, limit=read_cap(fs))
            if not data.truncated:  # over the read limit: no digest to hold it to
                size, if_match = data.size_bytes, content_digest(data.content)
        fs.delete(path, recursive=params.recursive, if_match=if_match)
    except ContentChangedError:
        message = changed_meanwhile("remove", path, "rm", "looked at", "removed")
        return ToolResult.fail(f"{message} Look at it again, and remove it if it should still go.")
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("remove", path, exc))
    removal = Removal(stat.path, *inside)
    if stat.is_symlink:
        return ToolResult.ok(f"Removed symlink {quote(stat.path)}.", removal)
    if not is_dir:
        return ToolResult.ok(f"Removed file {quote(stat.path)} ({count(size, 'byte')}).", removal)
    detail = parts(
        (removal.files, "file", "files"),
        (removal.directories, "directory", "directories"),
        (removal.symlinks, "symlink", "symlinks"),
    )
    return ToolResult.ok(
        f"Removed directory {quote(stat.path)} and the "
        f"{count(removal.entries, 'entry', 'entries')} in it ({detail}).",
        removal,
    )


LS = served(
    Tool(
        name="ls",
        description=(
            "List a directory: one line per entry with its kind (file, dir, link), size in bytes "
            "and name; directory names end with `/`. Use glob to find files at any depth."
        ),
        params=LsParams,
        handler=ls,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="List directory"
        ),
    )
)

GLOB = served(
    Tool(
        name="glob",
        description=(
            "Find paths by glob pattern below a directory, e.g. `**/*.py` or `src/*/test_*.py`. "
            "Returns matching paths sorted; directories end with `/`."
        ),
        params=GlobParams,
        handler=glob,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Find files"
        ),
    )
)

RM = served(
    Tool(
        name="rm",
        description=(
            "Remove a file or symlink. A directory is removed only with recursive=true, and then "
            "with everything in it; the message says how many entries were removed."
        ),
        params=RmParams,
        handler=rm,
        annotations=ToolAnnotations(
            read_only=False,
            destructive=True,
            idempotent=True,
            title="Remove",
            changes_directories=True,
        ),
    )
)
