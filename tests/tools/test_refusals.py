"""Every refusal names only tools that exist: a model told to use a tool it was not
given loses a turn (or makes one up)."""

from __future__ import annotations

import re
from typing import Any

from workspacefs.tools import ToolRegistry, filesystem_tools, input_schema

from .conftest import MakeWorkspace
from .test_reads import png

FILES = {
    "a.txt": "line one\nline two\n",
    "src/m.py": "x = 1\n",
    "blob.bin": bytes(range(256)),
    "huge.png": png(1, 1)[:16] + bytes(4_000_000),
    "latin1.txt": "café\n".encode("latin-1"),
    "joined.txt": "naïve ✓\n".encode() + b"caf\xe9\n",
}

REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("ls", {"path": "a.txt"}),
    ("ls", {"path": "missing"}),
    ("read_file", {"path": "missing.txt"}),
    ("read_file", {"path": "blob.bin"}),
    ("read_file", {"path": "huge.png"}),
    ("read_file", {"path": "src"}),
    ("read_file", {"path": "a.txt", "offset": 99}),
    ("read_file", {"path": "../outside.txt"}),
    ("read_file", {"path": "a.txt", "limit": 0}),
    ("read_file", {"path": "a.txt", "colour": "red"}),
    ("read_bytes", {"path": "huge.png"}),
    ("read_bytes", {"path": "blob.bin", "limit": 1_000_000}),
    ("read_bytes", {"path": "blob.bin", "limit": 100_000, "format": "hex"}),
    ("read_bytes", {"path": "src"}),
    ("write_file", {"path": "a.txt", "content": "x", "mode": "create"}),
    ("write_file", {"path": "src", "content": "x"}),
    ("edit_file", {"path": "a.txt", "old_string": "nowhere", "new_string": "x"}),
    ("edit_file", {"path": "a.txt", "old_string": "line  one", "new_string": "x"}),
    ("edit_file", {"path": "a.txt", "old_string": "line", "new_string": "x"}),
    ("edit_file", {"path": "a.txt", "old_string": "one", "new_string": "one"}),
    ("edit_file", {"path": "blob.bin", "old_string": "a", "new_string": "b"}),
    ("edit_file", {"path": "latin1.txt", "old_string": "café", "new_string": "✓"}),
    ("edit_file", {"path": "joined.txt", "old_string": "caf", "new_string": "x"}),
    ("stat", {"path": "missing"}),
    ("read_files", {"paths": ["missing.txt", "blob.bin", "huge.png"]}),
    ("read_files", {"paths": []}),
    ("multi_edit", {"path": "a.txt", "edits": [{"old_string": "line", "new_string": "x"}]}),
    ("multi_edit", {"path": "a.txt", "edits": [{"old_string": "line  one", "new_string": "x"}]}),
    ("multi_edit", {"path": "blob.bin", "edits": [{"old_string": "a", "new_string": "b"}]}),
    ("multi_edit", {"path": "a.txt", "edits": [{"old": "a"}]}),
    ("mkdir", {"path": "a.txt"}),
    ("mkdir", {"path": "../out"}),
    ("mv", {"source": "a.txt", "destination": "src/m.py"}),
    ("mv", {"source": "missing", "destination": "x"}),
    ("mv", {"source": "src", "destination": "src/inner"}),
    ("glob", {"pattern": "*", "path": "a.txt"}),
    ("grep", {"pattern": "("}),
    ("grep", {"pattern": "x", "path": "missing"}),
    ("rm", {"path": "src"}),
    ("rm", {"path": "missing"}),
    ("restore", {"id_or_tag": "nope"}),
    ("diff", {"from": "nope"}),
    ("no_such_tool", {}),
]

READ_ONLY_REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("write_file", {"path": "b.txt", "content": "x"}),
    ("edit_file", {"path": "a.txt", "old_string": "one", "new_string": "1"}),
    ("rm", {"path": "a.txt"}),
    ("mkdir", {"path": "d"}),
    ("mv", {"source": "a.txt", "destination": "b.txt"}),
    ("multi_edit", {"path": "a.txt", "edits": [{"old_string": "one", "new_string": "1"}]}),
]


def parameters(registry: ToolRegistry) -> set[str]:
    """Parameter names and the values of their choices (``files_with_matches``)."""
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            names.update(node.get("properties", {}))
            names.update(value for value in node.get("enum", ()) if isinstance(value, str))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for tool in registry:
        walk(input_schema(tool.params))
    return names


def named_tools(message: str, allowed: set[str]) -> set[str]:
    """The tool-like names a message mentions: calls (``name(``) and snake_case words
    other than ``allowed`` (parameter names), outside quoted text and paths."""
    text = re.sub(r"\"[^\"]*\"|'[^']*'", '""', message)
    text = re.sub(r"`[^`]*[./][^`]*`", "``", text)
    calls = set(re.findall(r"\b([a-z][a-z0-9_]*)\(", text))
    words = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", text)) - allowed
    return calls | words


def test_the_scan_finds_a_tool_that_does_not_exist() -> None:
    registry = filesystem_tools()
    named = named_tools(
        "read_file shows text only; use the filesystem's read_bytes for raw bytes, or "
        'view_image(path="x_y.png"); `old_string` and `src/my_file.py` are no tools.',
        parameters(registry),
    )
    assert named == {"read_file", "read_bytes", "view_image"}
    assert named - set(registry.names) == {"view_image"}


def _check(registry: ToolRegistry, message: str, call: str) -> None:
    unknown = named_tools(message, parameters(registry)) - set(registry.names)
    assert not unknown, f"{call} names {unknown}, no tools: {message}"


def test_every_refusal_names_registered_tools(make: MakeWorkspace) -> None:
    ws = make(FILES)
    registry = filesystem_tools(ws.fs)
    for name, arguments in REFUSED:
        result = ws.call(name, **arguments)
        assert not result.success, f"{name}({arguments}) succeeded: {result.message}"
        _check(registry, result.message, f"{name}({arguments})")


def test_every_read_only_refusal_names_registered_tools(make: MakeWorkspace) -> None:
    ws = make(FILES, read_only=True)
    registry = filesystem_tools(ws.fs)
    for name, arguments in READ_ONLY_REFUSED:
        result = ws.call(name, **arguments)
        assert not result.success, f"{name}({arguments}) succeeded: {result.message}"
        _check(registry, result.message, f"{name}({arguments})")


def test_every_description_names_registered_tools() -> None:
    registry = filesystem_tools()
    for tool in registry:
        _check(registry, tool.description, f"{tool.name}'s description")
