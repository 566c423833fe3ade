"""Running a container on a mounted workspace for ``workspacefs run``.

The daemon owns the mount, so the container is a one-shot ``podman run`` on
its mount point, with the sandbox layer's containers.conf and security
defaults (``workspacefs.sandbox``; a ``PodmanSandbox`` mounts its own
workspace in-process instead).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence

from .._errors import BackendUnavailableError
from ..sandbox import SECURITY_OPTIONS, podman_binary, podman_env

WORKDIR = "/workspace"


def podman_command(
    mountpoint: str, command: Sequence[str], *, image: str | None, rootfs: str | None
) -> list[str]:
    """The ``podman run`` line: the workspace bound at /workspace, no network."""
    line = [podman_binary(), "run", "--rm", "--network=none", *SECURITY_OPTIONS,
            "-v", f"{mountpoint}:{WORKDIR}:rw", "-w", WORKDIR]  # fmt: skip
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
    try:
        line = podman_command(
            os.path.abspath(mountpoint),
            command,
            image=image,
            rootfs=None if rootfs is None else os.path.abspath(rootfs),
        )
    except FileNotFoundError as exc:
        raise BackendUnavailableError(str(exc.strerror), None) from None
    # Podman's conmon marks a command the OOM killer ended with an empty file
    # named oom in its working directory: a scratch one, never the caller's.
    with tempfile.TemporaryDirectory(prefix="workspacefs-podman-") as scratch:
        return subprocess.run(line, env=podman_env(), cwd=scratch, check=False).returncode
