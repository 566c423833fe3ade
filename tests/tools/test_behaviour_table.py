"""The tools' behaviour table, run against every backend (memory, host, a host view of
a FUSE mount, a daemon): what an agent meets in a real project, and what it gets.

Each row is a call and what must come of it; a refused call must change nothing.
"""

from __future__ import annotations

import base64
import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workspacefs import InMemoryFilesystem
from workspacefs.daemon import RemoteFilesystem
from workspacefs.tools import TextPage, ToolResult
from workspacefs.tree import ROOT_INO

from .conftest import MakeWorkspace, Workspace
from .test_reads import png

SOURCE = "def f():\n    return 1\n\ndef g():\n    return 1\n"
LINE = b"%08d " + b"x" * 90 + b"\n"  # 100 bytes
BIG_LINES = 524_288  # 50 MiB
IMAGE = png(4, 3)
FILES: dict[str, str | bytes] = {
    "src/m.py": SOURCE,
    "legacy/latin1.txt": "naïve café\nÜber\n".encode("latin-1"),
    "win/utf16.txt": codecs.BOM_UTF16_LE + "wörld ✓\nzwei\n".encode("utf-16-le"),
    "assets/logo.png": IMAGE,
    "bin/tool": bytes(range(256)) * 8,
}


@dataclass(frozen=True)
class Row:
    """One behaviour: a call, and a check of its result."""

    what: str
    tool: str
    arguments: dict[str, Any]
    check: Callable[[ToolResult[Any]], None]
    refused: bool = False


def _has(*parts: str) -> Callable[[ToolResult[Any]], None]:
    def check(result: ToolResult[Any]) -> None:
        for part in parts:
            assert part in result.message, f"{part!r} not in {result.message!r}"

    return check


def _big_first_page(result: ToolResult[Any]) -> None:
    assert result.message.startswith("     1\t00000000 xxx")
    assert "[Showing lines 1-2,000 of a 52,428,800-byte file; more follow" in result.message
    assert 'read_file(path="logs/big.log", offset=2001, limit=2000)' in result.message
    assert len(result.message) < 300_000  # one bounded page


def _big_last_page(result: ToolResult[Any]) -> None:
    assert isinstance(result.value, TextPage)
    assert result.value.lines == (f"{BIG_LINES - 1:08d} " + "x" * 90,)
    assert "[Showing lines 524,288-524,288 of 524,288; end of file.]" in result.message


def _image(result: ToolResult[Any]) -> None:
    assert [(a.mime_type, a.data) for a in result.attachments] == [("image/png", IMAGE)]


def _hex(result: ToolResult[Any]) -> None:
    assert result.message.splitlines()[1].startswith("00000000: 0001 0203 0405 0607")


def _latin1(result: ToolResult[Any]) -> None:
    assert result.message.startswith("     1\tnaïve café\n     2\tÜber")
    assert "Latin-1 (ISO-8859-1)" in result.message


def _utf16(result: ToolResult[Any]) -> None:
    assert result.message.startswith("     1\twörld ✓\n     2\tzwei")
    assert "UTF-16 (little-endian, with BOM)" in result.message


def _base64(result: ToolResult[Any]) -> None:
    assert base64.b64decode(result.message.splitlines()[1]) == IMAGE[:8]


