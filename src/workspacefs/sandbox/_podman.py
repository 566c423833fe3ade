"""Running the ``podman`` command: its configuration, and its failures as our errors.

Every Podman call goes through ``podman_command`` (for processes the caller
drives) or ``run_podman`` (for short calls that must succeed). Both point
Podman at one ``containers.conf``: ``$CONTAINERS_CONF`` when the caller set
it, else the copy shipped in this package (the settings of
``config/containers.conf``, a link to it; see docs/containers.md). With it Podman reads
that file alone, so a sandbox behaves the same whatever else the machine has
configured.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from importlib import resources

from .._errors import BackendUnavailableError, NotFoundError

PODMAN_TIMEOUT = 120.0
"""Seconds a housekeeping call (create, remove, commit, inspect) may take."""


class PodmanError(BackendUnavailableError):
    """A ``podman`` call failed; the message holds what Podman said."""


def containers_conf() -> str:
    """The ``containers.conf`` every Podman call uses."""
    configured = os.environ.get("CONTAINERS_CONF")
    if configured:
        return configured
    return str(resources.files(__package__).joinpath("containers.conf"))


SECURITY_OPTIONS = (
    "--security-opt=no-new-privileges",
    # Podman 4.3's defaults still grant these three; later Podmans do not.
    "--cap-drop=AUDIT_WRITE,MKNOD,NET_RAW",
)
"""What every container on a workspace runs with, besides ``--network=none`` and limits."""


def podman_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Podman call."""
    return {**os.environ, "CONTAINERS_CONF": containers_conf(), **(extra or {})}


def podman_binary() -> str:
    """The ``podman`` executable's path.

    Raises:
        NotFoundError: Podman is not installed.
    """
    found = shutil.which("podman")
    if found is None:
        raise NotFoundError("podman is not installed (scripts/setup.sh installs it)", "podman")
    return found


def podman_command(*args: str) -> list[str]:
    """The argv of ``podman args...``."""
    return [podman_binary(), *args]


def run_podman(
    *args: str,
    timeout: float = PODMAN_TIMEOUT,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``podman args...`` to completion and return what it printed.

    Raises:
        PodmanError: It exited non-zero (with ``check``) or took over ``timeout`` seconds.
    """
    argv = podman_command(*args)
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=podman_env(),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise PodmanError(f"`podman {args[0]}` took over {timeout:g} s", None) from exc
    if check and done.returncode != 0:
        raise podman_failure(args, done.returncode, done.stderr)
    return done


def podman_failure(args: Sequence[str], code: int, stderr: str) -> PodmanError:
    """The error for a failed ``podman args...``: its last words, not the whole log."""
    said = [line for line in stderr.strip().splitlines() if line.strip()]
    detail = " / ".join(said[-3:]) if said else f"exit status {code}"
    return PodmanError(f"`podman {' '.join(args[:1])}` failed: {detail}", None)
