"""stat, mkdir, mv, multi_edit and read_files on every backend: what they do, what
they refuse (changing nothing), and that none loses another writer's change."""

from __future__ import annotations

import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.tools import (
    FileInfo,
    FileRead,
    Move,
    MultiEdit,
    ToolContext,
    UndoableToolset,
    filesystem_tools,
)
from workspacefs.tree import ROOT_INO

from .conftest import MakeWorkspace
from .test_races import Interleaved, call
from .test_reads import ENCODED, png

SOURCE = "def f():\n    return 1\n\ndef g():\n    return 1\n\nx = 'héllo'\n"


def _state(ws: object) -> dict[str, bytes | None]:
    fs = ws.fs  # type: ignore[attr-defined]
    state: dict[str, bytes | None] = {}
    pending = ["."]
    while pending:
        for entry in fs.list(pending.pop()):
            if entry.is_directory and not entry.is_symlink:
                state[entry.path] = None
                pending.append(entry.path)
            elif entry.is_file:
                state[entry.path] = fs.read_bytes(entry.path).content
    return state


# -- stat ----------------------------------------------------------------------------


def test_stat_says_what_a_path_is(make: MakeWorkspace) -> None:
    ws = make({"src/m.py": SOURCE, "logo.png": png(1, 1), "blob.bin": bytes(range(256))})
    ws.fs.write_bytes("l.txt", ENCODED["latin1.py"][0])
    result = ws.call("stat", path="src/m.py")
    assert result.success, result.message
    lines = result.message.splitlines()
    size = len(SOURCE.encode())
    assert lines[0] == f"`src/m.py`: file, {size} bytes"
    assert lines[1] == "content: text (UTF-8): read_file reads it"
    assert lines[2] == "mode: 0644 (-rw-r--r--)"
    assert lines[3].startswith("modified: 20")
    assert isinstance(result.value, FileInfo)
    assert (result.value.kind, result.value.size_bytes, result.value.mode) == ("file", size, 0o644)
    assert ws.ok("stat", path="src").splitlines()[0] == "`src`: directory, 1 entry"
    assert "content: image/png: read_bytes shows it" in ws.ok("stat", path="logo.png")
    assert "content: binary: read_bytes reads it" in ws.ok("stat", path="blob.bin")
    assert "content: text (Latin-1 (ISO-8859-1))" in ws.ok("stat", path="l.txt")
    assert ws.fail("stat", path="nope") == "Cannot stat `nope`: no such file or directory."
    assert "outside the workspace" in ws.fail("stat", path="../x")


def test_stat_of_symlinks() -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "abc")
    with fs.transaction() as tree:
        tree.symlink(ROOT_INO, "link", "a.txt")
        tree.symlink(ROOT_INO, "dangling", "nowhere")
    tools, context = filesystem_tools(fs), ToolContext(filesystem=fs)
    linked = tools.call("stat", {"path": "link"}, context=context).message.splitlines()
    assert linked[:2] == ["`link`: symlink to a file, 3 bytes", "target: a.txt (leads to a file)"]
    dangling = tools.call("stat", {"path": "dangling"}, context=context).message.splitlines()
    assert dangling[:2] == [
        "`dangling`: symlink that leads nowhere in the workspace",
        "target: nowhere (leads to nothing in the workspace)",
    ]


# -- mkdir ---------------------------------------------------------------------------


def test_mkdir(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "x"})
    assert ws.ok("mkdir", path="new/deep/dir") == (
        "Made directory `new/deep/dir` (and 2 parent directories)."
    )
    assert ws.fs.stat("new/deep/dir").is_directory
    assert ws.ok("mkdir", path="new") == "`new` is already a directory; nothing was done."
    before = _state(ws)
    assert ws.fail("mkdir", path="a.txt/sub").startswith("Cannot make directory `a.txt/sub`: ")
    assert ws.fail("mkdir", path="a.txt").startswith("Cannot make directory `a.txt`: a file")
    assert "outside the workspace" in ws.fail("mkdir", path="../out")
    assert _state(ws) == before


# -- mv ------------------------------------------------------------------------------


