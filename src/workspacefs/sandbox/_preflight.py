"""What a sandbox needs from the machine, and one line for each thing that is missing.

``preflight()`` checks without changing anything; ``scripts/setup.sh`` is
what installs and configures the missing parts on a Debian machine. The
checks are the ones a failed start would otherwise leave the user to work
out from Podman's own messages: Podman and its OCI runtime, the runtime and
cgroup settings of the ``containers.conf`` in use, FUSE, ``allow_other`` for
users other than root, and a root filesystem the container can start on.
"""

from __future__ import annotations

import os
import shutil
import tomllib

from .._errors import BackendUnavailableError
from ..fuse import unavailable_reason
from ._podman import containers_conf, run_podman

INIT_PATH = "/usr/libexec/podman/catatonit"
"""Podman's default ``--init`` program (Debian's ``catatonit`` package)."""

SETUP = "scripts/setup.sh"


class SandboxUnavailableError(BackendUnavailableError):
    """This machine cannot run a sandbox; ``problems`` says why, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("cannot run a Podman sandbox:\n" + "\n".join(problems), None)
        self.problems = problems


def preflight(
    *, image: str | None = None, rootfs: str | os.PathLike[str] | None = None
) -> list[str]:
    """Everything missing for a sandbox with this root filesystem, one line each ([] if none).

    Args:
        image: A local image the sandbox would use.
        rootfs: A host directory the sandbox would use (default ``/``).
    """
    problems = _podman() + _runtime() + _fuse()
    if not problems:  # the root filesystem's checks ask Podman
        problems += _root_filesystem(image, None if rootfs is None else os.fspath(rootfs))
    return problems


def require(*, image: str | None = None, rootfs: str | os.PathLike[str] | None = None) -> None:
    """Raise ``SandboxUnavailableError`` listing every problem ``preflight`` finds."""
    problems = preflight(image=image, rootfs=rootfs)
    if problems:
        raise SandboxUnavailableError(problems)


def _podman() -> list[str]:
    if shutil.which("podman") is None:
        return [f"podman: not installed ({SETUP} installs podman, runc and catatonit)"]
    if not os.path.exists(INIT_PATH):
        return [
            f"catatonit: {INIT_PATH} is missing, podman run --init needs it (apt-get "
            "install catatonit)"
        ]
    return []


def _cgroups_v2() -> bool:
    return os.path.exists("/sys/fs/cgroup/cgroup.controllers")


def _runtime() -> list[str]:
    path = containers_conf()
    try:
        with open(path, "rb") as file:
            conf = tomllib.load(file)
    except FileNotFoundError:
        return [
            f"containers.conf: {path} does not exist (unset CONTAINERS_CONF to use the "
            "sandbox's own)"
        ]
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [f"containers.conf: {path} cannot be read: {exc}"]
    problems = []
    engine = conf.get("engine", {})
    runtime = engine.get("runtime")
    if runtime is None:
        problems.append(f"containers.conf: {path} names no OCI runtime (set [engine] runtime)")
    elif shutil.which(runtime) is None and not os.path.exists(runtime):
        problems.append(f"OCI runtime: {runtime} is not installed (apt-get install {runtime})")
    elif not _cgroups_v2() and os.path.basename(runtime) == "crun":
        problems.append(
            f'OCI runtime: crun refuses cgroups v1/hybrid, as here; set runtime = "runc" in {path}'
        )
    if engine.get("cgroup_manager", "systemd") == "systemd" and not os.path.isdir(
        "/run/systemd/system"
    ):
        problems.append(
            f'cgroup manager: systemd is not running; set cgroup_manager = "cgroupfs" in {path}'
        )
    limits = conf.get("containers", {}).get("default_ulimits", [])
    if not any(str(limit).startswith("nofile=") for limit in limits):
        problems.append(
            f"containers.conf: {path} sets no nofile ulimit; Podman then raises the container's "
            "past this machine's hard limit (see docs/containers.md)"
        )
    return problems


def _fuse() -> list[str]:
    problems = []
    reason = unavailable_reason()
    if reason:
        problems.append(f"FUSE: {reason}")
    if os.geteuid() != 0 and not _user_allow_other():
        problems.append(
            "FUSE: /etc/fuse.conf lacks user_allow_other, so the container cannot enter a mount "
            f"made by a user other than root ({SETUP} adds it)"
        )
    return problems


def _user_allow_other() -> bool:
    try:
        with open("/etc/fuse.conf", encoding="utf-8") as conf:
            return any(line.strip() == "user_allow_other" for line in conf)
    except OSError:
        return False


def _root_filesystem(image: str | None, rootfs: str | None) -> list[str]:
    if image is not None:
        if run_podman("image", "exists", image, check=False, timeout=60).returncode != 0:
            return [
                f"root filesystem: no local image {image!r} (podman images lists them; "
                "podman import or podman build makes one; nothing is pulled)"
            ]
        return []
    own_overlay = os.geteuid() == 0 and not (rootfs or "").endswith(":O")
    root = os.path.abspath((rootfs or "/").removesuffix(":O") or "/")
    if not os.path.isdir(root):
        return [f"root filesystem: {root} is not a directory"]
    missing = [name for name in ("sh", "setsid") if not _has_program(root, name)]
    if missing:
        return [f"root filesystem: {root} lacks {', '.join(missing)} in /bin or /usr/bin"]
    if own_overlay and not _overlay_available():
        return ["root filesystem: the kernel has no overlay filesystem (modprobe overlay)"]
    return []


def _has_program(root: str, name: str) -> bool:
    for directory in ("usr/bin", "bin"):
        path = os.path.join(root, directory, name)
        if os.path.lexists(path):
            return True
    return False


def _overlay_available() -> bool:
    try:
        with open("/proc/filesystems", encoding="ascii") as table:
            if any(line.split()[-1] == "overlay" for line in table if line.strip()):
                return True
    except OSError:
        return False
    release = os.uname().release
    return os.path.exists(f"/lib/modules/{release}/kernel/fs/overlayfs")
