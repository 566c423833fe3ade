"""Glob and grep patterns, compiled for RE2 so no pattern can run away.

Globs follow Python's ``glob.glob(recursive=True)``: ``*``, ``?`` and
``[...]`` match within one segment, ``**`` matches any number of directories,
a trailing ``/`` matches directories only, and names starting with ``.`` are
matched only by segments that start with ``.`` (``**`` skips them).

Grep patterns use RE2 syntax (no backreferences or lookaround): matching is
linear in the input, so a catastrophic pattern from an agent cannot hang it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import re2

from .._errors import InvalidArgumentError

Matcher = Callable[[str], bool]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 64 << 20


def compile_regex(pattern: str) -> re2._Regexp:
    """Compile an RE2 regex; an invalid one raises InvalidArgumentError."""
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidArgumentError(f"invalid pattern (RE2 syntax): {detail}", pattern) from None


def has_magic(segment: str) -> bool:
    """True if a glob segment has wildcards."""
    return any(char in segment for char in "*?[")


def _translate_segment(segment: str) -> str:
    """Translate one glob segment to a regex that never crosses ``/``."""
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        char = segment[i]
        i += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            j = i
            if j < n and segment[j] in "!^":
                j += 1
            if j < n and segment[j] == "]":
                j += 1
            while j < n and segment[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal '['
                out.append("\\[")
                continue
            body = segment[i:j].replace("\\", "\\\\")
            i = j + 1
            if body.startswith(("!", "^")):
                body = "^" + body[1:]
            out.append(f"[{body}]")
        else:
            out.append(re.escape(char))
    return "".join(out)


def segment_matcher(segment: str) -> Matcher:
    """A matcher for one name against one glob segment."""
    regex = compile_regex(_translate_segment(segment))
    return lambda name: regex.fullmatch(name) is not None


def path_matcher(pattern: str) -> Matcher:
    """A matcher for grep's file filter.

    A pattern without ``/`` matches the file's name (``*.py``); one with ``/``
    matches the path relative to the search base (``src/**/*.py``).
    """
    if "/" not in pattern.strip("/"):
        name_matches = segment_matcher(pattern.strip("/"))
        return lambda path: name_matches(path.rpartition("/")[2])
    segments = [segment for segment in pattern.split("/") if segment]
    body = ""
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            body += ".*" if last else "(?:[^/]+/)*"
        else:
            body += _translate_segment(segment) + ("" if last else "/")
    regex = compile_regex(body)
    return lambda path: regex.fullmatch(path) is not None
