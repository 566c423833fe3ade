"""``podman run`` for a container on a workspace: the one argument builder, and one-shot
commands on a workspace mounted elsewhere (``workspacefs run``).

Every container the project starts gets its options here, so the security defaults of
``docs/sandbox.md`` (no network, no new privileges, memory, CPU and process limits, the
host's own state hidden from an overlay of ``/``, the mount's ``/.snapshots`` and
``/.forks`` masked) hold for each of them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import Unpack

from ..fuse import HIDDEN_NAMES
from ._config import SandboxConfig, SandboxOptions, default_cpus
from ._podman import SECURITY_OPTIONS, podman_command, podman_env
from ._rootfs import RootFilesystem, root_filesystem
from ._state import LABEL, make_state_dir, process_identity, remove_state_dir


def run_arguments(
    config: SandboxConfig, *, name: str, volume: str, read_only: bool, root: RootFilesystem
) -> list[str]:
    """``podman run``'s arguments up to the command: a container named ``name`` with the
    host directory ``volume`` at ``config.workdir``, on ``root``."""
    access = "ro" if read_only else "rw"
    args = [
        f"--name={name}",
        f"--label={LABEL}={process_identity()}",
        "--init",
        f"--network={config.network}",
        *SECURITY_OPTIONS,
        f"--memory={config.memory}",
        f"--memory-swap={config.memory}",
        f"--pids-limit={config.pids_limit}",
        f"--cpus={config.cpus if config.cpus is not None else default_cpus()}",
        f"--volume={volume}:{config.workdir}:{access}",
        masked(config.workdir),
        f"--workdir={config.workdir}",
    ]
    if config.user is not None:
        args.append(f"--user={config.user}")
    args += [f"--env={key}={value}" for key, value in config.env]
    return args + root.options() + root.target()


def masked(workdir: str) -> str:
    """The option that hides the mount's ``/.snapshots`` and ``/.forks`` under ``workdir``.

    A container sees its own tree only: not the workspace's history, not its forks
    (another agent's, or a pending try whose result would take the container's writes).
    The OCI runtime covers each with an empty read-only tmpfs in the container's own
    mount namespace, which a process without ``CAP_SYS_ADMIN`` cannot unmount (nor,
    locked into a new user namespace, there either). A fork's root serves neither, so
    on a fork there is nothing to cover and the runtime skips it; the mount never lets
    a root entry of those names be made (see ``fuse.HIDDEN_NAMES``).
    """
    return "--security-opt=mask=" + ":".join(f"{workdir}/{name}" for name in HIDDEN_NAMES)


def run_command(
    mountpoint: str,
    command: Sequence[str],
    *,
    terminal: bool = False,
    **options: Unpack[SandboxOptions],
) -> int:
    """Run ``command`` in a new container with the mounted workspace ``mountpoint`` at
    ``workdir``, with the sandbox's defaults; its exit status.

    Args:
        mountpoint: Where the workspace is mounted on the host.
        command: The command and its arguments.
        terminal: Give the command the caller's terminal (``podman run -i -t``).
        **options: As ``PodmanSandbox`` takes them (``image``, ``rootfs``, ``memory``...).

    Raises:
        InvalidArgumentError: An option is invalid.
        NotFoundError: Podman is not installed.
    """
    config = SandboxConfig.build(**options)
    state = make_state_dir()
    try:
        name = os.path.basename(state)
        root = root_filesystem(
            config.image, config.rootfs, config.podman_overlay, state, config.disk, name
        )
        try:
            argv = podman_command("run", "--rm", *(["-i", "-t"] if terminal else []))
            argv += run_arguments(
                config,
                name=name,
                volume=os.path.abspath(mountpoint),
                read_only=config.read_only,
                root=root,
            )
            # conmon marks a command the OOM killer ended with an empty file named oom in its
            # working directory: the private one, never the caller's.
            return subprocess.run([*argv, *command], env=podman_env(), cwd=state).returncode
        finally:
            root.close()
    finally:
        remove_state_dir(state)
