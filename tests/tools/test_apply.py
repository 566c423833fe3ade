"""Handing the work back: a real (git init'ed) project directory is loaded, changed
through the tools (and through the mount, as a container changes it), and applied back;
``git`` in the directory then shows exactly those changes. A directory changed
underneath is refused with the paths named, and nothing is written."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.daemon import cli, cli_mounted, private_runtime
from workspacefs.cli import EXIT_FAILED
from workspacefs.daemon import connect, load_source, parse_source
from workspacefs.fuse import unavailable_reason
from workspacefs.sandbox import preflight
from workspacefs.tools import ToolContext, filesystem_tools

from .test_mcp import SOURCE_ROOT

APP = "def main():\n    print('hello')\n"
UTIL = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
FILES = {
    "src/app.py": APP,
    "src/util.py": UTIL,
    "docs/old.md": "# old\n",
    "README.md": "# project\n",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def project(base: Path) -> Path:
    root = base / "project"
    for path, content in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content)
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    git(root.parent, "init", "-q", str(root))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return root


def tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file below ``root`` but git's own: its mode and content."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(".git/") or relative == ".git" or path.is_dir():
            continue
        info = path.lstat()
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        found[relative] = (info.st_mode, data)
    return found


def status(root: Path) -> set[str]:
    return set(git(root, "status", "--porcelain=v1", "-uall").splitlines())


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("edit_file", {"path": "src/app.py", "old_string": "'hello'", "new_string": "'hi'"}),
    (
        "multi_edit",
        {
            "path": "src/util.py",
            "edits": [
                {"old_string": "return a + b", "new_string": "return b + a"},
                {"old_string": "return a - b", "new_string": "return -(b - a)"},
            ],
        },
    ),
    ("write_file", {"path": "new/feature.py", "content": "FEATURE = True\n"}),
    ("mv", {"source": "docs/old.md", "destination": "docs/new.md"}),
]
CHANGED = {
    " M src/app.py",
    " M src/util.py",
    " D docs/old.md",
    "?? docs/new.md",
    "?? new/feature.py",
}


def _check_applied(root: Path, changed: set[str] = CHANGED) -> None:
    assert status(root) == changed
    assert (root / "src/app.py").read_text() == APP.replace("'hello'", "'hi'")
    assert (root / "src/util.py").read_text() == UTIL.replace("a + b", "b + a").replace(
        "return a - b", "return -(b - a)"
    )
    assert (root / "new/feature.py").read_text() == "FEATURE = True\n"
    assert (root / "docs/new.md").read_text() == "# old\n"
    patch = git(root, "diff", "--", "src/app.py")
    assert "-    print('hello')\n+    print('hi')\n" in patch


# -- the library, on an in-memory workspace ---------------------------------------------


def test_apply_round_trip_in_memory(tmp_path: Path) -> None:
    from workspacefs.cli._apply import handback

    root = project(tmp_path)
    fs = load_source(parse_source(str(root)), "/workspace")
    base = next(s for s in fs.snapshots() if s.tag == "from")
    tools, context = filesystem_tools(fs), ToolContext(filesystem=fs)
    for name, arguments in CALLS:
        result = tools.call(name, arguments, context=context)
        assert result.success, result.message
    dry = handback(fs, base, str(root), dry_run=True)
    assert status(root) == set()  # a dry run writes nothing
    applied = handback(fs, base, str(root))
    assert (
        applied.written
        == dry.written
        == (
            "docs/new.md",
            "new/feature.py",
            "src/app.py",
            "src/util.py",
        )
    )
    assert applied.deleted == ("docs/old.md",)
    _check_applied(root)
    again = handback(fs, base, str(root))  # already there: nothing to write
    assert (again.written, again.deleted) == ((), ())
    assert len(again.unchanged) == 5


def test_a_directory_changed_underneath_is_refused_and_nothing_written(tmp_path: Path) -> None:
    from workspacefs import ContentChangedError
    from workspacefs.cli._apply import handback

    root = project(tmp_path)
    fs = load_source(parse_source(str(root)), "/workspace")
    base = next(s for s in fs.snapshots() if s.tag == "from")
    tools, context = filesystem_tools(fs), ToolContext(filesystem=fs)
    for name, arguments in CALLS:
        assert tools.call(name, arguments, context=context).success
    (root / "src/util.py").write_text("changed underneath\n")  # a path the tools changed too
    (root / "docs/old.md").write_text("# edited\n")  # the workspace moved this one away
    (root / "README.md").write_text("# edited by the user\n")  # only the user touched this
    before = tree(root)
    with pytest.raises(ContentChangedError) as refused:
        handback(fs, base, str(root))
    assert refused.value.strerror == (
        "2 paths the workspace changed were changed in the directory too since it was loaded "
        "(docs/old.md, src/util.py); nothing was written"
    )
    assert tree(root) == before


# -- workspacefs mcp --from DIR --apply, driven by the SDK's client ----------------------


def _server(root: Path, errors: Path) -> StdioServerParameters:
    command = [sys.executable, "-m", "workspacefs.cli", "mcp", "--from", str(root), "--apply"]
    line = f"exec {shlex.join(command)} 2>>{shlex.quote(str(errors))}"
    path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
    return StdioServerParameters(command="sh", args=["-c", line], env={"PYTHONPATH": path})


async def _session(server: StdioServerParameters, underneath: Path | None) -> list[bool]:
    async with Client(server, read_timeout_seconds=60) as client:
        errors = []
        for name, arguments in CALLS:
            errors.append((await client.call_tool(name, arguments)).is_error)
        if underneath is not None:
            underneath.write_text("changed underneath\n")
    return errors


def _stderr(errors: Path) -> str:
    for _ in range(200):  # the server finishes its hand-back after the client has gone
        text = errors.read_text() if errors.exists() else ""
        if "workspacefs:" in text:
            return text
        anyio.run(anyio.sleep, 0.05)
    return errors.read_text()


def test_mcp_from_a_directory_applies_the_session_back(tmp_path: Path) -> None:
    root = project(tmp_path)
    errors = tmp_path / "stderr.txt"
    assert anyio.run(_session, _server(root, errors), None) == [False] * len(CALLS)
    text = _stderr(errors)
    assert f"workspacefs: Wrote 4 and removed 1 paths in {root}" in text
    _check_applied(root)


def test_mcp_apply_refused_keeps_the_work_as_a_patch(tmp_path: Path) -> None:
    root = project(tmp_path)
    errors = tmp_path / "stderr.txt"
    anyio.run(_session, _server(root, errors), root / "src/app.py")
    text = _stderr(errors)
    assert (
        "workspacefs: error: not applied: 1 path the workspace changed was changed in the "
        "directory too since it was loaded (src/app.py); nothing was written" in text
    )
    assert status(root) == {" M src/app.py"}  # only the change made underneath
    kept = Path(text.split("the changes are kept in ")[1].split(" ")[0])
    patch = kept.read_text()
    assert "+    print('hi')" in patch
    assert "+FEATURE = True" in patch
    kept.unlink()


# -- workspacefs apply on a running workspace ------------------------------------------


@pytest.mark.fuse
def test_workspacefs_apply_on_a_mounted_workspace(tmp_path: Path) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    root = project(tmp_path)
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with private_runtime(), cli_mounted(mountpoint, root):
        fs = connect(mountpoint)
        try:
            tools, context = filesystem_tools(fs), ToolContext(filesystem=fs)
            for name, arguments in CALLS:
                assert tools.call(name, arguments, context=context).success
            # What a container does through the mount: a script, its mode, a link.
            (mountpoint / "bin").mkdir()
            (mountpoint / "bin/tool.sh").write_text("#!/bin/sh\n")
            (mountpoint / "bin/tool.sh").chmod(0o755)
            (mountpoint / "run.sh").chmod(0o644)
            os.symlink("../src/app.py", mountpoint / "bin/app")
            patch = cli("apply", str(mountpoint), "--patch")
            assert patch.returncode == 0, patch.stderr
            assert "diff --git a/bin/app b/bin/app\nnew file mode 120000" in patch.stdout
            done = cli("apply", str(mountpoint), "--to", str(root))
            assert done.returncode == 0, done.stderr
            assert f"Wrote 7 and removed 1 paths in {root}" in done.stdout
            _check_applied(root, CHANGED | {" M run.sh", "?? bin/app", "?? bin/tool.sh"})
            git(root, "add", "-A")
            summary = git(root, "diff", "--cached", "--summary")
            assert "create mode 100755 bin/tool.sh" in summary
            assert "create mode 120000 bin/app" in summary
            assert "mode change 100755 => 100644 run.sh" in summary
            git(root, "commit", "-qm", "applied")
            # Changed underneath: refused, naming the path, nothing written.
            for path in ("README.md", "other.txt"):
                written = {"path": path, "content": "ws\n"}
                assert tools.call("write_file", written, context=context).success
            (root / "README.md").write_text("user\n")
            before = tree(root)
            refused = cli("apply", str(mountpoint), "--to", str(root))
            assert refused.returncode == EXIT_FAILED
            assert "(README.md); nothing was written" in refused.stderr
            assert tree(root) == before
        finally:
            fs.close()


@pytest.mark.fuse
@pytest.mark.container
def test_apply_brings_back_what_a_container_and_the_tools_changed(tmp_path: Path) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    problems = preflight()
    if problems:
        pytest.skip("Podman sandbox unavailable: " + "; ".join(problems))
    root = project(tmp_path)
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with private_runtime(), cli_mounted(mountpoint, root):
        fs = connect(mountpoint)
        try:
            edit = {"path": "src/app.py", "old_string": "'hello'", "new_string": "'hi'"}
            edited = filesystem_tools(fs).call(
                "edit_file", edit, context=ToolContext(filesystem=fs)
            )
            assert edited.success, edited.message
            script = (
                "echo built > build.txt && chmod 644 run.sh && rm docs/old.md && "
                "mkdir -p bin && ln -s ../src/app.py bin/app"
            )
            ran = cli("run", "--mountpoint", str(mountpoint), "--", "/bin/sh", "-c", script)
            assert ran.returncode == 0, ran.stderr
        finally:
            fs.close()
        done = cli("apply", str(mountpoint), "--to", str(root))
        assert done.returncode == 0, done.stderr
    assert status(root) == {
        " M src/app.py",
        " M run.sh",
        " D docs/old.md",
        "?? bin/app",
        "?? build.txt",
    }
    assert (root / "build.txt").read_text() == "built\n"
    assert os.readlink(root / "bin/app") == "../src/app.py"
    assert "+    print('hi')" in git(root, "diff", "--", "src/app.py")
