"""Writes through a real mount are blamed on the process that made them; API calls in
between on their own cause. ``RequestCauses`` is also checked on a /proc of files."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from support.command_lines import SECRETS
from workspacefs import Cause, attributed
from workspacefs import git as wgit
from workspacefs.fs import CAUSE_VARIABLE
from workspacefs.fuse import RequestCauses
from workspacefs.tree import Tree

from .conftest import Mounted

TOOL = Cause.call("write_file", "toolu_1")


def run(*argv: str, env: dict[str, str] | None = None, cwd: str | None = None) -> int:
    """Run ``argv`` to completion; its pid."""
    process = subprocess.Popen(argv, env=env, cwd=cwd)
    assert process.wait(timeout=60) == 0
    return process.pid


def test_each_file_names_the_process_or_call_that_wrote_it(mounted: Mounted) -> None:
    shell = run("sh", "-c", f"echo one > {mounted.path('one.txt')}")
    with attributed(TOOL):
        mounted.fs.write("api.txt", "from the API\n")
    told = {**os.environ, CAUSE_VARIABLE: Cause.call("shell", "toolu_2", "make").environment()}
    script = "import sys; open(sys.argv[1], 'a').write('two\\n')"
    python = run(sys.executable, "-c", script, mounted.path("two.txt"), env=told)
    mounted.fs.write("plain.txt", "no cause in effect\n")
    mover = run("mv", mounted.path("one.txt"), mounted.path("moved.txt"))

    (one,) = mounted.fs.blame("moved.txt")
    assert [(c.pid, c.command[0], c.uid) for c in one.causes] == [
        (shell, "sh", 0),
        (mover, "mv", 0),
    ]
    (api,) = mounted.fs.blame("api.txt")
    assert api.causes == (TOOL,)
    (two,) = mounted.fs.blame("two.txt")
    (cause,) = two.causes
    assert (cause.pid, cause.command[1:]) == (python, ("-c", script, mounted.path("two.txt")))
    assert (cause.tool, cause.call_id, cause.label) == ("shell", "toolu_2", "make")
    assert cause.container is None  # not in a container: no libpod-/docker- cgroup
    (plain,) = mounted.fs.blame("plain.txt")
    assert plain.causes == ()


def test_a_process_saying_nested_junk_is_blamed_as_itself(mounted: Mounted) -> None:
    """A process's word is a hint: JSON nested deeper than a parser recurses is ignored,
    and its writes go through."""
    deep = "[" * 5000 + "]" * 5000
    writer = run("sh", "-c", f"echo x > {mounted.path('deep.txt')}", env={CAUSE_VARIABLE: deep})
    assert mounted.fs.read("deep.txt").content == "x\n"
    (entry,) = mounted.fs.blame("deep.txt")
    (cause,) = entry.causes
    assert (cause.pid, cause.command[0], cause.tool) == (writer, "sh", None)


def test_a_thread_is_blamed_as_its_process_and_a_user_by_uid(mounted: Mounted) -> None:
    script = (
        "import sys, threading\n"
        "t = threading.Thread(target=lambda: open(sys.argv[1], 'w').write('x'))\n"
        "t.start(); t.join()\n"
    )
    pid = run(sys.executable, "-c", script, mounted.path("threaded.txt"))
    (entry,) = mounted.fs.blame("threaded.txt")
    assert [c.pid for c in entry.causes] == [pid]  # the process, not the thread id
    os.chmod(mounted.path(""), 0o777)
    # Started in the mount: the temp directories above it are closed to others.
    nobody = run(
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "sh",
        "-c",
        "echo n > nobody.txt",
        cwd=mounted.path(""),
    )
    (entry,) = mounted.fs.blame("nobody.txt")
    assert [(c.pid, c.uid) for c in entry.causes] == [(nobody, 65534)]


def test_attribution_off_blames_nobody(mounted: Mounted) -> None:
    mounted.fs.attribution = False
    run("sh", "-c", f"echo off > {mounted.path('off.txt')}")
    mounted.fs.attribution = True
    run("sh", "-c", f"echo on > {mounted.path('on.txt')}")
    assert [e.causes for e in mounted.fs.blame("off.txt")] == [()]
    assert [len(e.causes) for e in mounted.fs.blame("on.txt")] == [1]


def test_persisted_history_holds_none_of_the_writers_secrets(
    mounted: Mounted, tmp_path: Path
) -> None:
    """Processes whose command lines (and sandbox calls' labels) carry secrets write
    through the mount; blame shows them masked, and not one secret reaches a git
    object ``persist`` writes (``push`` would send them all)."""
    for index, (argv, _) in enumerate(SECRETS):
        out = mounted.path(f"out-{index}.txt")
        call = Cause.call("shell", f"toolu_{index}", shlex.join(argv)).environment()
        # ``sh -c SCRIPT ARGV...``: the process's command line holds the whole of argv.
        run("sh", "-c", 'printf %s "$0" > "$OUT"', *argv, env={"OUT": out, CAUSE_VARIABLE: call})
    (first,) = mounted.fs.blame("out-0.txt")
    (cause,) = first.causes
    assert cause.command[:4] == ("sh", "-c", 'printf %s "$0" > "$OUT"', "curl")
    assert "Authorization: ***" in cause.command
    assert cause.label is not None
    assert "'Authorization: ***'" in cause.label
    mounted.fs.snapshot(tag="written")
    repo = tmp_path / "history.git"
    wgit.persist(mounted.fs, mounted.fs.snapshots()[-1], repo)
    objects = subprocess.run(
        ["git", f"--git-dir={repo}", "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    assert b"Authorization: ***" in objects  # the history is there, masked
    leaked = [s for _, secrets in SECRETS for s in secrets if s.encode() in objects]
    assert leaked == []


def test_full_command_lines_through_the_mount_when_the_workspace_asks(mounted: Mounted) -> None:
    mounted.fs.blame_full_commands = True
    argv, secrets = SECRETS[0]
    run("sh", "-c", 'printf x > "$OUT"', *argv, env={"OUT": mounted.path("full.txt")})
    (entry,) = mounted.fs.blame("full.txt")
    assert entry.causes[0].command[3:] == argv
    assert secrets[0] in " ".join(entry.causes[0].command)


# -- RequestCauses on a /proc of files ---------------------------------------------------

PODMAN = "0::/machine.slice/libpod-" + "ab" * 32 + ".scope/container\n"
PODMAN_CGROUPFS = "4:memory:/libpod_parent/libpod-" + "cd" * 32 + "\n"
DOCKER = "0::/system.slice/docker-" + "ef" * 32 + ".scope\n"
CONMON = "0::/machine.slice/libpod-conmon-" + "ab" * 32 + ".scope\n"


def fake_process(
    proc: Path,
    pid: int,
    *,
    started: int,
    tgid: int | None = None,
    argv: tuple[str, ...] = ("cat",),
    cgroup: str = "0::/user.slice\n",
    environ: dict[str, str] | None = None,
) -> None:
    """What /proc/<pid> shows of a thread, written as files."""
    where = proc / str(pid)
    where.mkdir(parents=True, exist_ok=True)
    fields = ["S", "1"] + ["0"] * 17 + [str(started), "0"]
    (where / "stat").write_text(f"{pid} (a (weird) name) {' '.join(fields)}\n")
    (where / "status").write_text(f"Name:\tx\nTgid:\t{tgid or pid}\nPid:\t{pid}\n")
    (where / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    (where / "cgroup").write_text(cgroup)
    env = environ or {}
    (where / "environ").write_bytes(b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))


@pytest.mark.parametrize(
    ("cgroup", "container"),
    [
        (PODMAN, "ab" * 32),
        (PODMAN_CGROUPFS, "cd" * 32),
        (DOCKER, "ef" * 32),
        (CONMON, None),
        ("0::/user.slice/user-0.slice/session-1.scope\n", None),
    ],
)
def test_the_container_comes_from_the_cgroup(
    tmp_path: Path, cgroup: str, container: str | None
) -> None:
    fake_process(tmp_path, 10, started=5, cgroup=cgroup)
    assert RequestCauses(Tree(), proc=str(tmp_path)).cause(10, 0).container == container


def test_a_reused_pid_is_told_apart_by_its_start_time(tmp_path: Path) -> None:
    causes = RequestCauses(Tree(), proc=str(tmp_path), trust=0)
    fake_process(tmp_path, 10, started=100, argv=("make",))
    first = causes.cause(10, 0)
    assert causes.cause(10, 0) is first  # the same process: the cached cause
    fake_process(tmp_path, 10, started=900, argv=("rm", "-rf", "x"))  # another process
    second = causes.cause(10, 0)
    assert (first.command, second.command) == (("make",), ("rm", "-rf", "x"))
    assert causes.cause(10, 1000).uid == 1000  # another user: described again


def test_threads_are_their_process_and_the_cache_is_bounded(tmp_path: Path) -> None:
    call = Cause.call("shell", "toolu_9", "pytest -q")
    fake_process(
        tmp_path,
        20,
        started=7,
        argv=("python", "-m", "pytest"),
        environ={"HOME": "/root", CAUSE_VARIABLE: call.environment()},
    )
    fake_process(tmp_path, 21, started=8, tgid=20)
    causes = RequestCauses(Tree(), proc=str(tmp_path), capacity=2)
    thread = causes.cause(21, 0)
    assert (thread.pid, thread.command) == (20, ("python", "-m", "pytest"))
    assert (thread.tool, thread.call_id, thread.label) == ("shell", "toolu_9", "pytest -q")
    for pid in range(30, 40):
        fake_process(tmp_path, pid, started=pid)
        causes.cause(pid, 0)
    assert len(causes) == 2
    gone = causes.cause(99, 5)  # no such process: still a cause, with what the kernel said
    assert (gone.pid, gone.command, gone.uid) == (99, (), 5)
    assert causes.cause(0, 3) == Cause(uid=3)  # a caller outside our pid namespace
    junk = {CAUSE_VARIABLE: json.dumps({"tool": 1})}
    fake_process(tmp_path, 50, started=1, environ=junk)
    assert causes.cause(50, 0).tool is None
