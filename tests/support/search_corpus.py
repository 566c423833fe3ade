"""Trees to search, built alike on a real directory and in every backend, and the references.

The references run on a plain directory holding the same files and links:
GNU ``grep -RnIE`` (links followed, loops skipped, binary files skipped) in a
UTF-8 locale, Python's ``glob.glob(recursive=True)``, and bash with
``globstar nullglob`` (no ``dotglob``: hidden names need a leading ``.``, as
in the protocol).

A link that leaves the workspace is, for the workspace, a link to nothing:
the reference directory has nothing where such a link points, so the tools
see it dangling, while the host backend's root does have a real directory
there (which it must not show).
"""

from __future__ import annotations

import functools
import glob as pyglob
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from workspacefs import GlobMatch, GrepMatch, InMemoryFilesystem, Limits

MIB = 1 << 20
LIMITS = Limits(max_grep_matches=100_000)
"""Differential runs compare whole result sets, not the first 1,000 matches."""

OUTSIDE = "outside"
"""The sibling of a backend root that escaping links point into."""


@dataclass(frozen=True)
class Corpus:
    """Files (bytes), symlinks (target text) and empty directories, by relative path."""

    name: str
    files: dict[str, bytes]
    links: dict[str, str] = field(default_factory=dict)
    dirs: tuple[str, ...] = ()


def _text_corpus() -> Corpus:
    files = {
        "README.md": b"# Project\n\nimport os\nhello world\n",
        "src/app.py": b"import os\nimport sys\n\ndef main():\n    print('hello')\n\n"
        b"class AppError(Exception):\n    pass\n",
        "src/util.py": b"import  os\nfrom os import path\nx = 'abcd'  # ab bcd\n",
        "src/crlf.txt": b"first line\r\nimport os\r\n\r\nlast needle\r\n",
        "src/nofinal.txt": b"alpha\nbeta needle\n\ngamma",
        "src/blank.txt": b"\n\n  \n\t\nx\n\n",
        "src/unicode.txt": "héllo wörld\nnaïve café needle\n漢字 needle 😀\nÉcole\n".encode(),
        "src/mid_nul.txt": b"needle before\n" + b"z" * 50_000 + b"\0\nneedle after\n",
        "src/tabs.txt": b"\tindented needle\nkey=value\n[section]\n",
        "bin/data.bin": b"\x00\x01needle\x02\n",
        "bin/elf": b"\x7fELF\x02\x01\x01\x00needle\n",
        ".hidden/secret.txt": b"needle hidden\n",
        ".env": b"TOKEN=needle\n",
        "docs/a[1].md": b"bracket needle\n",
        "docs/b?.md": b"question\n",
        "docs/guide.txt": b"line one\nline two\nline three",
        "empty.txt": b"",
        "only_newline.txt": b"\n",
        "deep/a/b/c/d/e/leaf.py": b"import os\n",
        "names/x1.csv": b"1,2\n",
        "names/x2.csv": b"3,4\n",
        "names/y10.csv": b"55,66\n",
        "sp ace/file name.txt": b"needle with spaces\n",
        "odd:name.txt": b"colon needle\n",
        "a.b/y.txt": b"sorts before a/\n",
        "a/z.txt": b"sorts after a.b/\n",
    }
    links = {
        "links/to_src": "../src",
        "links/to_app": "../src/app.py",
        "links/chain": "to_src",
        "links/dangling": "../nowhere",
        "links/escape": f"../../{OUTSIDE}",
        "links/escape_abs": "/nonexistent-workspacefs-escape",
        "links/ping": "pong",
        "links/pong": "ping",
    }
    return Corpus("text", files, links, dirs=("empty_dir", "src/void"))


def _huge_file() -> bytes:
    lines = [b"%07d%s\n" % (i, b" filler" * 13) for i in range(180_000)]
    body = b"".join(lines)
    assert len(body) > 16 * MIB
    return b"needle at the start\n" + body + b"needle after 16 MiB\nEND-OF-HUGE"


