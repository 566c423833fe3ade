"""The sandbox's private directory on the host, and what a killed process left behind.

Each sandbox keeps its mount point, overlay and commits in one directory,
``$TMPDIR/workspacefs-sandbox-<pid>-<random hex>`` (mode 0700), with an ``owner``
file naming the process (pid and start time, so a reused pid is not taken
for the owner). A normal exit, an exception or interpreter exit removes it.
A process killed with SIGKILL cannot: its container goes by itself (its
stdin, the lifeline, closes), but its FUSE mount is left dead (ENOTCONN),
its overlay mounted and its directory in place. ``cleanup_stale`` removes
all three, and each new sandbox runs it for directories first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import subprocess
import tempfile

from .._errors import BusyError
from ..fuse import recover
from ..posix import mounts_under
from ._podman import run_podman

log = logging.getLogger(__name__)

PREFIX = "workspacefs-sandbox-"
LABEL = "workspacefs.sandbox.owner"
"""The container label naming the owning process (``pid:start time``)."""


def process_identity(pid: int | None = None) -> str:
    """``pid:start time`` of a process ('' if it does not exist)."""
    pid = os.getpid() if pid is None else pid
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return ""
    return f"{pid}:{fields[19]}"  # field 22 of stat(5), counted after the command name


def _alive(identity: str) -> bool:
    pid, _, _ = identity.partition(":")
    return pid.isdigit() and process_identity(int(pid)) == identity


def make_state_dir() -> str:
    """A new private directory for this process's sandbox; its name names the container too."""
    name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    # Made under a name cleanup_stale ignores, then renamed: it never sees one
    # without its owner file (and takes it for a dead process's).
    making = os.path.join(tempfile.gettempdir(), f".{name}")
    os.mkdir(making, 0o700)
    with open(os.path.join(making, "owner"), "w", encoding="ascii") as owner:
        owner.write(process_identity())
    path = os.path.join(tempfile.gettempdir(), name)
    os.rename(making, path)
    return path


def remove_state_dir(path: str) -> None:
    """Remove a sandbox directory; anything still mounted in it is detached first.

    Raises:
        BusyError: A mount in it could not be detached (the directory is kept:
            removing files through a live mount would delete what it serves).
    """
    for point in mounts_under(path):
        if not recover(point):  # a dead FUSE mount is detached by recover
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    left = mounts_under(path)
    if left:
        raise BusyError(f"still mounted, not removed: {', '.join(left)}", path)
    shutil.rmtree(path, ignore_errors=True)


def cleanup_stale(*, containers: bool = True) -> list[str]:
    """Remove what sandboxes of dead processes left: directories, mounts, containers.

    Args:
        containers: Ask Podman for containers too (one ``podman ps`` call).

    Returns:
        What was removed: directories and container names.
    """
    removed = []
    base = tempfile.gettempdir()
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if not name.startswith(PREFIX) or not os.path.isdir(path):
            continue
        try:
            with open(os.path.join(path, "owner"), encoding="ascii") as owner:
                identity = owner.read().strip()
        except OSError:
            identity = ""
        if identity and _alive(identity):
            continue
        try:
            remove_state_dir(path)
        except BusyError as exc:
            log.warning("cannot remove a stale sandbox directory: %s", exc)
            continue
        removed.append(path)
    if containers:
        removed += _stale_containers()
    return removed


def _stale_containers() -> list[str]:
    listing = run_podman(
        "ps",
        "--all",
        f"--filter=label={LABEL}",
        f'--format={{{{.Names}}}}\t{{{{index .Labels "{LABEL}"}}}}',
        check=False,
    )
    stale = []
    for line in listing.stdout.splitlines():
        name, _, identity = line.partition("\t")
        if name and not _alive(identity):
            stale.append(name)
    if stale:
        with contextlib.suppress(Exception):
            run_podman("rm", "--force", "--time=0", "--ignore", *stale, check=False)
    return stale
