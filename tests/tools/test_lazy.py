"""``import workspacefs.tools`` loads nothing heavy; serving over stdio never loads the MCP
SDK, and ``create_server`` (an SDK ``Server``) loads it on use."""

from __future__ import annotations

from support.interpreter import python

HEAVY = ("mcp", "anyio", "starlette", "pyfuse3", "pygit2", "trio")


def test_tools_import_is_light_and_the_server_loads_on_use() -> None:
    out = python(
        "import sys, workspacefs.tools as t\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "from workspacefs.tools import serve_stdio\n"
        "print('mcp' in sys.modules, 'anyio' in sys.modules, callable(serve_stdio))\n"
        "server = t.create_server\n"
        "print('mcp' in sys.modules, 'create_server' in dir(t))\n"
    )
    light, serving, loaded = out.splitlines()
    assert light == "[]"
    assert serving == "False False True"
    assert loaded == "True True"