def _boundary_file() -> bytes:
    """Lines straddling the 1 MiB and 2 MiB block boundaries (a match, and a CRLF)."""
    lines = b"x" * 99 + b"\n"
    head = lines * ((MIB - 50) // 100)
    straddle = b"y" * (MIB - 4 - len(head)) + b"straddle tail\n"
    body = head + straddle
    filler = lines * ((2 * MIB - 50 - len(body)) // 100)
    body += filler
    crlf = b"w" * (2 * MIB - 1 - len(body)) + b"\r\n"  # \r ends one block, \n starts the next
    return body + crlf + b"after the crlf needle\n"


def _big_corpus() -> Corpus:
    long_line = b"a" * (3 * MIB // 2) + b" needle " + b"b" * (3 * MIB // 2) + b" needle-end"
    files = {
        "huge.txt": _huge_file(),
        "long.txt": long_line + b"\nshort needle line\n",
        "boundary.txt": _boundary_file(),
        # Nothing matches before the NUL: which lines grep shows there depends on
        # how much of the file its buffer (grown by earlier, larger files) read first.
        "late_nul.txt": b"first\n" + b"y" * MIB + b"\n\0 needle after nul\nneedle later\n",
    }
    return Corpus("big", files)


def _loops_corpus() -> Corpus:
    files = {
        "f.txt": b"needle root\n",
        "sub/g.txt": b"needle sub\n",
        "sub/deeper/h.txt": b"needle deeper\n",
    }
    links = {
        "a": ".",
        "b": ".",
        "sub/up": "..",
        "sub/self": "../sub",
        "sub/deeper/top": "../..",
        "x": "y",
        "y": "x",
        "dangling": "missing",
    }
    return Corpus("loops", files, links)


@functools.cache
def corpus(name: str) -> Corpus:
    """The corpus of that name (built once per process: the big one takes a moment)."""
    return {"text": _text_corpus, "big": _big_corpus, "loops": _loops_corpus}[name]()


# -- the pattern tables (shared with the run through the mount) --------------------

GREP_TEXT = [
    "needle",
    "import os",
    r"import\s+os$",
    "^import",
    "^$",
    r"^\s*$",
    "",
    "x*",
    "$",
    "^",
    "hello|needle",
    "hello\nTOKEN",  # a newline separates patterns, as for grep
    "ab|abcd",  # leftmost-longest, as POSIX: abcd
    "(a|ab)(c|bcd)",
    "ne+dle",
    "[[:digit:]]+",
    "[0-9]{2,}",
    "é",
    "wörld",
    "caf.",
    "漢字",
    "😀",
    ".",
    "^.{3}$",
    "[[:space:]]$",
    "needle$",
    "^[A-Z]",
    r"\bneedle\b",
    "[^a-zA-Z0-9 ]",
    "(import|from) +os",
    "^\t",
    "needle.*",
    "line t.*",
    "[A-Z][a-z]+",
    "sorts (before|after)",
    "colon|spaces|bracket",
    "secret|outside",
]

GREP_BIG = [
    "needle",
    "needle$",
    "^needle",
    "straddle",
    "END-OF-HUGE",
    "^0012345 ",
    "[[:space:]]$",
    "tail$",
    "crlf",
    "needle-end$",
    "b needle-end",
]

GREP_LOOPS = ["needle", "", "root|deeper"]

GREP_CASES = (
    [("text", p) for p in GREP_TEXT]
    + [("big", p) for p in GREP_BIG]
    + [("loops", p) for p in GREP_LOOPS]
)

GLOB_TEXT = [
    "*",
    "*.md",
    "**",
    "**/*.py",
    "**/*",
    "**/",
    "*/",
    "src/**",
    "src/**/*.txt",
    "src/*.txt",
    "*/*.py",
    "*/*/*",
    "*/*/*/*/*",
    "links/*",
    "links/*/",
    "links/**",
    "links/*/*.py",
    "links/**/*.py",
    "links/ping",
    "links/dangling",
    "links/escape/*",
    "links/escape_abs/*",
    "**/app.py",
    "**/**/**/*.py",
    "deep/**/leaf.py",
    "**/e/",
    ".*",
    "**/.*",
    ".hidden/*",
    "src/.*",
    "docs/a[[]1].md",
    "docs/*[?]*",
    "names/x?.csv",
    "names/[xy]1*.csv",
    "names/[!x]*",
    "sp*/*",
    "a*/*.txt",
    "missing/*",
    "*.nothing",
    "src/void",
    "src/void/",
    "empty_dir/**",
]

GLOB_LOOPS = [
    "*",
    "**",
    "**/",
    "**/*.txt",
    "*/",
    "*/*",
    "*/*.txt",
    "*/*/*.txt",
    "a/**",
    "a/a/a/*.txt",
    "sub/**",
    "sub/*/*",
    "**/g.txt",
    "**/up/*",
    "**/" * 10 + "*.txt",
]


# -- building ----------------------------------------------------------------------


def build_directory(spec: Corpus, root: Path) -> None:
    """Write ``spec`` under ``root`` (which must exist) on a real filesystem."""
    for path, content in spec.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)
    for path in spec.dirs:
        (root / path).mkdir(parents=True, exist_ok=True)
    for path, target in spec.links.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / path)


def build_memory(spec: Corpus, fs: InMemoryFilesystem) -> None:
    """Write ``spec`` into an in-memory filesystem (links through its tree)."""
    for path, content in spec.files.items():
        fs.write_bytes(path, b"")
        for start in range(0, len(content), 8 * MIB):  # under the per-write limit
            fs.write_bytes(path, content[start : start + 8 * MIB], mode="append")
    for path in spec.dirs:
        fs.mkdir(path)
    tree = fs.tree
    with tree.lock:
        for path, target in spec.links.items():
            parent, _, name = path.rpartition("/")
            tree.symlink(tree.make_dirs(parent), name, target)


def build_host_root(spec: Corpus, base: Path) -> Path:
    """A host root holding ``spec``, with a real directory where escaping links point."""
    root = base / "root"
    root.mkdir()
    build_directory(spec, root)
    (base / OUTSIDE).mkdir()
    (base / OUTSIDE / "secret.txt").write_bytes(b"needle outside the workspace\n")
    return root


# -- references --------------------------------------------------------------------

Line = tuple[str, int, str, tuple[int, int] | None]
"""(path, line number, line, first highlighted match in characters, if any)."""

_START, _END = b"\x1b[01;31m\x1b[K", b"\x1b[m\x1b[K"


def gnu_grep(root: Path, pattern: str) -> list[Line]:
    """``grep -RnIE`` below ``root``: matching lines, sorted, with grep's first highlight."""
    done = subprocess.run(
        ["grep", "-RnIZsE", "--color=always", "-e", pattern],
        cwd=root,
        env={**os.environ, "LC_ALL": "C.UTF-8", "GREP_COLORS": "mt=01;31:fn=:ln=:bn=:se="},
        capture_output=True,
        check=False,
    )
    assert done.returncode in (0, 1, 2), done.stderr  # 2: dangling links, loops
    lines: list[Line] = []
    for record in done.stdout.split(b"\n")[:-1]:
        path, rest = record.split(b"\0", 1)
        number, colored = rest.split(b":", 1)
        content = colored.replace(_START, b"").replace(_END, b"")
        span = None
        if (first := colored.find(_START)) >= 0:
            matched = colored[first + len(_START) : colored.find(_END, first)]
            start = len(content[:first].decode())
            span = (start, start + len(matched.decode()))
        lines.append((path.decode(), int(number), content.decode(), span))
    lines.sort(key=lambda line: (line[0], line[1]))
    return lines


def python_glob(root: Path, pattern: str) -> set[tuple[str, bool]]:
    """``glob.glob(recursive=True)`` below ``root``: (path, is_file) pairs."""
    found = pyglob.glob(pattern, root_dir=root, recursive=True)
    return {(path.rstrip("/"), (root / path).is_file()) for path in found}


def bash_glob(root: Path, pattern: str) -> set[tuple[str, bool]]:
    """bash ``globstar nullglob`` expansion below ``root``: (path, is_file) pairs.

    A word without wildcards is not a glob to bash and comes back as written,
    so such a pattern counts only if the path exists (as ``glob.glob`` has it).
    """
    assert not any(char in pattern for char in " \t'\"$;&|<>(){}`\\"), "keep it one bash word"
    script = f'shopt -s globstar nullglob; for p in {pattern}; do printf "%s\\0" "$p"; done'
    done = subprocess.run(["bash", "-c", script], cwd=root, capture_output=True, check=True)
    found = [path.decode() for path in done.stdout.split(b"\0")[:-1]]
    if not any(char in pattern for char in "*?["):
        found = [path for path in found if os.path.lexists(root / path)]
    return {(path.rstrip("/"), (root / path).is_file()) for path in found}


def grep_lines(matches: list[GrepMatch]) -> Iterator[tuple[str, int, str, tuple[int, int]]]:
    """Our matches in the references' shape."""
    for match in matches:
        yield (
            match.path,
            match.line_number,
            match.line_content,
            (
                match.match_start,
                match.match_end,
            ),
        )


def glob_pairs(matches: list[GlobMatch]) -> set[tuple[str, bool]]:
    """Our glob matches in the references' shape."""
    return {(match.path, match.is_file) for match in matches}


def assert_same_lines(ours: list[GrepMatch], reference: list[Line]) -> None:
    """The same lines in the same order; the same first match wherever grep shows it.

    grep highlights no empty match, so where ours is empty (``x*`` on
    ``abx`` is empty at 0) it shows a later one; where ours is not empty it
    is the leftmost-longest match, the one grep highlights first.
    """
    got = list(grep_lines(ours))
    assert [line[:3] for line in got] == [line[:3] for line in reference]
    for (path, number, _, span), (_, _, _, highlighted) in zip(got, reference, strict=True):
        if span[0] != span[1]:
            assert span == highlighted, (path, number)
        else:
            assert highlighted is None or highlighted[0] >= span[0], (path, number)
