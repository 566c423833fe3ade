"""``grep``: regex search with the output modes and caps agents' search tools share."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import Field

from ..fs import DEFAULT_LIMITS, Filesystem, GrepMatch
from ._context import ToolContext
from ._files import PATH_HELP
from ._messages import count, cut, failure, quote, text_lines
from ._result import ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

SHOWN_LINE = 300
"""Characters of a matching line shown."""


class GrepParams(ToolParams):
    """Arguments of ``grep``."""

    pattern: str = Field(
        min_length=1,
        description="Regular expression (RE2 syntax: no backreferences or lookaround).",
    )
    path: str = Field(".", description="File or directory to search. " + PATH_HELP)
    glob: str | None = Field(
        None,
        description=(
            "Search only files matching this glob: against the name (`*.py`), or the path "
            "relative to `path` if it contains `/` (`src/**/*.ts`)."
        ),
    )
    output_mode: Literal["content", "files_with_matches", "count"] = Field(
        "content",
        description=(
            "content: matching lines as `path:line: text`; files_with_matches: only the "
            "paths; count: matches per file."
        ),
    )
    context_lines: int = Field(
        0, ge=0, le=10, description="Lines of context before and after each match (content)."
    )
    case_insensitive: bool = Field(False, description="Ignore case.")
    max_results: int = Field(
        100, ge=1, le=1_000, description="Most lines (or files) to show; the rest are counted."
    )


def _cap(fs: Filesystem) -> int:
    limits = getattr(fs, "limits", DEFAULT_LIMITS)
    return int(getattr(limits, "max_grep_matches", DEFAULT_LIMITS.max_grep_matches))


def _with_context(fs: Filesystem, matches: list[GrepMatch], around: int) -> list[str]:
    """Matches with ``around`` lines of context: ``path:N: text`` for a match,
    ``path-N- text`` for context, ``--`` between separate groups, as grep -C prints."""
    out: list[str] = []
    by_path: dict[str, list[GrepMatch]] = {}
    for match in matches:
        by_path.setdefault(match.path, []).append(match)
    for path, found in by_path.items():
        hits = {match.line_number for match in found}
        last_needed = max(hits) + around
        try:
            lines = text_lines(fs.read(path, limit=last_needed).content)
        except (OSError, ValueError):
            lines = []
        last = len(lines)
        near = {n for hit in hits for n in range(max(1, hit - around), min(last, hit + around) + 1)}
        previous = None
        for number in sorted(near | hits):
            starts_group = previous is None or number != previous + 1
            if starts_group and out:
                out.append("--")
            text = lines[number - 1] if number <= len(lines) else ""
            sep = ":" if number in hits else "-"
            out.append(f"{path}{sep}{number}{sep} {cut(text, SHOWN_LINE)}")
            previous = number
    return out


def grep(params: GrepParams, *, context: ToolContext) -> ToolResult[tuple[GrepMatch, ...]]:
    """Search file contents for a regular expression."""
    fs, path = context.workspace(), params.path
    pattern = f"(?i){params.pattern}" if params.case_insensitive else params.pattern
    try:
        matches = tuple(fs.grep(pattern, path=path, glob=params.glob))
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("grep in", path, exc))
    where = f"`{params.pattern}` in {quote(path)}"
    if params.glob:
        where += f" (files matching `{params.glob}`)"
    if not matches:
        return ToolResult.ok(f"No matches for {where}.", matches)
    capped = len(matches) >= _cap(fs)
    at_least = "at least " if capped else ""
    limit = params.max_results
    if params.output_mode == "files_with_matches":
        files = list(dict.fromkeys(match.path for match in matches))
        head = f"{at_least}{count(len(files), 'file')} match {where}:"
        body, more, noun = files[:limit], len(files) - limit, "file"
    elif params.output_mode == "count":
        per_file = Counter(match.path for match in matches)
        head = (
            f"{at_least}{count(len(matches), 'matching line')} in "
            f"{count(len(per_file), 'file')} for {where}:"
        )
        body = [f"{file}: {n:,}" for file, n in list(per_file.items())[:limit]]
        more, noun = len(per_file) - limit, "file"
    else:
        head = f"{at_least}{count(len(matches), 'matching line')} for {where}:"
        shown = list(matches[:limit])
        if params.context_lines:
            body = _with_context(fs, shown, params.context_lines)
        else:
            body = [f"{m.path}:{m.line_number}: {cut(m.line_content, SHOWN_LINE)}" for m in shown]
        more, noun = len(matches) - limit, "matching line"
    text = head + "\n" + "\n".join(body)
    if more > 0:
        text += (
            f"\n[... {at_least}{count(more, 'more ' + noun)} not shown. Narrow the search with "
            "path=, glob= or a more specific pattern, or raise max_results.]"
        )
    elif capped:
        text += "\n[The search stopped at its match limit; narrow it to see everything.]"
    return ToolResult.ok(text, matches)


GREP = served(
    Tool(
        name="grep",
        description=(
            "Search file contents with a regular expression (RE2). output_mode=content prints "
            "`path:line: text` for each matching line (with context_lines around it if asked); "
            "files_with_matches prints only paths; count prints matches per file. Results are "
            "capped at max_results with a count of the rest. Binary files are skipped."
        ),
        params=GrepParams,
        handler=grep,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Search file contents"
        ),
    )
)