def test_mv_renames_and_moves_into_directories(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "a\n", "src/m.py": SOURCE, "docs/readme.md": "# r\n"})
    result = ws.call("mv", source="a.txt", destination="b.txt")
    assert result.success, result.message
    assert result.message == "Moved file `a.txt` to `b.txt`."
    assert result.value == Move("a.txt", "b.txt", False)
    assert ws.text("b.txt") == "a\n"
    assert not ws.fs.exists("a.txt")
    assert ws.ok("mv", source="b.txt", destination="docs") == "Moved file `b.txt` to `docs/b.txt`."
    assert ws.ok("mv", source="src", destination="lib/python/") == (
        "Moved directory `src` to `lib/python/src`."
    )
    assert ws.text("lib/python/src/m.py") == SOURCE
    assert ws.ok("mv", source="docs", destination="new/place/docs") == (
        "Moved directory `docs` to `new/place/docs`."
    )
    assert sorted(_state(ws)) == [
        "lib",
        "lib/python",
        "lib/python/src",
        "lib/python/src/m.py",
        "new",
        "new/place",
        "new/place/docs",
        "new/place/docs/b.txt",
        "new/place/docs/readme.md",
    ]


def test_mv_refusals_change_nothing(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "a\n", "b.txt": "b\n", "src/m.py": SOURCE, "src/sub/x": "x"})
    before = _state(ws)
    refused = {
        ("a.txt", "b.txt"): (
            "Cannot move `a.txt` to `b.txt`: `b.txt` already exists. Pass overwrite=true to "
            "replace it, or choose another destination."
        ),
        ("missing", "z"): "Cannot move `missing` to `z`: no such file or directory (`missing`).",
        ("src", "src/sub/inner"): "Cannot move `src` to `src/sub/inner`: cannot move a directory",
        ("a.txt", "../out.txt"): "Cannot move `a.txt` to `../out.txt`: it is outside the workspace",
        (".", "x"): "Cannot move `.` to `x`: cannot rename the workspace root.",
    }
    for (source, destination), message in refused.items():
        assert ws.fail("mv", source=source, destination=destination).startswith(message)
    assert _state(ws) == before


def test_mv_overwrite(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "a\n", "b.txt": "b\n", "d/x": "x"})
    result = ws.call("mv", source="a.txt", destination="b.txt", overwrite=True)
    assert result.message == "Moved file `a.txt` to `b.txt` (replacing what was there)."
    assert ws.text("b.txt") == "a\n"
    message = ws.fail("mv", source="b.txt", destination="d/x/y", overwrite=True)
    assert message.startswith("Cannot move `b.txt` to `d/x/y`: ")


def test_mv_never_replaces_a_file_another_writer_puts_there(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "mine\n"})
    racing = Interleaved(ws.fs, "exists", lambda: ws.fs.write("new/b.txt", "theirs\n"))
    ws.fs.mkdir("new")
    result = call(racing, "mv", source="a.txt", destination="new/b.txt")
    assert racing.fired
    assert not result.success
    assert "`new/b.txt` already exists" in result.message
    assert ws.text("new/b.txt") == "theirs\n"  # kept
    assert ws.text("a.txt") == "mine\n"


# -- multi_edit ----------------------------------------------------------------------


