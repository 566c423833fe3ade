"""Blame with real containers: two Podman containers on one mount and tool calls in
between, each file blamed on the right command or call, through a restore and a git
persist/load round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspacefs import BlameEntry, git
from workspacefs.sandbox import PodmanSandbox, shell_tool
from workspacefs.tools import ToolContext, filesystem_tools

from .conftest import podman

pytestmark = pytest.mark.container


def who(entries: list[BlameEntry]) -> list[list[tuple[object, ...]]]:
    """Per change, newest first: each cause's call, command (as run) and container."""
    return [
        [(c.tool, c.call_id, c.label, c.command[-1:], c.container) for c in entry.causes]
        for entry in entries
    ]


def test_two_containers_and_tool_calls_each_blamed_right(
    sandbox: PodmanSandbox, tiny_image: str, tmp_path: Path
) -> None:
    fs = sandbox.filesystem
    tools = filesystem_tools(fs, blame=True)
    tools.add(shell_tool(sandbox))

    def call(tool: str, call_id: str, **arguments: object) -> str:
        result = tools.call(tool, arguments, context=ToolContext(filesystem=fs, call_id=call_id))
        assert result.success, result.message
        return result.message

    own = podman("inspect", "--format={{.Id}}", sandbox.name).stdout.strip()
    call("write_file", "t1", path="spec.md", content="# spec\n")
    call("shell", "t2", command="echo gen > gen.txt")
    assert sandbox.exec("printf log > build.log").exit_code == 0  # no tool call: exec-<n>
    cid = tmp_path / "other.cid"
    other = podman(
        "run",
        "--rm",
        f"--cidfile={cid}",
        "--network=none",
        f"--volume={sandbox.mountpoint}:/workspace",
        tiny_image,
        "sh",
        "-c",
        "echo other > /workspace/other.txt; echo more >> /workspace/spec.md",
    )
    assert other.returncode == 0, other.stderr
    second = cid.read_text().strip()
    assert len({own, second}) == 2
    call("edit_file", "t3", path="gen.txt", old_string="gen", new_string="generated")
    end = fs.snapshot(tag="end")

    expected: dict[str, list[list[tuple[object, ...]]]] = {
        "spec.md": [
            [
                (
                    None,
                    None,
                    None,
                    ("echo other > /workspace/other.txt; echo more >> /workspace/spec.md",),
                    second,
                )
            ],
            [("write_file", "t1", None, (), None)],
        ],
        "gen.txt": [
            [("edit_file", "t3", None, (), None)],
            [("shell", "t2", "echo gen > gen.txt", ("echo gen > gen.txt",), own)],
        ],
        "build.log": [
            [(None, "exec-2", "printf log > build.log", ("printf log > build.log",), own)]
        ],
        "other.txt": [
            [
                (
                    None,
                    None,
                    None,
                    ("echo other > /workspace/other.txt; echo more >> /workspace/spec.md",),
                    second,
                )
            ]
        ],
    }
    for path, causes in expected.items():
        assert who(fs.blame(path)) == causes, path
    for entry in fs.blame("gen.txt") + fs.blame("other.txt"):
        for cause in entry.causes:
            assert cause.kind == ("process" if cause.container else "call")
    message = call("blame", "t4", path="gen.txt")
    assert "edit_file call t3" in message
    assert "shell call t2 (echo gen > gen.txt) pid" in message
    assert f"in container {own[:12]}" in message

    # A restored version brings its attribution back.
    after_shell = next(s for s in fs.snapshots() if s.tag == "exec-1-after")
    sandbox.restore(after_shell)
    assert who(fs.blame("gen.txt")) == expected["gen.txt"][1:]
    assert fs.blame("other.txt") == []
    sandbox.restore(end)
    for path, causes in expected.items():
        assert who(fs.blame(path)) == causes, path

    # So does a git persist/load round trip.
    repo = tmp_path / "snapshots.git"
    git.persist(fs, end, repo)
    loaded = git.load(repo, "end", workspace=fs.workspace_id)
    for path, causes in expected.items():
        assert who(loaded.blame(path)) == causes, path
