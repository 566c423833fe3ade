"""Running a container on a mounted workspace: plain Podman, in one function.

The sandbox layer (``workspacefs.sandbox``) will take this over; until it
lands, ``run_container`` is the only place that knows how Podman is called.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .._errors import BackendUnavailableError

WORKDIR = "/workspace"


def containers_conf() -> str | None:
    """The containers.conf to run Podman with: ``$CONTAINERS_CONF`` if set, else this
    source tree's config/containers.conf (docs/containers.md says why it exists)."""
    if os.environ.get("CONTAINERS_CONF"):
        return os.environ["CONTAINERS_CONF"]
    candidate = Path(__file__).resolve().parents[3] / "config" / "containers.conf"
    return str(candidate) if candidate.is_file() else None


def podman_command(
    mountpoint: str, command: Sequence[str], *, image: str | None, rootfs: str | None
) -> list[str]:
    """The ``podman run`` line: the workspace bound at /workspace, no network."""
    line = ["podman", "run", "--rm", "--network=none", "-v", f"{mountpoint}:{WORKDIR}:rw",
            "-w", WORKDIR]  # fmt: skip
    if sys.stdin.isatty():
        line += ["-i", "-t"]
    if image is not None:
        line.append(image)
    else:
        line += ["--rootfs", f"{rootfs or '/'}:O"]  # the host's own tools, read through an overlay
    return line + list(command)


def run_container(
    mountpoint: str, command: Sequence[str], *, image: str | None = None, rootfs: str | None = None
) -> int:
    """Run ``command`` in a container with the workspace at /workspace; its exit status.

    Without ``image``, the container's root is ``rootfs`` (default: the host's
    ``/``) under a throw-away overlay, so no image needs pulling.

    Raises:
        BackendUnavailableError: Podman is not installed.
    """
    if shutil.which("podman") is None:
        raise BackendUnavailableError("podman is not installed (scripts/setup.sh has it)", None)
    env = dict(os.environ)
    conf = containers_conf()
    if conf is not None:
        env["CONTAINERS_CONF"] = conf
    line = podman_command(mountpoint, command, image=image, rootfs=rootfs)
    return subprocess.run(line, env=env, check=False).returncode
