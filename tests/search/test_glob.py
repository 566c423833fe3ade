"""glob and grep, checked against Python's glob.glob on a real directory."""

from __future__ import annotations

import glob as pyglob
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem

FILES = [
    "top.py",
    "README.md",
    ".hidden.py",
    ".config/settings.toml",
    "src/app.py",
    "src/app_test.py",
    "src/.secret.py",
    "src/pkg/__init__.py",
    "src/pkg/mod.py",
    "src/pkg/deep/er/leaf.txt",
    "docs/a[1].md",
    "docs/b?.md",
    "data/x1.csv",
    "data/x2.csv",
    "data/y10.csv",
]
EMPTY_DIRS = ["empty", "src/pkg/void"]

PATTERNS = [
    "*",
    "*.py",
    "**",
    "**/*.py",
    "**/*",
    "src/**",
    "src/**/*.py",
    "src/*/*.py",
    "**/pkg/*",
    "**/deep/**",
    "*/",
    "**/",
    "src/**/",
    ".*",
    "**/.*",
    "src/.*",
    "data/x?.csv",
    "data/[xy]1*.csv",
    "data/[!x]*",
    "docs/a[[]1].md",
    "docs/*[?]*",
    "src/pkg",
    "src/pkg/",
    "missing/*",
    "*/*/*/*/*",
    "src/app*.py",
]


@pytest.fixture(scope="module")
def glob_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, InMemoryFilesystem]:
    root = tmp_path_factory.mktemp("globtree")
    fs = InMemoryFilesystem()
    for path in FILES:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(path)
        fs.write(path, path)
    for path in EMPTY_DIRS:
        (root / path).mkdir(parents=True, exist_ok=True)
        fs.mkdir(path)
    return root, fs


@pytest.mark.parametrize("pattern", PATTERNS)
def test_glob_matches_python(glob_tree: tuple[Path, InMemoryFilesystem], pattern: str) -> None:
    root, fs = glob_tree
    expected = {p.rstrip("/") for p in pyglob.glob(pattern, root_dir=root, recursive=True)}
    got = [m.path for m in fs.glob(pattern)]
    assert got == sorted(got)
    assert set(got) == expected
    for match in fs.glob(pattern):
        assert match.is_file == (root / match.path).is_file()


@pytest.mark.parametrize("pattern", ["*.py", "**/*.py", "**", "pkg/*"])
def test_glob_below_a_path_matches_python(
    glob_tree: tuple[Path, InMemoryFilesystem], pattern: str
) -> None:
    root, fs = glob_tree
    expected = {
        f"src/{p.rstrip('/')}" for p in pyglob.glob(pattern, root_dir=root / "src", recursive=True)
    }
    assert {m.path for m in fs.glob(pattern, path="src")} == expected


def test_glob_refuses_parent_segments(glob_tree: tuple[Path, InMemoryFilesystem]) -> None:
    _, fs = glob_tree
    with pytest.raises(ValueError):
        fs.glob("../*")
    with pytest.raises(PermissionError):
        fs.glob("*", path="..")


def test_glob_pattern_length_limit(glob_tree: tuple[Path, InMemoryFilesystem]) -> None:
    _, fs = glob_tree
    with pytest.raises(ValueError, match="limit"):
        fs.glob("*" * 1001)


def test_glob_pathological_pattern_is_fast() -> None:
    fs2 = InMemoryFilesystem()
    fs2.write("a" * 80, "x")
    # RE2 matches in linear time; a backtracking matcher would not return.
    assert fs2.glob("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b") == []


def test_grep_offsets_are_characters() -> None:
    fs = InMemoryFilesystem()
    fs.write("u.txt", "ééé needle ü\nnone\r\nneedle again\n")
    first, second = fs.grep("needle")
    assert (first.line_number, first.match_start, first.match_end) == (1, 4, 10)
    assert first.line_content == "ééé needle ü"
    assert (second.line_number, second.line_content) == (3, "needle again")


def test_grep_glob_with_path_pattern() -> None:
    fs = InMemoryFilesystem()
    fs.write("src/a.py", "x")
    fs.write("src/deep/b.py", "x")
    fs.write("tests/c.py", "x")
    assert [m.path for m in fs.grep("x", glob="src/**/*.py")] == ["src/a.py", "src/deep/b.py"]
    assert [m.path for m in fs.grep("x", glob="*.py", path="src")] == [
        "src/a.py",
        "src/deep/b.py",
    ]


def test_grep_results_sorted_and_capped() -> None:
    fs = InMemoryFilesystem()
    for name in ["b.txt", "a.txt", "a/z.txt", "a.b/y.txt"]:
        fs.write(name, "hit\nmiss\nhit\n")
    matches = fs.grep("hit")
    keys = [(m.path, m.line_number) for m in matches]
    assert keys == sorted(keys)
    assert len(keys) == 8
    assert [(m.path, m.line_number) for m in fs.grep("hit", max_matches=3)] == keys[:3]


def test_grep_rejects_backreferences_clearly() -> None:
    fs = InMemoryFilesystem()
    fs.write("f.txt", "aa")
    with pytest.raises(ValueError, match="RE2"):
        fs.grep(r"(a)\1")


def test_grep_catastrophic_pattern_on_long_input_is_linear() -> None:
    fs = InMemoryFilesystem()
    fs.write("evil.txt", "a" * 40_000 + "!")
    # Exponential for a backtracking engine; RE2 returns at once.
    assert fs.grep(r"^(a|aa)+$") == []
    assert fs.grep(r"(a*)*b") == []
