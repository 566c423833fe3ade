"""read_file, write_file, ls, glob, grep and rm on every backend: success and failure,
and the facts a model needs in each message."""

from __future__ import annotations

import re

import pytest

from workspacefs.fs import WriteResult
from workspacefs.tools import ListedEntry, Removal, TextPage

from .conftest import MakeWorkspace

APP = "def main():\n    print('hello')\n\nif __name__ == '__main__':\n    main()\n"
FILES: dict[str, str | bytes] = {
    "README.md": "# Project\n",
    "src/app.py": APP,
    "src/util.py": "def helper(x):\n    return x * 2\n",
    "docs/guide.md": "Read the README.\nThen run main.\n",
    "big.txt": "".join(f"line {i}\n" for i in range(1, 2501)),
    "image.bin": bytes(range(256)) * 4,
    "empty.txt": "",
}


# -- read_file -----------------------------------------------------------------------


def test_read_file_numbers_lines_like_cat_n(make: MakeWorkspace) -> None:
    ws = make(FILES)
    result = ws.call("read_file", path="src/app.py")
    assert result.success
    assert result.message.splitlines() == [
        f"{n:>6}\t{line}" for n, line in enumerate(APP.splitlines(), start=1)
    ]
    assert isinstance(result.value, TextPage)
    assert result.value.total_lines == 5
    assert result.value.total_lines == 5


def test_read_file_pages_and_says_how_to_continue(make: MakeWorkspace) -> None:
    ws = make(FILES)
    first = ws.ok("read_file", path="big.txt")
    assert "  2000\tline 2000" in first
    assert "line 2001" not in first
    assert "Showing lines 1-2,000 of 2,500; 500 more lines" in first
    call = 'read_file(path="big.txt", offset=2001, limit=2000)'
    assert call in first
    rest = ws.ok("read_file", path="big.txt", offset=2001, limit=2000)
    assert rest.splitlines()[0] == "  2001\tline 2001"
    assert "  2500\tline 2500" in rest
    assert "Showing lines 2,001-2,500 of 2,500; end of file." in rest