def test_multi_edit_applies_every_edit_in_order(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    edits = [
        {"old_string": "def f():\n    return 1", "new_string": "def f():\n    return 10"},
        {"old_string": "def g():\n    return 1", "new_string": "def g():\n    return 2"},
        {"old_string": "return 10", "new_string": "return 11"},  # sees the first edit
        {"old_string": "héllo", "new_string": "wörld ✓"},
    ]
    result = ws.call("multi_edit", path="m.py", edits=edits)
    assert result.success, result.message
    assert ws.text("m.py") == (
        "def f():\n    return 11\n\ndef g():\n    return 2\n\nx = 'wörld ✓'\n"
    )
    assert result.value == MultiEdit("m.py", 4, 4, ((2, 2), (5, 5), (7, 7)))
    lines = result.message.splitlines()
    assert lines[0] == "Edited `m.py`: 4 edits, 4 replacements; changed lines 2, 5, 7 now read:"
    assert lines[1:] == [
        f"{n:>6}\t{line}" for n, line in enumerate(ws.text("m.py").splitlines(), start=1)
    ]


def test_multi_edit_is_all_or_nothing(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    ambiguous = [
        {"old_string": "def f", "new_string": "def h"},
        {"old_string": "return 1", "new_string": "return 3"},
    ]
    assert ws.fail("multi_edit", path="m.py", edits=ambiguous) == (
        "Cannot edit `m.py` (edit 2 of 2): old_string occurs 2 times (at lines 2, 5). Include "
        "more surrounding lines to make it unique, or pass replace_all=true to replace all 2. "
        "None of the 2 edits was made."
    )
    misindented = [
        {"old_string": "def f", "new_string": "def h"},
        {"old_string": "def g():\n  return 1", "new_string": "pass"},
    ]
    message = ws.fail("multi_edit", path="m.py", edits=misindented)
    assert message.startswith("Cannot edit `m.py` (edit 2 of 2): old_string was not found")
    assert "differs only in whitespace is at line 4-5" in message
    same = [{"old_string": "x", "new_string": "x"}]
    assert "(edit 1 of 1): old_string and new_string are identical" in ws.fail(
        "multi_edit", path="m.py", edits=same
    )
    undone = [
        {"old_string": "héllo", "new_string": "hello"},
        {"old_string": "hello", "new_string": "héllo"},
    ]
    assert "together change nothing" in ws.fail("multi_edit", path="m.py", edits=undone)
    assert "`edits`" in ws.fail("multi_edit", path="m.py", edits=[])
    assert ws.text("m.py") == SOURCE


def test_multi_edit_keeps_the_encoding(make: MakeWorkspace) -> None:
    data, _, text = ENCODED["utf16be.txt"]
    ws = make({"u.txt": data})
    edits = [
        {"old_string": "héllo", "new_string": "hallo"},
        {"old_string": "second", "new_string": "2nd"},
    ]
    ws.ok("multi_edit", path="u.txt", edits=edits)
    assert ws.fs.read_bytes("u.txt").content == data[:2] + (
        text.replace("héllo", "hallo").replace("second", "2nd").encode("utf-16-be")
    )


def test_multi_edit_fails_when_another_writer_changed_the_file(make: MakeWorkspace) -> None:
    ws = make({"m.py": SOURCE})
    racing = Interleaved(ws.fs, "read_bytes", lambda: ws.fs.write("m.py", SOURCE + "y = 2\n"))
    edits = [{"old_string": "def f", "new_string": "def h"}]
    result = call(racing, "multi_edit", path="m.py", edits=edits)
    assert not result.success
    assert result.message.startswith(
        "Cannot edit `m.py`: it changed after multi_edit read it (another writer changed it "
        "meanwhile), so nothing was written."
    )
    assert ws.text("m.py") == SOURCE + "y = 2\n"


# -- read_files ----------------------------------------------------------------------


def test_read_files_reads_each_within_one_budget(make: MakeWorkspace) -> None:
    ws = make({"a.txt": "one\ntwo\n", "b.txt": "", "blob.bin": bytes(range(256))})
    ws.fs.write_bytes("l.txt", ENCODED["latin1.py"][0])
    result = ws.call("read_files", paths=["a.txt", "missing.txt", "b.txt", "blob.bin", "l.txt"])
    assert result.success, result.message
    sections = result.message.split("\n\n")
    assert sections[0] == "==> a.txt (2 lines) <==\n     1\tone\n     2\ttwo"
    assert (
        sections[1] == "==> missing.txt <==\nCannot read `missing.txt`: no such file or directory."
    )
    assert sections[2] == "==> b.txt (0 lines) <==\n(empty)"
    assert sections[3].startswith(
        "==> blob.bin <==\nCannot read `blob.bin` as text: it is a binary"
    )
    assert sections[4].startswith("==> l.txt (2 lines) <==\n     1\t# café naïve")
    assert "Latin-1" in sections[5]
    assert isinstance(result.value, tuple)
    assert [read.path for read in result.value] == [
        "a.txt",
        "missing.txt",
        "b.txt",
        "blob.bin",
        "l.txt",
    ]
    assert all(isinstance(read, FileRead) for read in result.value)
    failed = ws.call("read_files", paths=["missing.txt"])
    assert not failed.success


def test_read_files_stops_at_its_budget() -> None:
    fs = InMemoryFilesystem()
    wide = (b"z" * 1_000 + b"\n") * 200  # 200,000 characters shown
    for name in ("a", "b", "c"):
        fs.write_bytes(f"{name}.txt", wide)
    result = filesystem_tools(fs).call(
        "read_files", {"paths": ["a.txt", "b.txt", "c.txt"]}, context=ToolContext(filesystem=fs)
    )
    assert result.success
    assert result.message.startswith("==> a.txt (200 lines) <==")
    assert "==> b.txt (200 lines) <==" in result.message
    assert '[Showing lines 1-56; more follow. To continue: read_file(path="b.txt", offset=57' in (
        result.message
    )
    assert result.message.endswith(
        "[1 file not shown: this call's 256,000 characters are spent. Read it with "
        'read_file(path="c.txt")]'
    )


# -- undo and blame ------------------------------------------------------------------


def test_each_new_tool_call_is_undone_and_attributed() -> None:
    fs = InMemoryFilesystem()
    fs.write("m.py", SOURCE)
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    edits = [{"old_string": "def f", "new_string": "def h"}]
    assert toolset.call("multi_edit", {"path": "m.py", "edits": edits}, call_id="t1").success
    assert toolset.call("mkdir", {"path": "pkg"}, call_id="t2").success
    assert toolset.call("mv", {"source": "m.py", "destination": "pkg"}, call_id="t3").success
    assert toolset.call("stat", {"path": "pkg/m.py"}, call_id="t4").success
    assert [e.causes[0].call_id for e in fs.blame("pkg/m.py")][:1] == ["t3"]
    assert [c.tool for c in toolset.history] == ["multi_edit", "mkdir", "mv", "stat"]
    assert toolset.history[3].before is None  # read-only: no snapshot
    toolset.undo()  # the move: the directory mkdir made stays
    assert fs.exists("m.py")
    assert fs.exists("pkg")
    assert not fs.exists("pkg/m.py")
    assert fs.read("m.py").content == SOURCE.replace("def f", "def h")
    toolset.undo_to("t2")  # mkdir changed no file, yet it is a call of its own
    assert not fs.exists("pkg")
    assert fs.read("m.py").content == SOURCE.replace("def f", "def h")
    toolset.undo()
    assert fs.read("m.py").content == SOURCE


def test_undo_keeps_an_empty_directory_removal_it_does_not_undo() -> None:
    """rm of an empty directory changes no file; undoing the call after it must not
    bring the directory back."""
    fs = InMemoryFilesystem()
    fs.mkdir("empty")
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    assert toolset.call("rm", {"path": "empty", "recursive": True}).success
    assert toolset.call("write_file", {"path": "a.txt", "content": "a"}).success
    toolset.undo()
    assert not fs.exists("a.txt")
    assert not fs.exists("empty")


@pytest.mark.parametrize("name", ["stat", "read_files", "read_bytes"])
def test_read_tools_are_read_only(name: str) -> None:
    assert not filesystem_tools()[name].mutating


def test_ls_from_the_tree_listing_matches_list_and_stat() -> None:
    """ls reads sizes from the tree's own listing (one call) where it can; it shows what
    ``list`` and a ``stat`` per entry show, in the same order (a-b before a/)."""
    from workspacefs.tools._listing import _entry

    fs = InMemoryFilesystem()
    for path in ("a-b.txt", "a/x.txt", "a.txt", "b/c/d.txt", "Z", "é"):
        fs.write(path, path * 3)
    with fs.transaction() as tree:
        tree.symlink(ROOT_INO, "to-file", "a.txt")
        tree.symlink(ROOT_INO, "to-dir", "b")
        tree.symlink(ROOT_INO, "dangling", "nowhere")
    for path in (".", "a", "to-dir"):
        result = filesystem_tools(fs).call("ls", {"path": path}, context=ToolContext(filesystem=fs))
        assert result.success, result.message
        assert result.value == tuple(_entry(fs, item) for item in fs.list(path))
    listed = filesystem_tools(fs).call("ls", {}, context=ToolContext(filesystem=fs)).message
    assert "link            15  to-file -> a file" in listed
    assert "link             -  dangling -> nothing (dangling)" in listed


@pytest.mark.parametrize(
    ("edits", "lines"),
    [
        # each edit's changed bytes, moved along by the edits after it
        ([("l1\n", "L1\n"), ("l10\n", "L10\n")], ((1, 1), (10, 10))),
        ([("l2\n", "l2\nnew\nnew\n"), ("l9", "L9")], ((3, 4), (11, 11))),
        ([("l3\nl4\n", ""), ("l8", "L8")], ((3, 2), (6, 6))),  # lines removed before 3
        ([("l5", "L5"), ("L5", "LL5")], ((5, 5),)),  # the second edits the first
        ([("l1\n", "x1\n"), ("\nl", "\nm")], ((1, 10),)),  # replace_all below: every line
        ([("l6\nl7", "l6 l7")], ((6, 6),)),  # two lines become one
    ],
)
def test_multi_edit_reports_the_lines_it_changed(
    edits: list[tuple[str, str]], lines: tuple[tuple[int, int], ...]
) -> None:
    fs = InMemoryFilesystem()
    fs.write("t.txt", "".join(f"l{i}\n" for i in range(1, 11)))
    specs = [
        {"old_string": old, "new_string": new, "replace_all": old == "\nl"} for old, new in edits
    ]
    result = filesystem_tools(fs).call(
        "multi_edit", {"path": "t.txt", "edits": specs}, context=ToolContext(filesystem=fs)
    )
    assert result.success, result.message
    assert isinstance(result.value, MultiEdit)
    assert result.value.lines == lines
