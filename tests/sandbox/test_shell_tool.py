"""The ``shell`` tool in a tool registry, and the ``PodmanWorkspace`` section."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from workspacefs import HostMount, InMemoryFilesystem
from workspacefs.sandbox import ExecResult, PodmanWorkspace, ShellParams
from workspacefs.tools import ToolContext, UndoableToolset, find_filesystem

pytestmark = pytest.mark.container


@pytest.fixture
def section(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PodmanWorkspace]:
    source = tmp_path_factory.mktemp("project")
    (source / "app.py").write_text("print('hello')\n")
    with PodmanWorkspace(
        [HostMount(str(source), mount_path="/workspace/project")],
        allowed_host_roots=[str(source)],
    ) as workspace:
        yield workspace


def test_the_section_offers_file_snapshot_and_shell_tools(section: PodmanWorkspace) -> None:
    assert "shell" in section.tools.names
    assert {"ls", "read_file", "write_file", "snapshot", "restore", "diff"} <= set(
        section.tools.names
    )
    assert find_filesystem([object(), section]) is section.filesystem
    schema = next(s for s in section.tools.anthropic_schemas() if s["name"] == "shell")
    assert schema["input_schema"]["required"] == ["command"]
    assert set(schema["input_schema"]["properties"]) == {"command", "timeout", "cwd", "stdin"}
    assert "no network" in schema["description"].lower()


def test_shell_reports_exit_code_output_and_changed_files(section: PodmanWorkspace) -> None:
    context = section.context()
    result = section.tools.call(
        "shell",
        {"command": "python3 project/app.py && echo made > project/out.txt && rm project/app.py"},
        context=context,
    )
    assert result.success
    assert isinstance(result.value, ExecResult)
    message = result.message
    assert message.startswith("Exit code 0 after ")
    assert "Changed 2 files in the workspace: 1 added, 1 deleted." in message
    assert "added:\n  project/out.txt" in message
    assert "deleted:\n  project/app.py" in message
    assert "stdout (6 bytes):\nhello" in message
    assert "stderr: (empty)" in message

    failed = section.tools.call("shell", {"command": "echo oops >&2; exit 4"}, context=context)
    assert not failed.success
    assert failed.message.startswith("Exit code 4 after ")
    assert "No files in the workspace changed." in failed.message
    assert "stderr (5 bytes):\noops" in failed.message
    assert failed.value is not None
    assert failed.value.exit_code == 4


def test_shell_timeout_notice(section: PodmanWorkspace) -> None:
    result = section.tools.call(
        "shell", {"command": "sleep 60", "timeout": 1}, context=section.context()
    )
    assert not result.success
    assert "timed out after" in result.message
    assert "killed together with every process it started (exit code 137)" in result.message


def test_long_output_is_cut_for_the_model(section: PodmanWorkspace) -> None:
    result = section.tools.call("shell", {"command": "seq 1 200000"}, context=section.context())
    assert result.success
    total = len("".join(f"{n}\n" for n in range(1, 200_001)))
    assert f"stdout ({total:,} bytes):\n1\n2\n3\n" in result.message
    assert result.message.count("bytes of output cut") == 1
    assert len(result.message) < 40_000
    assert result.message.endswith("\n199999\n200000\nstderr: (empty)")


def test_bad_arguments_and_another_workspace_are_refused(section: PodmanWorkspace) -> None:
    bad = section.tools.call("shell", {"command": "ls", "timeout": 0}, context=section.context())
    assert not bad.success
    assert "`timeout`" in bad.message
    other = ToolContext(filesystem=InMemoryFilesystem(mount_point="/workspace"))
    refused = section.tools.call("shell", {"command": "ls"}, context=other)
    assert not refused.success
    assert "sandbox's workspace" in refused.message
    assert ShellParams.model_validate({"command": "x"}).timeout == 120


def test_shell_calls_can_be_undone(section: PodmanWorkspace) -> None:
    toolset = UndoableToolset(section.tools, section.filesystem)
    toolset.call("shell", {"command": "echo one > one.txt"}, call_id="first")
    toolset.call("shell", {"command": "rm -r project && echo two > two.txt"}, call_id="second")
    assert set(toolset.diff("second").deleted) == {"project/app.py"}
    undone = toolset.undo()
    assert undone is not None
    assert undone.call_id == "second"
    listing = section.tools.call("shell", {"command": "ls"}, context=section.context())
    assert listing.value is not None
    assert listing.value.stdout == "one.txt\nproject\n"  # the container sees the undo
