"""Access rules in a real Podman container on the mount: each door a shell command opens
refused with the errno's usual words, the tree unchanged, and the denial recorded with
the container, the process and the tool call it ran for."""

from __future__ import annotations

import pytest

from support.rules import picture
from workspacefs import Rule
from workspacefs.sandbox import PodmanSandbox, shell_tool
from workspacefs.tools import ToolContext, filesystem_tools

from .conftest import podman

pytestmark = pytest.mark.container

# (command, what the shell says, the denial's path)
DOORS = [
    ("echo x > .git/config", "Permission denied", ".git/config"),
    # Not the shell's builtin echo, which words every write error as "I/O error".
    ("/bin/echo x >> .git/config", "Permission denied", ".git/config"),
    ("touch .git/new", "Permission denied", ".git/new"),
    ("rm .git/config", "Permission denied", ".git/config"),
    ("rm -r .git", "Permission denied", ".git/config"),
    ("mv .git/config config", "Permission denied", ".git/config"),
    ("mv src/app.py .git/app.py", "Permission denied", ".git/app.py"),
    ("chmod 600 .git/config", "Permission denied", ".git/config"),
    ("ln -s /etc .git/etc", "Permission denied", ".git/etc"),
    ("/usr/bin/printf 0123456789 >> logs/a.log", "Disk quota exceeded", "logs/a.log"),
    ("echo mine > .env", "Permission denied", ".env"),
]


def test_container_doors(sandbox: PodmanSandbox) -> None:
    fs = sandbox.filesystem
    fs.write(".git/config", "[core]\n")
    fs.write(".env", "TOKEN=hunter2\n")
    fs.write("src/app.py", "print(1)\n")
    fs.write("logs/a.log", "0123456789")
    fs.rules.set([Rule(".git"), Rule(".env", "hidden"), Rule("logs/**", "quota", quota=16)])
    tools = filesystem_tools(fs)
    tools.add(shell_tool(sandbox))
    container = podman("inspect", "--format={{.Id}}", sandbox.name).stdout.strip()
    before = picture(fs)
    for number, (command, said, path) in enumerate(DOORS):
        call_id = f"toolu_{number}"
        seen = len(fs.denials())
        result = tools.call(
            "shell", {"command": command}, context=ToolContext(filesystem=fs, call_id=call_id)
        )
        assert said in result.message, (command, result.message)
        assert picture(fs) == before, command
        denials = fs.denials()[seen:]
        assert denials, command
        assert {d.path for d in denials} == {path}, (command, denials)
        for denial in denials:
            cause = denial.cause
            assert cause is not None
            assert (cause.tool, cause.call_id, cause.container) == ("shell", call_id, container)
            assert cause.pid is not None
    listing = sandbox.exec("ls -a; cat .env; grep -rl TOKEN . ; true")
    assert ".env" not in listing.stdout.split()
    assert "hunter2" not in listing.stdout
    assert "No such file" in listing.stderr


def test_a_shell_rule_binds_the_container_not_the_other_tools(sandbox: PodmanSandbox) -> None:
    fs = sandbox.filesystem
    fs.write("tests/test_app.py", "assert True\n")
    fs.rules.set([Rule("tests/**", tool="shell")])
    tools = filesystem_tools(fs)
    tools.add(shell_tool(sandbox))
    context = ToolContext(filesystem=fs, call_id="toolu_1")
    refused = tools.call(
        "shell", {"command": "echo 'assert False' > tests/test_app.py"}, context=context
    )
    assert "Permission denied" in refused.message
    assert fs.read("tests/test_app.py").content == "assert True\n"
    edit = {"path": "tests/test_app.py", "old_string": "True", "new_string": "1 == 1"}
    assert tools.call("edit_file", edit, context=context).success
    assert sandbox.exec("cat tests/test_app.py").stdout == "assert 1 == 1\n"