ESCAPE = _has("outside the workspace")
BINARY = _has("it is a binary file", "Use read_bytes to read it")
ROWS = [
    Row(
        "an ambiguous edit is refused, naming every place",
        "edit_file",
        {"path": "src/m.py", "old_string": "return 1", "new_string": "return 2"},
        _has("old_string occurs 2 times (at lines 2, 5)", "replace_all=true"),
        refused=True,
    ),
    Row(
        "a mis-indented edit is refused, pointing at the lines that differ in whitespace",
        "edit_file",
        {"path": "src/m.py", "old_string": "def g():\n  return 1", "new_string": "pass"},
        _has("old_string was not found", "differs only in whitespace is at line 4-5"),
        refused=True,
    ),
    Row(
        "a multi-edit with one ambiguous edit makes none",
        "multi_edit",
        {
            "path": "src/m.py",
            "edits": [
                {"old_string": "def f", "new_string": "def h"},
                {"old_string": "return 1", "new_string": "return 2"},
            ],
        },
        _has("(edit 2 of 2): old_string occurs 2 times", "None of the 2 edits was made"),
        refused=True,
    ),
    Row("a 50 MB file is paged", "read_file", {"path": "logs/big.log"}, _big_first_page),
    Row(
        "a 50 MB file's last page, by line number",
        "read_file",
        {"path": "logs/big.log", "offset": BIG_LINES},
        _big_last_page,
    ),
    Row("Latin-1 text is read", "read_file", {"path": "legacy/latin1.txt"}, _latin1),
    Row("UTF-16 text is read", "read_file", {"path": "win/utf16.txt"}, _utf16),
    Row("a binary file is refused for text", "read_file", {"path": "bin/tool"}, BINARY, True),
    Row("an image is refused for text", "read_file", {"path": "assets/logo.png"}, BINARY, True),
    Row(
        "a binary file is refused for editing",
        "edit_file",
        {"path": "bin/tool", "old_string": "a", "new_string": "b"},
        _has("it is a binary file", "Read it with read_bytes"),
        refused=True,
    ),
    Row("an image is read as image content", "read_bytes", {"path": "assets/logo.png"}, _image),
    Row(
        "an image's bytes as base64",
        "read_bytes",
        {"path": "assets/logo.png", "limit": 8, "format": "base64"},
        _base64,
    ),
    Row("a binary file as a hex dump", "read_bytes", {"path": "bin/tool", "format": "hex"}, _hex),
    Row("a relative escape is refused", "read_file", {"path": "../etc/passwd"}, ESCAPE, True),
    Row("a deep escape is refused", "read_bytes", {"path": "../../etc/passwd"}, ESCAPE, True),
    Row(
        "a write outside is refused",
        "write_file",
        {"path": "src/../../x.txt", "content": "x"},
        ESCAPE,
        refused=True,
    ),
    Row(
        "a move outside is refused",
        "mv",
        {"source": "src/m.py", "destination": "../m.py"},
        ESCAPE,
        refused=True,
    ),
    Row("stat outside is refused", "stat", {"path": "src/../../etc"}, ESCAPE, True),
    Row("a link out is not followed to read", "read_file", {"path": "out/passwd"}, ESCAPE, True),
    Row(
        "a link out is not followed to write",
        "write_file",
        {"path": "out/planted", "content": "x"},
        ESCAPE,
        refused=True,
    ),
]


def _plant_link(ws: Workspace, name: str, target: str) -> None:
    """A symlink made as each backend's own writers make one (the tree, the directory,
    the daemon's mount): the protocol has no verb for it."""
    fs: Any = ws.fs
    if isinstance(fs, InMemoryFilesystem):
        with fs.transaction() as tree:
            tree.symlink(ROOT_INO, name, target)
    elif isinstance(fs, RemoteFilesystem):
        os.symlink(target, os.path.join(fs.mountpoint, name))
    else:
        os.symlink(target, os.path.join(fs.root, name))


def _workspace(make: MakeWorkspace) -> Workspace:
    ws = make(FILES)
    ws.fs.mkdir("logs")
    part = BIG_LINES // 8
    for first in range(0, BIG_LINES, part):  # 6.25 MiB a write: under the write limit
        data = b"".join(LINE % n for n in range(first, first + part))
        ws.fs.write_bytes("logs/big.log", data, mode="append")
    assert ws.fs.stat("logs/big.log").size_bytes == 52_428_800
    _plant_link(ws, "out", "../../../../../../etc")
    return ws


def test_the_behaviour_table(make: MakeWorkspace) -> None:
    ws = _workspace(make)
    source = ws.text("src/m.py")
    failures = []
    for row in ROWS:
        result = ws.call(row.tool, **row.arguments)
        try:
            assert result.success is not row.refused, result.message
            row.check(result)
        except AssertionError as exc:
            failures.append(f"{row.what}: {exc}")
    assert not failures, "\n".join(failures)
    assert ws.text("src/m.py") == source  # every refused edit changed nothing
    assert not ws.fs.exists("x.txt")
    assert not os.path.exists("/etc/planted")
