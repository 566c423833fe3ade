"""The edit_file table, on every backend."""

from __future__ import annotations

import pytest

from workspacefs.tools import Edit

from .conftest import MakeWorkspace

SOURCE = "def f():\n    return 1\n\ndef g():\n    return 1\n\nx = 'héllo wörld ✓'\n"


def test_edit_replaces_once_and_shows_numbered_lines(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    result = ws.call(
        "edit_file",
        path="m.py",
        old_string="def g():\n    return 1",
        new_string="def g():\n    return 2",
    )
    assert result.success
    assert result.value == Edit("m.py", 1, (4,))
    assert result.message == (
        "Edited `m.py`: replaced 1 occurrence at line 4. Lines 1-7 now read:\n"
        "     1\tdef f():\n     2\t    return 1\n     3\t\n     4\tdef g():\n"
        "     5\t    return 2\n     6\t\n     7\tx = 'héllo wörld ✓'"
    )
    assert ws.text("m.py") == SOURCE.replace("return 1\n\nx", "return 2\n\nx")


def test_edit_unicode(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    message = ws.ok("edit_file", path="m.py", old_string="héllo wörld ✓", new_string="日本語 🎉")
    assert "     7\tx = '日本語 🎉'" in message
    assert ws.fs.read_bytes("m.py").content.endswith("x = '日本語 🎉'\n".encode())


def test_edit_ambiguous_lists_every_line(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    message = ws.fail("edit_file", path="m.py", old_string="return 1", new_string="return 3")
    assert message == (
        "Cannot edit `m.py`: old_string occurs 2 times (at lines 2, 5). Include more "
        "surrounding lines to make it unique, or pass replace_all=true to replace all 2."
    )
    assert ws.text("m.py") == SOURCE


def test_edit_replace_all(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    result = ws.call(
        "edit_file",
        path="m.py",
        old_string="return 1",
        new_string="return (\n 3)",
        replace_all=True,
    )
    assert result.success
    assert result.value == Edit("m.py", 2, (2, 6))
    assert "replaced 2 occurrences, now at lines 2, 6" in result.message
    assert ws.text("m.py") == SOURCE.replace("return 1", "return (\n 3)")


def test_edit_not_found_points_at_a_whitespace_match(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    message = ws.fail(
        "edit_file", path="m.py", old_string="def g():\n  return 1", new_string="pass"
    )
    assert message.startswith("Cannot edit `m.py`: old_string was not found")
    assert "differs only in whitespace is at line 4-5" in message
    assert 'read_file(path="m.py", offset=1' in message
    plain = ws.fail("edit_file", path="m.py", old_string="nowhere", new_string="x")
    assert "not found" in plain
    assert "read_file" in plain
    assert ws.text("m.py") == SOURCE


def test_edit_no_op_is_refused(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    message = ws.fail("edit_file", path="m.py", old_string="x", new_string="x")
    assert message == (
        "Cannot edit `m.py`: old_string and new_string are identical, so the edit would "
        "change nothing."
    )


def test_edit_keeps_crlf(make: MakeWorkspace) -> None:
    ws = make({"dos.txt": "one\r\ntwo\r\nthree\r\n"})
    message = ws.ok("edit_file", path="dos.txt", old_string="one\ntwo", new_string="1\n2\n2.5")
    assert "     3\t2.5" in message
    assert ws.fs.read_bytes("dos.txt").content == b"1\r\n2\r\n2.5\r\nthree\r\n"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("missing.py", "Cannot edit `missing.py`: no such file or directory."),
        ("dir", "Cannot edit `dir`: it is a directory."),
        ("../m.py", "Cannot edit `../m.py`: it is outside the workspace"),
    ],
)
def test_edit_path_failures(make: MakeWorkspace, path: str, expected: str) -> None:
    ws = make({"m.py": SOURCE, "dir/x": "x"})
    assert ws.fail("edit_file", path=path, old_string="a", new_string="b").startswith(expected)


def test_edit_binary_is_refused(make: MakeWorkspace) -> None:
    ws = make({"b.bin": b"\x00\x01abc"})
    assert "binary" in ws.fail("edit_file", path="b.bin", old_string="abc", new_string="x")


def test_edit_on_read_only_workspace(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE}, read_only=True)
    message = ws.fail("edit_file", path="m.py", old_string="def f", new_string="def h")
    assert message == "Cannot edit `m.py`: the workspace is read-only."
    assert ws.text("m.py") == SOURCE


TEN = "".join(f"l{i}\n" for i in range(1, 11))


@pytest.mark.parametrize(
    ("old", "new", "first", "last"),
    [
        ("l1\n", "L1\n", 1, 4),  # first line; a replacement ending in a newline
        ("l2", "L2\nL2b", 1, 6),  # grows by a line
        ("l5\nl6\n", "", 2, 8),  # lines deleted: context closes up
        ("l10\n", "end", 7, 10),  # last line, no newline after the replacement
        ("l9\nl10\n", "x\ny\nz\n", 6, 11),
    ],
)
def test_edit_snippet_bounds(old: str, new: str, first: int, last: int) -> None:
    from workspacefs import InMemoryFilesystem
    from workspacefs.tools import ToolContext, filesystem_tools

    fs = InMemoryFilesystem()
    fs.write("t.txt", TEN)
    result = filesystem_tools(fs).call(
        "edit_file",
        {"path": "t.txt", "old_string": old, "new_string": new},
        context=ToolContext(filesystem=fs),
    )
    assert result.success, result.message
    updated = TEN.replace(old, new, 1).split("\n")
    expected = [f"{n:>6}\t{updated[n - 1]}" for n in range(first, last + 1)]
    assert result.message.splitlines()[0].endswith(f"Lines {first}-{last} now read:")
    assert result.message.splitlines()[1:] == expected


def test_edit_that_empties_the_file() -> None:
    from workspacefs import InMemoryFilesystem
    from workspacefs.tools import ToolContext, filesystem_tools

    fs = InMemoryFilesystem()
    fs.write("t.txt", "only\n")
    message = (
        filesystem_tools(fs)
        .call(
            "edit_file",
            {"path": "t.txt", "old_string": "only\n", "new_string": ""},
            context=ToolContext(filesystem=fs),
        )
        .message
    )
    assert message == "Edited `t.txt`: replaced 1 occurrence at line 1. The file is now empty."
    assert fs.read_bytes("t.txt").content == b""


def test_edit_of_a_file_over_the_read_limit_is_refused() -> None:
    from workspacefs import InMemoryFilesystem, Limits
    from workspacefs.tools import ToolContext, filesystem_tools

    fs = InMemoryFilesystem(limits=Limits(max_read_bytes=64))
    fs.write("big.txt", "x = 1\n" * 20)
    result = filesystem_tools(fs).call(
        "edit_file",
        {"path": "big.txt", "old_string": "x = 1", "new_string": "x = 2"},
        context=ToolContext(filesystem=fs),
    )
    assert not result.success
    assert result.message == (
        "Cannot edit `big.txt`: it is 120 bytes, over the read limit of 64 bytes."
    )
    unchanged = fs.read_bytes("big.txt")  # limit=None: the whole file (seed 002)
    assert (unchanged.size_bytes, unchanged.content) == (120, b"x = 1\n" * 20)
