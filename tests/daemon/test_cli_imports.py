"""Commands that answer from a daemon load a socket client and the output, nothing more.

``workspacefs list``, ``status``, ``snapshot``, ``restore``, ``diff``, ``log``, ``history``,
``rewind``, ``watch`` and ``mcp MOUNTPOINT`` run in a fresh interpreter against a real
daemon; what they loaded is read from ``sys.modules``.
The server, the mount, the sandbox, git, the MCP SDK and the in-memory backend must not
be among it; nor the modules of the other commands, nor rich where a command prints
only lines (``benchmarks/bench_cli.py`` times the commands; this checks the import
graph, which does not depend on how loaded the machine is).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import Daemons
from support.interpreter import child_env, python
from workspacefs.cli._app import COMMANDS
from workspacefs.daemon import connect

NEVER = (
    "pygit2",
    "pyfuse3",
    "trio",
    "anyio",
    "starlette",
    "hypercorn",
    "mcp",
    "pydantic",
    "httpx",
    "re2",
    "xxhash",
    "workspacefs.daemon._server",
    "workspacefs.fuse._mount",
    "workspacefs.sandbox",
    "workspacefs.tools._tool",
    "workspacefs.tools._serving",
    "workspacefs.git._repo",
    "workspacefs.store._durable",
    "workspacefs.fs._memory",
)
"""What no such command loads: the daemon's side (trio, pyfuse3, hypercorn, starlette,
pygit2), the sandbox, the agent tools (their models and handlers: the verb table names
only ``tools.ToolAnswer``, a plain record) and the in-memory backend; httpx, whose
connection layer loads trio and anyio; and pydantic, which typer 0.29 builds every
parameter's coercion with (90 ms a command: the project keeps typer below it)."""


COMMAND_MODULES = sorted({f"workspacefs.cli{module}" for module in COMMANDS.values()})
"""The modules that define the commands: a command loads its own (and those its own
imports), never the others'."""

PROTOCOL_TYPES = (
    "workspacefs.fs._calls",
    "workspacefs.fs._outcomes",
    "workspacefs.fs._space",
    "workspacefs.fs._trials",
)
"""Value types of verbs that only ``history`` and ``rewind`` here call (recorded calls) or
none (merges, space, trials): the verb table loads a verb's types when it is first
called."""


def _loaded(*args: str) -> tuple[int, list[str]]:
    """Run the command ``args`` in a fresh interpreter; its exit status and which
    modules it loaded of ``NEVER``, the command modules, ``PROTOCOL_TYPES`` and rich."""
    watched = [*NEVER, *COMMAND_MODULES, *PROTOCOL_TYPES, "rich"]
    with tempfile.NamedTemporaryFile("r") as report:
        # ``mcp`` hands its stdin and stdout to the daemon: the report goes to a file.
        code = (
            "import json, sys\n"
            "from workspacefs.cli import main\n"
            f"status = main({list(args)!r})\n"
            f"loaded = [m for m in {watched!r} if m in sys.modules]\n"
            f"open({report.name!r}, 'w').write(json.dumps([status, loaded]))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=child_env(),
            check=False,
        )
        assert done.returncode == 0, done.stderr
        status, loaded = json.loads(report.read())
    return status, loaded


def test_the_command_table_names_every_command_and_its_module() -> None:
    out = python(
        "import json, importlib\n"
        "from typer.main import get_command_name\n"
        "from workspacefs.cli import app\n"
        "from workspacefs.cli._app import COMMANDS\n"
        "for module in set(COMMANDS.values()):\n"
        "    importlib.import_module(module, 'workspacefs.cli')\n"
        "print(json.dumps({info.name or get_command_name(info.callback.__name__):\n"
        "                  info.callback.__module__ for info in app.registered_commands}))"
    )
    defined = json.loads(out)
    assert defined == {name: f"workspacefs.cli{module}" for name, module in COMMANDS.items()}


def test_registering_the_commands_loads_none_of_the_layers() -> None:
    out = python(
        "import json, sys\n"
        "import workspacefs.cli\n"
        f"print(sorted(m for m in {NEVER!r} if m in sys.modules))\n"
        "print(json.dumps([m for m in sys.modules if m.startswith('workspacefs.')\n"
        "                  and not m.startswith('workspacefs.cli')]))"
    )
    heavy, layers = out.splitlines()
    assert heavy == "[]"
    # The option defaults the commands show (a start's timeout, a durability window).
    assert set(json.loads(layers)) <= {
        "workspacefs._errors",
        "workspacefs._lazy",
        "workspacefs.daemon",
        "workspacefs.daemon._options",
        "workspacefs.store",
        "workspacefs.store._interval",
    }


@pytest.fixture(scope="module")
def mountpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    manager = Daemons(tmp_path_factory.mktemp("imports"))
    try:
        record = manager.start()
        with connect(record.socket) as fs:
            fs.write("a.txt", "one\n")
            fs.snapshot(tag="base")
            fs.write("a.txt", "two\n")
            fs.snapshot(tag="undo:write_file:c1")  # what records a tool call
        yield record.mountpoint
    finally:
        manager.close()


TABLES = {"list", "log"}
"""The commands here that print a table (through rich); the others print lines."""


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["status", "{mp}"],
        ["snapshot", "{mp}"],
        ["log", "{mp}"],
        ["diff", "{mp}", "base", "--patch"],
        ["restore", "{mp}", "base"],
        ["history", "{mp}"],
        ["rewind", "{mp}", "c1", "--force"],
        ["watch", "{mp}", "*.txt", "--timeout", "0.1"],
        ["mcp", "{mp}"],
    ],
    ids=lambda command: command[0],
)
def test_a_command_on_a_daemon_loads_only_the_client(mountpoint: str, command: list[str]) -> None:
    status, loaded = _loaded(*(arg.format(mp=mountpoint) for arg in command))
    assert status == 0
    own = f"workspacefs.cli{COMMANDS[command[0]]}"
    assert own in loaded
    # Its module's imports: the helpers and option types of commands it shares them with.
    shared = {
        "workspacefs.cli._mounts": {
            "workspacefs.cli._forks",
            "workspacefs.cli._rules",
            "workspacefs.cli._snapshots",
        },
        "workspacefs.cli._rewind": set(),
        "workspacefs.cli._snapshots": set(),
    }.get(own, set())
    others = [m for m in COMMAND_MODULES if m != own and m not in shared]
    assert [m for m in loaded if m in (*NEVER, *others)] == []
    if command[0] not in ("history", "rewind"):
        assert [m for m in loaded if m in PROTOCOL_TYPES] == []
    assert ("rich" in loaded) == (command[0] in TABLES), loaded
    if command[0] == "restore":
        assert Path(mountpoint, "a.txt").read_text() == "one\n"


def test_mount_leaves_the_server_to_the_daemon(tmp_path: Path) -> None:
    # The daemon it starts loads the server, the mount and the store: the command
    # that starts it waits for it, and loading them too only made it slower.
    point = tmp_path / "ws"
    point.mkdir()
    status, loaded = _loaded("mount", str(point), "--durability", "none")
    try:
        assert status == 0
        # Its own command's modules and rich (the spinner) aside: nothing of the server.
        server = [m for m in loaded if not m.startswith("workspacefs.cli") and m != "rich"]
        assert server == []
    finally:
        with connect(point) as fs:
            fs.unmount()
