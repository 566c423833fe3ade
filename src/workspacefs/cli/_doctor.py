"""doctor: is this machine ready, and is anything left behind by a dead daemon?"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Annotated, Literal

import typer

from .._errors import MountedInsideError
from ._app import EXIT_PROBLEMS, JsonOption, app
from ._output import emit_json, stdout

Status = Literal["ok", "warning", "problem", "fixed"]


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report."""

    name: str
    status: Status
    detail: str


def _tool(name: str, *version: str) -> Check:
    path = shutil.which(name)
    if path is None:
        return Check(name, "problem", "not installed (scripts/setup.sh installs it)")
    try:
        out = subprocess.run([path, *version], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(name, "problem", f"{path} does not run: {exc}")
    line = (out.stdout or out.stderr).strip().splitlines()
    return Check(name, "ok" if out.returncode == 0 else "problem", line[0] if line else path)


def _machine_checks() -> list[Check]:
    checks = []
    if not os.path.exists("/dev/fuse"):
        checks.append(Check("/dev/fuse", "problem", "missing (no FUSE kernel module)"))
    elif os.geteuid() != 0 and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        checks.append(Check("/dev/fuse", "problem", "no permission to open it"))
    else:
        checks.append(Check("/dev/fuse", "ok", "present"))
    checks.append(_tool("fusermount3", "--version"))
    checks += _fuse_checks()
    try:
        with open("/etc/fuse.conf", encoding="utf-8") as fuse_conf:
            allowed = any(line.strip() == "user_allow_other" for line in fuse_conf)
    except OSError:
        allowed = False
    if allowed:
        checks.append(Check("user_allow_other", "ok", "set in /etc/fuse.conf"))
    else:
        status: Status = "ok" if os.geteuid() == 0 else "problem"
        why = "root needs none" if status == "ok" else "containers cannot enter your mounts"
        checks.append(Check("user_allow_other", status, f"not in /etc/fuse.conf ({why})"))
    checks.append(_tool("podman", "--version"))
    # Loaded here, not with the command line: the sandbox brings the FUSE layer, git and
    # the tools, which every other command (mcp's start, say) would pay for.
    from ..sandbox import containers_conf, preflight

    conf = containers_conf()
    if os.path.isfile(conf):
        checks.append(Check("podman config", "ok", conf))
    else:
        checks.append(Check("podman config", "problem", f"CONTAINERS_CONF names {conf}: missing"))
    checks += [Check("sandbox", "problem", problem) for problem in preflight()]
    checks.append(_tool("git", "--version"))
    checks.append(_shadow_check())
    return checks


KILLPRIV_LIBFUSE = "3.18.3"
"""The first libfuse that lets the mount take HANDLE_KILLPRIV_V2 (docs/fuse.md, "libfuse")."""


def _fuse_checks() -> list[Check]:
    """Which libfuse the mount uses, and what a trial mount negotiates with the kernel:
    HANDLE_KILLPRIV_V2 and PARALLEL_DIROPS save requests only where libfuse passes them
    on (the build of scripts/setup.sh)."""
    from ..fuse import libfuse_path, libfuse_version, probe_connection, unavailable_reason

    version, library = libfuse_version(), libfuse_path()
    where = f" ({library})" if library else ""
    if version is None:
        libfuse = Check(
            "libfuse", "warning", f"unknown{where}: a stock pyfuse3 (scripts/setup.sh builds one)"
        )
    else:
        libfuse = Check("libfuse", "ok", f"{version}{where}")
    if reason := unavailable_reason():
        return [libfuse, Check("fuse capabilities", "problem", f"no trial mount: {reason}")]
    try:
        connection = probe_connection()
    except OSError as exc:
        return [libfuse, Check("fuse capabilities", "problem", f"a trial mount failed: {exc}")]
    if connection is None:
        return [libfuse, Check("fuse capabilities", "warning", "unknown (a stock pyfuse3)")]
    line = f"protocol {connection.protocol}: {', '.join(connection.capabilities)}"
    if "HANDLE_KILLPRIV_V2" in connection.capabilities:
        return [libfuse, Check("fuse capabilities", "ok", line)]
    why = (
        f"no HANDLE_KILLPRIV_V2, so the kernel asks before writes and chowns (libfuse "
        f"{KILLPRIV_LIBFUSE} passes it on: scripts/setup.sh builds it)"
    )
    return [libfuse, Check("fuse capabilities", "warning", f"{line}; {why}")]


def _shadow_check() -> Check:
    """The git shadow-repo provider's capabilities in the current directory's repository
    (seed 004's ``detect_capabilities``): git found, worktrees, a writable store."""
    from ..host import GitShadowProvider

    try:
        capabilities = GitShadowProvider(os.getcwd()).capabilities()
    except (OSError, ValueError):  # not inside a working copy: nothing to snapshot here
        git = shutil.which("git")
        found = f"git found ({git})" if git else "git not found"
        return Check(
            "git shadow",
            "ok" if git else "warning",
            f"{found}; worktrees supported; writable store not checked (not in a working copy)",
        )
    store = capabilities["store"]
    parts = [
        f"git found ({capabilities['git']})" if capabilities["git"] else "git not found",
        "worktrees supported" if capabilities["worktrees"] else "worktrees not supported",
        f"store {'' if capabilities['writable'] else 'not '}writable ({store})",
    ]
    ready = capabilities["git"] and capabilities["worktrees"] and capabilities["writable"]
    return Check("git shadow", "ok" if ready else "warning", "; ".join(parts))


MOUNT_ANSWER_SECONDS = 5.0
"""How long ``doctor`` waits for a mount to answer whether its daemon is there."""


def _answered(question: Callable[[], bool], seconds: float) -> bool | None:
    """``question()``, asked in a thread of its own; None if it has not answered within
    ``seconds`` (a mount whose daemon is alive but stuck blocks whoever asks it, and
    ``doctor`` must report every other check meanwhile; the thread is left to finish
    or to end with the process)."""
    answers: list[bool] = []
    asking = threading.Thread(target=lambda: answers.append(question()), daemon=True)
    asking.start()
    asking.join(seconds)
    return answers[0] if answers else None


def _leftover_checks(fix: bool) -> list[Check]:
    """Stale workspacefs mounts and dead daemons' runtime files (cleaned with ``fix``)."""
    from ..daemon import known_mounts, remove_files, runtime_dir
    from ..fuse import fuse_mounts, is_stale, recover

    checks = [Check("runtime dir", "ok", str(runtime_dir()))]
    for point, kind in sorted(fuse_mounts().items()):
        if kind != "fuse.workspacefs":
            continue
        stale = _answered(functools.partial(is_stale, point), MOUNT_ANSWER_SECONDS)
        if stale is None:  # a live daemon too busy or stuck to answer: say so, go on
            why = f"{point}: answered nothing within {MOUNT_ANSWER_SECONDS:g} s"
            checks.append(Check("mount not answering", "problem", why))
            continue
        if not stale:
            continue
        if fix:
            try:
                recover(point)
            except MountedInsideError as exc:  # a live workspace inside: detaching takes it
                checks.append(Check("stale mount", "problem", f"{point}: {exc.strerror}"))
                continue
            checks.append(Check("stale mount", "fixed", f"{point}: detached"))
        else:
            checks.append(Check("stale mount", "problem", f"{point}: its daemon is gone (--fix)"))
    for known in known_mounts():
        record = known.record
        if known.alive:
            checks.append(Check("workspace", "ok", f"{record.mountpoint} (pid {record.pid})"))
            continue
        if record.store is not None:
            checks.append(_crashed(record.mountpoint, record.name, record.store))
        if fix:
            remove_files(known.paths)
            checks.append(Check("dead daemon", "fixed", f"{record.mountpoint}: files removed"))
        else:
            where = f"{record.mountpoint} (pid {record.pid}, socket {record.socket})"
            checks.append(Check("dead daemon", "problem", f"{where} (--fix)"))
    return checks


def _crashed(mountpoint: str, name: str | None, store: str) -> Check:
    """A workspace whose daemon died: kept in its store; when it was last on disk and
    the command that resumes it."""
    from ..store import describe

    try:
        info = describe(store)
    except OSError as exc:
        return Check("crashed workspace", "problem", f"{store}: unreadable ({exc.strerror})")
    when = (
        "never"
        if info.last_change is None
        else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.last_change))
    )
    again = f"--name {name}" if name else f"--store {store}"
    return Check(
        "crashed workspace",
        "warning",
        f"{name or store}: last on disk {when}; resume: workspacefs mount {mountpoint} {again}",
    )


STYLE = {"ok": "green", "warning": "yellow", "problem": "red", "fixed": "cyan"}


@app.command(epilog="Example: workspacefs doctor --fix")
def doctor(
    fix: Annotated[
        bool, typer.Option("--fix", help="Detach stale mounts; remove dead daemons' files.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check FUSE, podman, git (and the git shadow provider here) and leftovers of dead
    daemons; exit 4 if something is wrong."""
    checks = _machine_checks() + _leftover_checks(fix)
    if as_json:
        emit_json([asdict(check) for check in checks])
    else:
        from rich.text import Text

        for check in checks:
            mark = (f"{check.status:<8}", STYLE[check.status])
            stdout.print(Text.assemble(mark, f" {check.name:<17} {check.detail}"))
    if any(check.status == "problem" for check in checks):
        raise typer.Exit(EXIT_PROBLEMS)
