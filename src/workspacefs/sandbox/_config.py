"""What a sandbox is made of: its options, checked once, and the sizes they are given in."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from .._errors import InvalidArgumentError

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Size = int | str
"""Bytes, or a string such as ``"512m"`` or ``"2g"`` (binary units, as Podman reads them)."""


def parse_size(value: Size, what: str, *, minimum: int = 1) -> int:
    """Bytes from an int or a ``"512m"``-style string (``k``, ``m``, ``g``, ``t``:
    binary units; ``KiB``, ``MB`` and the like read the same).

    Raises:
        InvalidArgumentError: Not a size, or one below ``minimum``.
    """
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be a size, not {value!r}", None)
    if isinstance(value, int):
        size = value
    else:
        match = _SIZE.fullmatch(value)
        if match is None:
            raise InvalidArgumentError(f"{what} {value!r} is not a size like 512m or 2g", None)
        size = int(float(match[1]) * _UNITS[match[2].lower()])
    if size < minimum:
        bound = "positive" if minimum == 1 else f"at least {minimum}"
        raise InvalidArgumentError(f"{what} must be {bound}, got {value!r}", None)
    return size


def check_env(env: Mapping[str, str] | None, what: str = "env") -> tuple[tuple[str, str], ...]:
    """Environment variables as pairs, names checked.

    Raises:
        InvalidArgumentError: A name is not a shell identifier or a value holds a NUL.
    """
    pairs = tuple((env or {}).items())
    for name, value in pairs:
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise InvalidArgumentError(f"{what}: {name!r} is not a variable name", None)
        if not isinstance(value, str) or "\0" in value:
            raise InvalidArgumentError(f"{what}: the value of {name} must be a string", None)
    return pairs


def default_cpus() -> float:
    """Two CPUs, or all of them on a smaller machine (Podman refuses more than there are)."""
    return float(min(2, os.cpu_count() or 1))


class SandboxOptions(TypedDict, total=False):
    """The keyword options of ``PodmanSandbox`` and ``SandboxConfig.build`` (for callers
    that pass them on)."""

    image: str | None
    rootfs: str | os.PathLike[str] | None
    workdir: str
    network: str
    memory: Size
    cpus: float | None
    pids_limit: int
    user: str | None
    env: Mapping[str, str] | None
    read_only: bool
    disk: Size
    workspace_size: Size
    output_limit: int
    timeout: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """A sandbox's options, validated (see ``PodmanSandbox`` for each one's meaning)."""

    image: str | None
    rootfs: str | None
    podman_overlay: bool
    workdir: str
    network: str
    memory: int
    cpus: float | None
    pids_limit: int
    user: str | None
    env: tuple[tuple[str, str], ...]
    read_only: bool
    disk: int
    workspace_size: int
    output_limit: int
    timeout: float

    def options(self) -> SandboxOptions:
        """The keyword options that ``build`` makes this config from again."""
        rootfs = self.rootfs
        if rootfs is not None and self.podman_overlay and os.geteuid() == 0:
            rootfs += ":O"  # asked for: root's default is no overlay
        return SandboxOptions(
            image=self.image,
            rootfs=rootfs,
            workdir=self.workdir,
            network=self.network,
            memory=self.memory,
            cpus=self.cpus,
            pids_limit=self.pids_limit,
            user=self.user,
            env=dict(self.env),
            read_only=self.read_only,
            disk=self.disk,
            workspace_size=self.workspace_size,
            output_limit=self.output_limit,
            timeout=self.timeout,
        )

    @classmethod
    def build(
        cls,
        *,
        image: str | None = None,
        rootfs: str | os.PathLike[str] | None = None,
        workdir: str = "/workspace",
        network: str = "none",
        memory: Size = "2g",
        cpus: float | None = None,
        pids_limit: int = 1024,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        read_only: bool = False,
        disk: Size = "4g",
        workspace_size: Size = "8g",
        output_limit: int = 256 << 10,
        timeout: float = 120.0,
    ) -> SandboxConfig:
        """Check every option; the first bad one raises ``InvalidArgumentError``.

        The defaults here are every container's (``PodmanSandbox``, ``workspacefs run``).
        """
        if image is not None and rootfs is not None:
            raise InvalidArgumentError("pass image or rootfs, not both", None)
        if image is not None and (not image.strip() or image.startswith("-")):
            raise InvalidArgumentError(f"{image!r} is not an image name", None)
        root = None
        podman_overlay = False
        if image is None:
            root = os.fspath(rootfs if rootfs is not None else "/")
            if root.endswith(":O"):
                root, podman_overlay = root[:-2], True
            root = os.path.abspath(root or "/")
            if not os.path.isdir(root):
                raise InvalidArgumentError("rootfs must be a directory", root)
        if not workdir.startswith("/") or workdir == "/" or "\0" in workdir or ":" in workdir:
            raise InvalidArgumentError("workdir must be an absolute path below /", workdir)
        if not network or network.startswith("-"):
            raise InvalidArgumentError(f"{network!r} is not a network mode", None)
        if cpus is not None and not 0 < cpus <= (os.cpu_count() or 1):
            raise InvalidArgumentError(
                f"cpus must be between 0 and {os.cpu_count()} (this machine's CPUs)", None
            )
        if pids_limit < 1:
            raise InvalidArgumentError("pids_limit must be at least 1", None)
        if output_limit < 0:
            raise InvalidArgumentError("output_limit must not be negative", None)
        if timeout <= 0:
            raise InvalidArgumentError("timeout must be positive", None)
        return cls(
            image=image,
            rootfs=root,
            podman_overlay=podman_overlay or os.geteuid() != 0,
            workdir=os.path.normpath(workdir),
            network=network,
            memory=parse_size(memory, "memory"),
            cpus=cpus,
            pids_limit=pids_limit,
            user=user,
            env=check_env(env),
            read_only=read_only,
            disk=parse_size(disk, "disk"),
            workspace_size=parse_size(workspace_size, "workspace_size"),
            output_limit=output_limit,
            timeout=timeout,
        )
