"""Glob and grep patterns, compiled so that no pattern can run away.

Globs follow Python's ``glob.glob(recursive=True)``: ``*``, ``?`` and
``[...]`` match within one segment, ``**`` matches any number of directories,
a trailing ``/`` matches directories only, and names starting with ``.`` are
matched only by segments that start with ``.`` (``**`` skips them). A glob
compiles to a small automaton over path segments (``GlobProgram``), so a walk
visits each directory once whatever the number of ``**`` in the pattern.

Grep patterns use RE2 syntax, matched with the semantics of ``grep -E``
where RE2 allows: per line, leftmost-longest (see ``LinePattern``). RE2 is
linear in the input, so a catastrophic pattern from an agent cannot hang it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import re2

from .._errors import InvalidArgumentError, InvalidPathError

Matcher = Callable[[str], bool]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 64 << 20

_LINE_OPTIONS = re2.Options()
_LINE_OPTIONS.log_errors = False
_LINE_OPTIONS.max_mem = 64 << 20
_LINE_OPTIONS.longest_match = True  # POSIX leftmost-longest, as grep -E reports matches
_LINE_OPTIONS.never_nl = True  # no match spans a newline, so a buffer search is a line search


def compile_regex(pattern: str, options: re2.Options = _OPTIONS) -> re2._Regexp:
    """Compile an RE2 regex; an invalid one raises InvalidArgumentError."""
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidArgumentError(f"invalid pattern (RE2 syntax): {detail}", pattern) from None


# -- grep ----------------------------------------------------------------------

# Features whose meaning changes when a pattern runs over many lines at once:
# text anchors (\A, \z), any byte (\C, which can cross a newline), and a flag
# group turning multi-line mode off. A false positive costs speed, not results.
_WHOLE_TEXT_FEATURES = re.compile(r"\\[ACz]|\(\?[A-Za-z]*-[A-Za-z]*m")


@dataclass(frozen=True, slots=True)
class LinePattern:
    """A grep pattern matched per line, as ``grep -E`` does.

    ``buffer`` runs over a buffer of whole lines in multi-line mode with
    newlines excluded from every match: its leftmost match lies within one
    line and is that line's first match, with ``^``/``$`` meaning the line's
    start and end, so one call skips every line that does not match. Where
    that equivalence fails (see ``_WHOLE_TEXT_FEATURES``), ``line`` is set
    and each line is searched on its own. ``required`` is text every match
    contains, if the pattern has some: a buffer without it is skipped by a
    plain substring search, several times faster than the regex -- unless
    ``runs_ahead`` and the buffer is not small: a pattern that starts with
    plain text makes RE2 jump from one occurrence of that text to the next by
    itself, faster than the substring search, which would then only read the
    buffer twice.

    ``skip``, for a pattern anchored at line starts (``^def ``), is the
    pattern without its anchor: RE2 cannot run ahead to the text after a
    multi-line ``^`` and reads every byte, while it runs ahead on ``skip``.
    Every match of ``buffer`` is one of ``skip``, so the line where ``skip``
    first matches is the first that may match ``buffer``.
    """

    buffer: re2._Regexp
    line: re2._Regexp | None
    required: bytes = b""
    skip: re2._Regexp | None = None
    runs_ahead: bool = False


def compile_line_pattern(pattern: str) -> LinePattern:
    """Compile a grep pattern; an invalid one raises InvalidArgumentError.

    As for grep, a newline separates patterns: a line matching any of them matches.
    """
    if _has_word_anchor(pattern):
        # RE2 reads them as a literal < and >: refuse rather than silently find nothing.
        raise InvalidArgumentError(
            "\\< and \\> (grep's word anchors) are not RE2 syntax; use \\b", pattern
        )
    if "\n" in pattern:
        pattern = "|".join(f"(?:{part})" for part in pattern.split("\n"))
    line = compile_regex(pattern, _LINE_OPTIONS)  # first: errors name the caller's pattern
    buffer = compile_regex("(?m)" + pattern, _LINE_OPTIONS)
    required = required_literal(pattern)
    if _WHOLE_TEXT_FEATURES.search(pattern) is not None:
        return LinePattern(buffer, line, required)
    anchored = pattern[:1] == "^"
    if not _starts_with_text(pattern[1:] if anchored else pattern):
        return LinePattern(buffer, None, required)
    skip = compile_regex("(?m)" + pattern[1:], _LINE_OPTIONS) if anchored else None
    return LinePattern(buffer, None, required, skip, runs_ahead=True)


_NOT_PLAIN = frozenset("\\.^$[]()|*+?{}")


def _starts_with_text(pattern: str) -> bool:
    """True if every match of ``pattern`` starts with the same plain character (RE2 then
    runs ahead to it): a plain first one, not made optional or repeated by what follows,
    and no alternative (``|``) that could start otherwise."""
    return (
        pattern[:1] not in _NOT_PLAIN
        and bool(pattern)
        and pattern[1:2] not in ("*", "?", "{", "+")
        and "|" not in pattern
    )


_QUANTIFIERS = frozenset("*?{")  # the character before may be absent ('+' keeps it)
_BREAKS = frozenset(".^$[()+")


def required_literal(pattern: str) -> bytes:
    """The longest plain text that every match of a valid RE2 ``pattern`` contains, or b"".

    Conservative: only literal runs at the top level of a pattern without
    alternation or flags count; an escaped punctuation character is literal,
    an escaped letter (a class, an anchor, ``\\Q``) ends a run, and a
    character followed by ``*``, ``?`` or ``{`` is dropped from its run.
    """
    if "(?" in pattern:
        return b""  # flags such as (?i) change what a literal matches
    runs: list[str] = []
    run: list[str] = []
    depth = 0
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] == "|" and depth == 0:
            return b""  # an alternative may not contain the text
        literal, i, depth = _literal_at(pattern, i, depth)
        if literal is not None and depth == 0:
            if pattern[i : i + 1] in _QUANTIFIERS and i < n:
                literal = None  # optional or repeated from zero: not required
            else:
                run.append(literal)
                if pattern[i : i + 1] == "+":
                    literal = None  # required once, but the run cannot go on
        if literal is None and run:
            runs.append("".join(run))
            run = []
    runs.append("".join(run))
    return max(runs, key=len).encode()


def _literal_at(pattern: str, i: int, depth: int) -> tuple[str | None, int, int]:
    """The element of ``pattern`` that starts at ``i``, read for ``required_literal``: the
    character it stands for if it is plain text (else None; the caller keeps only text
    outside groups), the index after it, and the group depth after it."""
    char = pattern[i]
    if char == "\\":
        escaped = pattern[i + 1 : i + 2]
        literal = escaped if escaped and not escaped.isalnum() and escaped.isascii() else None
        return literal, i + 2, depth
    if char == "[":  # skip the class: it ends the run
        return None, _past_class(pattern, i), depth
    if char == "{":  # a repetition count ends the run (a literal { only shortens it)
        close = pattern.find("}", i)
        return None, close + 1 if close >= 0 else i + 1, depth
    depth += (char == "(") - (char == ")")
    plain = depth == 0 and char not in _BREAKS and char not in _QUANTIFIERS and char != ")"
    return char if plain else None, i + 1, depth


def _has_word_anchor(pattern: str) -> bool:
    """True if ``pattern`` has ``\\<`` or ``\\>`` outside a bracket expression."""
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            if pattern[i + 1 : i + 2] in ("<", ">"):
                return True
            i += 2
        elif char == "[":
            i = _past_class(pattern, i)
        else:
            i += 1
    return False


def _past_class(pattern: str, i: int) -> int:
    """The index just past the bracket expression that opens at ``pattern[i]``."""
    n = len(pattern)
    i += 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":  # a leading ] is a member
        i += 1
    while i < n and pattern[i] != "]":
        if pattern[i] == "\\":
            i += 1
        elif pattern.startswith("[:", i):
            i = pattern.find(":]", i + 2) + 1 or n
        i += 1
    return i + 1


# -- glob segments ---------------------------------------------------------------


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


def _stars_matcher(parts: list[str]) -> Matcher:
    """A matcher for a segment of literals and ``*`` only: greedy, linear, no regex."""
    first, middle, last = parts[0], parts[1:-1], parts[-1]
    shortest = sum(map(len, parts))
    if not middle:  # "*", "*.py", "test_*": the shapes a walk tests most, without the loop
        if not first:
            return (lambda name: name.endswith(last)) if last else (lambda name: True)
        if not last:
            return lambda name: name.startswith(first)

    def matches(name: str) -> bool:
        if len(name) < shortest or not name.startswith(first) or not name.endswith(last):
            return False
        position, end = len(first), len(name) - len(last)
        for part in middle:  # leftmost placement of each literal leaves the most room
            found = name.find(part, position, end)
            if found < 0:
                return False
            position = found + len(part)
        return True

    return matches


def segment_matcher(segment: str) -> Matcher:
    """A matcher for one name against one glob segment."""
    if not has_magic(segment):
        return segment.__eq__
    if "?" not in segment and "[" not in segment:
        return _stars_matcher(segment.split("*"))
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


def rule_matcher(pattern: str) -> Matcher:
    """A matcher for an access rule's glob (``AccessRules``), over a path written with a
    leading ``/`` ("" for the root: ``/src/app.py``).

    The glob syntax of ``glob``, anchored at the root, with two differences that a
    rule needs: ``*``, ``?`` and ``**`` match names starting with ``.`` too (a
    rule on ``secrets/**`` covers ``secrets/.env``), and a pattern that matches a
    directory covers everything below it (``.git`` covers ``.git/config``). Only
    ``**`` matches the root itself.
    """
    body = []
    for segment in pattern.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            raise InvalidPathError("'..' is not allowed in a rule's pattern", pattern)
        if segment == "**":
            body.append("(?:/[^/]+)*")
        else:
            body.append("/" + _translate_segment(segment))
    if not body:
        raise InvalidPathError("a rule's pattern names no path", pattern)
    regex = compile_regex("".join(body) + "(?:/.*)?")
    return lambda path: regex.fullmatch(path) is not None


# -- glob programs ---------------------------------------------------------------

States = frozenset[int]
"""Positions in a glob's segments still to match below a directory."""


def _never(name: str) -> bool:
    return False


def _always(name: str) -> bool:
    return True


def _any_of(matchers: list[Matcher]) -> Matcher:
    """One matcher for "any of these"; a single one is returned as it is (it runs per name)."""
    if not matchers:
        return _never
    if len(matchers) == 1:
        return matchers[0]
    return lambda name: any(matches(name) for matches in matchers)


class StatePlan:
    """What one state set asks of the names in a directory walked with it.

    ``match_leaf`` and ``match_hidden_leaf`` answer for a name that is not a
    directory (a file, a special file, a link to nothing), the second for a
    name starting with ".": whether it is a result. They are plain callables
    because a walk calls one for every file. ``enter`` answers for a
    directory.
    """

    __slots__ = (
        "_below",
        "_final_star",
        "_program",
        "_stars",
        "_tests",
        "match_hidden_leaf",
        "match_leaf",
    )

    def __init__(self, program: GlobProgram, states: States) -> None:
        segments, accept = program.segments, program.accept
        tests: list[tuple[int, bool, Matcher]] = []
        stars: list[int] = []
        for position in sorted(states):
            _, hidden_ok, matcher = segments[position]
            if matcher is None:
                stars.append(position)
            else:
                tests.append((position, hidden_ok, matcher))
        self._program = program
        self._tests = tuple(tests)
        self._stars = frozenset(stars)
        self._final_star = accept - 1 in self._stars  # a final ``**`` takes any non-hidden name
        self._below: dict[tuple[tuple[int, ...], bool], tuple[States, States]] = {}
        last = [
            (hidden_ok, matcher) for position, hidden_ok, matcher in tests if position == accept - 1
        ]
        self.match_leaf: Matcher
        self.match_hidden_leaf: Matcher
        if program.dirs_only:
            self.match_leaf = self.match_hidden_leaf = _never
        else:
            self.match_leaf = _always if self._final_star else _any_of([m for _, m in last])
            self.match_hidden_leaf = _any_of([m for hidden_ok, m in last if hidden_ok])

    def enter(self, name: str) -> tuple[bool, States, States]:
        """Match the directory ``name``: (whether it is a result, the states below it, and
        the states below it if it is a loop).

        A loop is a directory already being walked (an ancestor, reached again
        through a link): ``**`` does not enter it, as bash's globstar and GNU
        grep -R stop at such loops, while a named or wildcard segment still
        may (its depth is bounded by the pattern). The walker knows which
        once it has listed the directory.
        """
        program = self._program
        hidden = name[:1] == "."
        hits = tuple(
            position + 1
            for position, hidden_ok, matches in self._tests
            if (hidden_ok or not hidden) and matches(name)
        )
        accept = program.accept
        matched = (
            accept in hits
            or (self._final_star and not hidden)  # consumed by a final ``**``
            or (accept - 1 in hits and program.segments[accept - 1][2] is None)  # x/** has x
        )
        below = self._below.get((hits, hidden))
        if below is None:
            stars = self._stars if not hidden else frozenset()
            below = self._below[hits, hidden] = (
                program.closure(stars.union(hits)),
                program.closure(frozenset(hits)),
            )
        return matched, below[0], below[1]


class GlobProgram:
    """A glob pattern as an automaton over path segments.

    A state is a position in the pattern's segments; a directory is walked
    with the set of positions its children may match (``plan`` says what that
    set asks of each name). A ``**`` position loops on any non-hidden
    directory name and may also be skipped; runs of ``**`` are collapsed
    first (``**/**`` means ``**``). Each directory of a walk is visited once
    with one state set, so the work is linear in the tree times the pattern,
    however many ``**`` it has.
    """

    __slots__ = ("_plans", "accept", "dirs_only", "segments", "start")

    def __init__(self, pattern: str) -> None:
        self.dirs_only = pattern.endswith("/")
        segments: list[str] = []
        for segment in pattern.split("/"):
            if segment in ("", "."):
                continue
            if segment == "..":
                raise InvalidPathError("'..' is not allowed in glob patterns", pattern)
            if segment == "**" and segments and segments[-1] == "**":
                continue
            segments.append(segment)
        self.segments: list[tuple[str, bool, Matcher | None]] = [
            (s, s.startswith("."), None if s == "**" else segment_matcher(s)) for s in segments
        ]
        """(segment, matches hidden names, matcher or None for ``**``) of each position."""
        self.accept = len(segments)
        """The position past the last segment: reaching it is a match."""
        self._plans: dict[States, StatePlan] = {}
        self.start: States = self.closure(frozenset({0}) if segments else frozenset())

    def closure(self, positions: frozenset[int]) -> States:
        """Add the position after each ``**`` (it may match no directory); drop acceptance."""
        closed = set(positions)
        for position in positions:
            if position < self.accept and self.segments[position][2] is None:
                closed.add(position + 1)
        closed.discard(self.accept)
        return frozenset(closed)

    def plan(self, states: States) -> StatePlan:
        """What ``states`` ask of the names of a directory (made once per state set)."""
        plan = self._plans.get(states)
        if plan is None:
            plan = self._plans[states] = StatePlan(self, states)
        return plan


def compile_glob(pattern: str) -> GlobProgram:
    """Compile a glob pattern; ``..`` segments raise InvalidPathError."""
    return GlobProgram(pattern)
