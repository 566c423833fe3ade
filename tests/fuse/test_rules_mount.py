"""Access rules through a real mount: every door the kernel opens, refused with the
errno a process expects, nothing changed (the tree and the kernel's view of it), and
the denial recorded with the process that tried."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.rules import picture
from workspacefs import Cause, InMemoryFilesystem, Rule, mount
from workspacefs.fs import CAUSE_VARIABLE
from workspacefs.fuse._features import OPEN_FREE

from .conftest import Mounted
from .treestate import tree_state

READ_ONLY = Rule(".git")
PEM = Rule("**/*.pem")
HIDDEN = Rule(".env", "hidden")
QUOTA = Rule("logs/**", "quota", quota=16)


def fill(fs: InMemoryFilesystem) -> None:
    fs.write(".git/config", "[core]\n")
    fs.mkdir(".git/refs")
    fs.write(".env", "TOKEN=hunter2\n")
    fs.write("src/app.py", "print(1)\n")
    fs.write("src/keys/server.pem", "KEY\n")
    fs.write("logs/a.log", "0123456789")


def _write(path: str, data: bytes, flags: int = os.O_WRONLY) -> None:
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


@pytest.fixture(params=[True, False], ids=["open-free", "opens"])
def either(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Mounted]:
    """A mount that opens files without requests (the patched pyfuse3), and one that
    is asked for every open (where a rule refuses an open for writing itself)."""
    if request.param and not OPEN_FREE:
        pytest.skip("open-free mounts need the patched pyfuse3 (scripts/setup.sh)")
    fs = InMemoryFilesystem(mount_point="/workspace")
    root = tmp_path / "mnt"
    root.mkdir()
    with mount(fs, root, allow_other=True, open_free=request.param) as handle:
        yield Mounted(fs, root, handle)


# (name, rule, door(m), path the denial names, actions accepted, errno)
Door = Callable[[Mounted], object]
DOORS: list[tuple[str, Rule, Door, str, set[str], int]] = [
    (
        "write",
        READ_ONLY,
        lambda m: _write(m.path(".git/config"), b"x"),
        ".git/config",
        {"open", "write"},
        errno.EACCES,
    ),
    (
        "truncating open",
        READ_ONLY,
        lambda m: _write(m.path(".git/config"), b"x", os.O_WRONLY | os.O_TRUNC),
        ".git/config",
        {"open", "truncate"},
        errno.EACCES,
    ),
    (
        "append",
        READ_ONLY,
        lambda m: _write(m.path(".git/config"), b"x", os.O_WRONLY | os.O_APPEND),
        ".git/config",
        {"open", "write"},
        errno.EACCES,
    ),
    (
        "create in",
        READ_ONLY,
        lambda m: _write(m.path(".git/new"), b"x", os.O_WRONLY | os.O_CREAT),
        ".git/new",
        {"create"},
        errno.EACCES,
    ),
    (
        "mkdir in",
        READ_ONLY,
        lambda m: os.mkdir(m.path(".git/x")),
        ".git/x",
        {"mkdir"},
        errno.EACCES,
    ),
    (
        "unlink",
        READ_ONLY,
        lambda m: os.unlink(m.path(".git/config")),
        ".git/config",
        {"unlink"},
        errno.EACCES,
    ),
    (
        "rmdir",
        READ_ONLY,
        lambda m: os.rmdir(m.path(".git/refs")),
        ".git/refs",
        {"rmdir"},
        errno.EACCES,
    ),
    (
        "rename from",
        READ_ONLY,
        lambda m: os.rename(m.path(".git/config"), m.path("cfg")),
        ".git/config",
        {"rename"},
        errno.EACCES,
    ),
    (
        "rename into",
        READ_ONLY,
        lambda m: os.rename(m.path("src/app.py"), m.path(".git/app.py")),
        ".git/app.py",
        {"rename"},
        errno.EACCES,
    ),
    (
        "rename over",
        READ_ONLY,
        lambda m: os.rename(m.path("src/app.py"), m.path(".git/config")),
        ".git/config",
        {"rename"},
        errno.EACCES,
    ),
    (
        "rename holder",
        PEM,
        lambda m: os.rename(m.path("src"), m.path("lib")),
        "src/keys/server.pem",
        {"rename"},
        errno.EACCES,
    ),
    (
        "chmod",
        READ_ONLY,
        lambda m: os.chmod(m.path(".git/config"), 0o600),
        ".git/config",
        {"chmod"},
        errno.EACCES,
    ),
    (
        "chown",
        READ_ONLY,
        lambda m: os.chown(m.path(".git/config"), 1, 1),
        ".git/config",
        {"chown"},
        errno.EACCES,
    ),
    (
        "utime",
        READ_ONLY,
        lambda m: os.utime(m.path(".git/config"), (1, 1)),
        ".git/config",
        {"setattr"},
        errno.EACCES,
    ),
    (
        "truncate",
        READ_ONLY,
        lambda m: os.truncate(m.path(".git/config"), 0),
        ".git/config",
        {"truncate"},
        errno.EACCES,
    ),
    (
        "setxattr",
        READ_ONLY,
        lambda m: os.setxattr(m.path(".git/config"), "user.x", b"1"),
        ".git/config",
        {"setxattr"},
        errno.EACCES,
    ),
    (
        "link from",
        READ_ONLY,
        lambda m: os.link(m.path(".git/config"), m.path("cfg")),
        ".git/config",
        {"link"},
        errno.EACCES,
    ),
    (
        "link into",
        READ_ONLY,
        lambda m: os.link(m.path("src/app.py"), m.path(".git/app")),
        ".git/app",
        {"link"},
        errno.EACCES,
    ),
    (
        "symlink in",
        READ_ONLY,
        lambda m: os.symlink("/etc", m.path(".git/l")),
        ".git/l",
        {"symlink"},
        errno.EACCES,
    ),
    (
        "mkfifo in",
        READ_ONLY,
        lambda m: os.mkfifo(m.path(".git/fifo")),
        ".git/fifo",
        {"mknod"},
        errno.EACCES,
    ),
    (
        "hidden create",
        HIDDEN,
        lambda m: _write(m.path(".env"), b"x", os.O_WRONLY | os.O_CREAT),
        ".env",
        {"create"},
        errno.EACCES,
    ),
    (
        "hidden rename into",
        HIDDEN,
        lambda m: os.rename(m.path("src/app.py"), m.path(".env")),
        ".env",
        {"rename"},
        errno.EACCES,
    ),
    (
        "quota append",
        QUOTA,
        lambda m: _write(m.path("logs/a.log"), b"x" * 7, os.O_WRONLY | os.O_APPEND),
        "logs/a.log",
        {"write"},
        errno.EDQUOT,
    ),
    (
        "quota rename into",
        QUOTA,
        lambda m: os.rename(m.path("src"), m.path("logs/src")),
        "logs/src",
        {"rename"},
        errno.EDQUOT,
    ),
    (
        "quota truncate up",
        QUOTA,
        lambda m: os.truncate(m.path("logs/a.log"), 17),
        "logs/a.log",
        {"truncate"},
        errno.EDQUOT,
    ),
]


@pytest.mark.parametrize(
    ("rule", "door", "path", "actions", "code"),
    [d[1:] for d in DOORS],
    ids=[d[0] for d in DOORS],
)
def test_every_mount_door_refuses(
    either: Mounted, rule: Rule, door: Door, path: str, actions: set[str], code: int
) -> None:
    mounted = either
    fs = mounted.fs
    fill(fs)
    fs.rules.set([rule])
    os.listdir(mounted.root)  # the kernel knows the entries (and caches them)
    before, seen = picture(fs), tree_state(mounted.root)
    with pytest.raises(OSError) as caught:
        door(mounted)
    assert caught.value.errno == code
    assert picture(fs) == before
    assert tree_state(mounted.root) == seen  # the kernel's view: pages, entries, modes
    (denial,) = fs.denials()
    assert (denial.path, denial.rule, denial.errno) == (path, rule, code)
    assert denial.action in actions
    assert denial.cause is not None
    assert denial.cause.pid == os.getpid()
    assert denial.cause.uid == os.getuid()


def test_hidden_paths_are_not_there(mounted: Mounted) -> None:
    fs = mounted.fs
    fill(fs)
    snapshot = fs.snapshot(tag="before")
    # Cached by the kernel before the rule comes (entries stay 300 s): in the tree and
    # in a snapshot, whose entries no change of the tree's invalidates.
    assert os.stat(mounted.path(".env"))
    assert os.stat(mounted.path(".snapshots/before/.env"))
    fs.rules.set([HIDDEN, Rule("src/keys", "hidden")])
    for path in (".env", "src/keys", "src/keys/server.pem", ".snapshots/before/.env"):
        with pytest.raises(FileNotFoundError):
            os.stat(mounted.path(path))
    with pytest.raises(FileNotFoundError):
        Path(mounted.path(".env")).read_text()
    assert ".env" not in os.listdir(mounted.root)
    assert os.listdir(mounted.path("src")) == ["app.py"]
    assert ".env" not in os.listdir(mounted.path(".snapshots/before"))
    found = {
        os.path.relpath(os.path.join(top, name), mounted.root)
        for top, dirs, files in os.walk(mounted.root)
        for name in dirs + files
    }
    assert found == {".git", ".git/config", ".git/refs", "src", "src/app.py", "logs", "logs/a.log"}
    grep = subprocess.run(
        ["grep", "-r", "-l", "TOKEN\\|KEY", mounted.root], capture_output=True, text=True
    )
    assert grep.stdout == ""
    os.symlink(".env", mounted.path("env-link"))
    with pytest.raises(FileNotFoundError):
        Path(mounted.path("env-link")).read_text()
    fs.rules.clear()  # the kernel's negative entries go with the rule
    assert Path(mounted.path(".env")).read_text() == "TOKEN=hunter2\n"
    assert "server.pem" in os.listdir(mounted.path("src/keys"))
    del snapshot


def test_a_tools_rules_bind_its_processes(mounted: Mounted) -> None:
    """A rule for ``shell`` binds a process the sandbox started for a shell call (its
    ``WORKSPACEFS_CAUSE``), not any other."""
    fs = mounted.fs
    fill(fs)
    fs.rules.set([Rule("src/**", tool="shell")])
    target = mounted.path("src/app.py")
    told = {**os.environ, CAUSE_VARIABLE: Cause.call("shell", "toolu_9").environment()}
    script = "import os, sys; os.write(os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND), b'x')"
    refused = subprocess.run(
        [sys.executable, "-c", script, target], env=told, capture_output=True, text=True
    )
    assert refused.returncode != 0
    assert "PermissionError" in refused.stderr
    (denial,) = fs.denials()
    assert denial.cause is not None
    assert (denial.cause.tool, denial.cause.call_id) == ("shell", "toolu_9")
    assert fs.read("src/app.py").content == "print(1)\n"
    subprocess.run([sys.executable, "-c", script, target], check=True)  # no tool: allowed
    assert fs.read("src/app.py").content == "print(1)\nx"


def test_read_only_fork_on_the_mount(mounted: Mounted) -> None:
    fs = mounted.fs
    fill(fs)
    fork = fs.fork()
    fork.rules.add(Rule("**"))
    path = Path(mounted.handle.add_fork("review", fork))
    before = picture(fork)
    for door in (
        lambda: (path / "new.txt").write_text("x"),
        lambda: (path / "src/app.py").write_text("x"),
        lambda: os.chmod(path, 0o777),
        lambda: os.unlink(path / "src/app.py"),
    ):
        with pytest.raises(OSError) as caught:
            door()
        assert caught.value.errno == errno.EROFS
    assert picture(fork) == before
    assert [d.scope for d in fork.denials()] == ["fork"] * 4
    (Path(mounted.root) / "src/app.py").write_text("print(2)\n")  # the workspace writes on
    fs.rules.add(READ_ONLY)  # and its rules bind the fork served too
    assert fork.rules.in_force == (READ_ONLY, Rule("**"))


def test_a_tools_hidden_paths_on_the_mount(mounted: Mounted) -> None:
    """Hidden from a ``shell`` call's processes, shown to others: nothing the kernel
    caches from one caller's lookup answers the other's, and listings (whose requests
    name no caller) leave it out for everyone."""
    fs = mounted.fs
    fill(fs)
    fs.rules.set([Rule(".env", "hidden", tool="shell")])
    told = {**os.environ, CAUSE_VARIABLE: Cause.call("shell", "toolu_3").environment()}
    path = mounted.path(".env")

    def shell_reads() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["cat", path], env=told, capture_output=True, text=True)

    for _ in range(2):  # each in either order: the other's answer is never cached
        assert Path(path).read_text() == "TOKEN=hunter2\n"
        refused = shell_reads()
        assert refused.returncode != 0
        assert "No such file" in refused.stderr
    assert ".env" not in os.listdir(mounted.root)
    assert "hunter2" not in shell_reads().stdout
