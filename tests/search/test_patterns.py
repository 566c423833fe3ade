"""The grep prefilter's required text: every match holds it (property-tested against RE2);
and running ahead (``skip``, ``runs_ahead``) finds what reading every byte finds."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from workspacefs.fs._patterns import compile_line_pattern, required_literal
from workspacefs.fs._search import grep_blocks

TOKENS = [
    "a",
    "b",
    "ab",
    "é",
    ".",
    "*",
    "+",
    "?",
    "{2}",
    "{,2}",
    "{1,}",
    "(",
    ")",
    "|",
    "[ab]",
    "[^a]",
    r"\.",
    r"\{",
    r"\w",
    "^",
    "$",
    "\\b",
    "x",
]
TEXT = st.text(alphabet="abé.{},2x\n ", max_size=40)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=8), st.lists(TEXT, min_size=1, max_size=5))
def test_every_match_holds_the_required_text(tokens: list[str], texts: list[str]) -> None:
    pattern = "".join(tokens)
    try:
        compiled = compile_line_pattern(pattern)
    except ValueError:
        return  # not valid RE2
    required = required_literal(pattern)
    assert compiled.required == required
    for text in texts:
        data = text.encode()
        hit = compiled.buffer.search(data)
        if hit is not None and required:
            line_start = data.rfind(b"\n", 0, hit.start()) + 1
            line_end = data.find(b"\n", hit.start())
            assert required in data[line_start : line_end if line_end >= 0 else len(data)]


def test_what_is_required() -> None:
    assert required_literal(r"import\s+os$") == b"import"
    assert required_literal(r"^class \w+Error\(") == b"class "
    assert required_literal("abc*") == b"ab"
    assert required_literal("a|b") == b""
    assert required_literal("(?i)needle") == b""
    assert required_literal("x(a|b)yz") == b"yz"


@settings(max_examples=400, deadline=None)
@given(
    st.booleans(),
    st.lists(st.sampled_from(TOKENS), max_size=8),
    st.lists(TEXT, min_size=1, max_size=5),
)
def test_running_ahead_finds_what_reading_every_byte_finds(
    anchored: bool, tokens: list[str], texts: list[str]
) -> None:
    pattern = ("^" if anchored else "") + "".join(tokens)
    try:
        compiled = compile_line_pattern(pattern)
    except ValueError:
        return  # not valid RE2
    every_byte = dataclasses.replace(compiled, skip=None, runs_ahead=False)
    for text in texts:
        blocks = [text.encode()]
        assert grep_blocks(compiled, "f", blocks, 100) == grep_blocks(every_byte, "f", blocks, 100)


def test_what_runs_ahead() -> None:
    assert compile_line_pattern(r"^class \w+Error\(").skip is not None
    assert compile_line_pattern(r"import\s+os$").runs_ahead
    assert compile_line_pattern(r"^\s+x").skip is None  # nothing plain to run ahead to
    assert not compile_line_pattern("a*b").runs_ahead  # a match may start with b
    assert not compile_line_pattern("ab|c").runs_ahead