def test_read_file_window(make: MakeWorkspace) -> None:
    ws = make(FILES)
    message = ws.ok("read_file", path="big.txt", offset=10, limit=3)
    assert message.splitlines()[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "2,488 more lines" in message
    assert "offset=13, limit=3" in message


def test_read_file_refuses_binary_with_size(make: MakeWorkspace) -> None:
    message = make(FILES).fail("read_file", path="image.bin")
    assert "`image.bin`" in message
    assert "binary" in message
    assert "1,024 bytes" in message
    assert "read_bytes" in message


@pytest.mark.parametrize(
    ("path", "cause"),
    [
        ("missing.txt", "no such file or directory"),
        ("src", "it is a directory"),
        ("../outside.txt", "outside the workspace"),
        ("README.md/x", "not a directory"),
    ],
)
def test_read_file_failures_name_path_and_cause(make: MakeWorkspace, path: str, cause: str) -> None:
    message = make(FILES).fail("read_file", path=path)
    assert message.startswith(f"Cannot read `{path}`: ")
    assert cause in message
    assert message.count(".") >= 1
    assert "\n" not in message


def test_read_file_past_the_end_and_empty(make: MakeWorkspace) -> None:
    ws = make(FILES)
    assert "it has only 5 lines" in ws.fail("read_file", path="src/app.py", offset=9)
    assert ws.ok("read_file", path="empty.txt") == "`empty.txt` is empty (0 lines)."


def test_read_file_shows_crlf_lines_without_cr(make: MakeWorkspace) -> None:
    ws = make({"dos.txt": "one\r\ntwo\r\n"})
    assert ws.ok("read_file", path="dos.txt") == "     1\tone\n     2\ttwo"


# -- write_file ----------------------------------------------------------------------


def test_write_file_modes(make: MakeWorkspace) -> None:
    ws = make(FILES)
    result = ws.call("write_file", path="new/dir/file.txt", content="a\nb\n", mode="create")
    assert result.success
    assert result.message == "Created `new/dir/file.txt` (2 lines, 4 bytes)."
    assert isinstance(result.value, WriteResult)
    assert ws.text("new/dir/file.txt") == "a\nb\n"
    assert ws.ok("write_file", path="new/dir/file.txt", content="c") == (
        "Wrote `new/dir/file.txt` (1 line, 1 byte)."
    )
    assert ws.ok("write_file", path="new/dir/file.txt", content="\nd\n", mode="append") == (
        "Appended 2 lines, 3 bytes to `new/dir/file.txt`."
    )
    assert ws.text("new/dir/file.txt") == "c\nd\n"


def test_write_file_create_refuses_to_overwrite(make: MakeWorkspace) -> None:
    ws = make(FILES)
    message = ws.fail("write_file", path="README.md", content="gone", mode="create")
    assert "`README.md`" in message
    assert "already exists" in message
    assert "mode=overwrite" in message
    assert ws.text("README.md") == "# Project\n"


def test_write_file_failures(make: MakeWorkspace) -> None:
    ws = make(FILES)
    over = ws.fail("write_file", path="huge.txt", content="x" * 50_000)
    assert "`huge.txt`" in over
    assert "48,000" in over
    assert "mode=append" in over
    assert "not a directory" in ws.fail("write_file", path="README.md/x.txt", content="x")
    assert "it is a directory" in ws.fail("write_file", path="src", content="x")
    assert "outside the workspace" in ws.fail("write_file", path="../x.txt", content="x")
    assert not ws.fs.exists("huge.txt")


def test_write_file_on_read_only_workspace(make: MakeWorkspace) -> None:
    ws = make(FILES, read_only=True)
    message = ws.fail("write_file", path="README.md", content="x")
    assert message == "Cannot write `README.md`: the workspace is read-only."
    assert ws.text("README.md") == "# Project\n"


# -- ls --------------------------------------------------------------------------------


def test_ls_shows_kind_size_and_marks_directories(make: MakeWorkspace) -> None:
    ws = make(FILES)
    result = ws.call("ls", path=".")
    assert result.success
    lines = result.message.splitlines()
    assert lines[0] == "`.`: 6 entries (4 files, 2 directories)"
    assert re.search(r"^dir\s+-\s+src/$", result.message, re.MULTILINE)
    assert re.search(r"^file\s+10\s+README\.md$", result.message, re.MULTILINE)
    assert re.search(r"^file\s+1,024\s+image\.bin$", result.message, re.MULTILINE)
    assert isinstance(result.value, tuple)
    entries = {entry.name: entry for entry in result.value}
    assert entries["src"] == ListedEntry("src", "src", "directory", None)
    assert entries["README.md"].size == 10


def test_ls_failures(make: MakeWorkspace) -> None:
    ws = make(FILES)
    assert ws.fail("ls", path="nope") == "Cannot list `nope`: no such file or directory."
    assert "not a directory" in ws.fail("ls", path="README.md")
    assert "outside the workspace" in ws.fail("ls", path="../..")
    assert ws.ok("ls", path="src").startswith("`src`: 2 entries (2 files)")


# -- glob ------------------------------------------------------------------------------


def test_glob(make: MakeWorkspace) -> None:
    ws = make(FILES)
    assert ws.ok("glob", pattern="**/*.py").splitlines() == [
        "2 paths match `**/*.py` under `.`:",
        "src/app.py",
        "src/util.py",
    ]
    assert ws.ok("glob", pattern="*", path="docs").splitlines() == [
        "1 path match `*` under `docs`:",
        "docs/guide.md",
    ]
    assert "src/" in ws.ok("glob", pattern="*/").splitlines()
    none = ws.ok("glob", pattern="**/*.rs")
    assert none.startswith("No paths match `**/*.rs` under `.`.")
    assert ws.fail("glob", pattern="*", path="README.md") == (
        "Cannot glob in `README.md`: it is not a directory."
    )
    assert "no such file or directory" in ws.fail("glob", pattern="*", path="nope")


# -- grep ------------------------------------------------------------------------------


def test_grep_content_prints_path_line_text(make: MakeWorkspace) -> None:
    ws = make(FILES)
    message = ws.ok("grep", pattern=r"main\(\)")
    assert message.splitlines() == [
        "2 matching lines for `main\\(\\)` in `.`:",
        "src/app.py:1: def main():",
        "src/app.py:5:     main()",
    ]


def test_grep_modes_and_options(make: MakeWorkspace) -> None:
    ws = make(FILES)
    files = ws.ok("grep", pattern="main", output_mode="files_with_matches")
    assert files.splitlines() == ["2 files match `main` in `.`:", "docs/guide.md", "src/app.py"]
    counts = ws.ok("grep", pattern="main", output_mode="count")
    assert counts.splitlines()[1:] == ["docs/guide.md: 1", "src/app.py: 3"]
    assert "4 matching lines in 2 files" in counts
    assert ws.ok("grep", pattern="readme").startswith("No matches for `readme` in `.`")
    assert "docs/guide.md:1: Read the README." in ws.ok(
        "grep", pattern="readme", case_insensitive=True
    )
    only_py = ws.ok("grep", pattern="main", glob="*.py", output_mode="files_with_matches")
    assert only_py.splitlines()[1:] == ["src/app.py"]
    assert "(files matching `*.py`)" in only_py


def test_grep_context_lines(make: MakeWorkspace) -> None:
    ws = make(FILES)
    message = ws.ok("grep", pattern="print|helper", path="src", context_lines=1)
    assert message.splitlines()[1:] == [
        "src/app.py-1- def main():",
        "src/app.py:2:     print('hello')",
        "src/app.py-3- ",
        "--",
        "src/util.py:1: def helper(x):",
        "src/util.py-2-     return x * 2",
    ]


def test_grep_caps_with_counts_and_a_hint(make: MakeWorkspace) -> None:
    ws = make(FILES)
    message = ws.ok("grep", pattern="line 1[0-9][0-9]\\b", path="big.txt", max_results=5)
    lines = message.splitlines()
    assert lines[0] == "100 matching lines for `line 1[0-9][0-9]\\b` in `big.txt`:"
    assert lines[1] == "big.txt:100: line 100"
    assert len(lines) == 7
    assert "[... 95 more matching lines not shown" in lines[-1]
    assert "glob=" in lines[-1]
    assert "path=" in lines[-1]
    capped = ws.ok("grep", pattern="line", path="big.txt", max_results=10)
    assert capped.startswith("at least 1,000 matching lines")
    assert "at least 990 more" in capped


def test_grep_failures(make: MakeWorkspace) -> None:
    ws = make(FILES)
    assert "invalid pattern" in ws.fail("grep", pattern="(unclosed")
    assert ws.fail("grep", pattern="x", path="nope").startswith(
        "Cannot grep in `nope`: no such file or directory"
    )


# -- rm --------------------------------------------------------------------------------


def test_rm_file_and_directory(make: MakeWorkspace) -> None:
    ws = make(FILES)
    assert ws.ok("rm", path="README.md") == "Removed file `README.md` (10 bytes)."
    assert not ws.fs.exists("README.md")
    refused = ws.fail("rm", path="src")
    assert refused == (
        "Cannot remove `src`: it is a directory with 2 entries in it; pass recursive=true "
        "to remove it and everything in it."
    )
    assert ws.fs.exists("src/app.py")
    ws.ok("write_file", path="src/deep/er/x.txt", content="x")
    result = ws.call("rm", path="src", recursive=True)
    assert result.success
    assert result.message == (
        "Removed directory `src` and the 5 entries in it (3 files, 2 directories)."
    )
    assert result.value == Removal("src", files=3, directories=2)
    assert not ws.fs.exists("src")


def test_rm_failures(make: MakeWorkspace) -> None:
    ws = make(FILES)
    assert ws.fail("rm", path="nope") == "Cannot remove `nope`: no such file or directory."
    assert "outside the workspace" in ws.fail("rm", path="../x")
    assert "workspace root" in ws.fail("rm", path=".", recursive=True)
    assert ws.fs.exists("README.md")
    read_only = make(FILES, read_only=True)
    assert read_only.fail("rm", path="README.md") == (
        "Cannot remove `README.md`: the workspace is read-only."
    )
    assert read_only.fs.exists("README.md")
