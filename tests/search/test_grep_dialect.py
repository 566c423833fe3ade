"""Where fs.grep and GNU grep -E differ, by design; each case is in docs/search.md.

These tests pin the differences down: if one goes away, the documentation
must change with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.search_corpus import gnu_grep
from workspacefs import InMemoryFilesystem

FILES = {
    "unicode.txt": "héllo Wörld\nÉcole\n".encode(),
    "latin1.txt": b"caf\xe9 needle\nplain needle\n",
    "braces.txt": b"aa\nxa{,2}\n",
    "late_nul.txt": b"needle first\n" + b"y" * 200_000 + b"\n\0 needle after nul\n",
}


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, InMemoryFilesystem]:
    root = tmp_path_factory.mktemp("dialect")
    fs = InMemoryFilesystem()
    for name, content in FILES.items():
        (root / name).write_bytes(content)
        fs.write_bytes(name, content)
    return root, fs


def test_word_and_posix_classes_are_ascii(both: tuple[Path, InMemoryFilesystem]) -> None:
    root, fs = both
    ours = [
        (m.line_number, m.match_start, m.match_end) for m in fs.grep(r"\w+", path="unicode.txt")
    ]
    assert ours == [(1, 0, 1), (2, 1, 5)]  # "h", "cole": é and É are not word characters in RE2
    assert ("unicode.txt", 1, "héllo Wörld", (0, 5)) in gnu_grep(root, r"\w+")
    assert fs.grep("^[[:upper:]]", path="unicode.txt") == []  # É is not an ASCII capital
    assert [line[:2] for line in gnu_grep(root, "^[[:upper:]]")] == [("unicode.txt", 2)]


def test_lines_that_are_not_utf8_are_reported_decoded(
    both: tuple[Path, InMemoryFilesystem],
) -> None:
    root, fs = both
    ours = [(m.line_number, m.line_content) for m in fs.grep("needle", path="latin1.txt")]
    assert ours == [(1, "caf\ufffd needle"), (2, "plain needle")]
    grep = [line[1] for line in gnu_grep(root, "needle") if line[0] == "latin1.txt"]
    assert grep == [2]  # GNU grep omits a line with an encoding error


def test_re2_syntax_where_ere_differs(both: tuple[Path, InMemoryFilesystem]) -> None:
    root, fs = both
    assert [m.line_number for m in fs.grep("a{,2}", path="braces.txt")] == [2]  # a literal
    assert [line[1] for line in gnu_grep(root, "a{,2}") if line[0] == "braces.txt"] == [1, 2]
    with pytest.raises(ValueError, match="RE2"):
        fs.grep(r"(a)\1")  # no backreferences
    with pytest.raises(ValueError, match="RE2"):
        fs.grep(r"\<needle\>")  # GNU's word anchors, a literal < > to RE2: refused
    assert [m.path for m in fs.grep(r"[\<]")] == []  # inside brackets, an escaped <
    assert [m.line_number for m in fs.grep(r"\bneedle\b", path="latin1.txt")] == [1, 2]


def test_a_late_nul_ends_the_search_at_its_line(both: tuple[Path, InMemoryFilesystem]) -> None:
    _, fs = both
    found = [(m.line_number, m.line_content) for m in fs.grep("needle", path="late_nul.txt")]
    assert found == [(1, "needle first")]  # GNU grep: the same, or nothing, by its buffering
