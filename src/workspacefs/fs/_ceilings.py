"""Every limit on the memory this process may use, and what is left under each.

A process is under several limits at once, and the first one it reaches ends it:

- the machine's available memory (``MemAvailable``);
- its address-space and data limits (``RLIMIT_AS``, ``RLIMIT_DATA``): ``malloc`` fails;
- the memory limits of its cgroup and of every cgroup above it, v2 (``memory.max``,
  ``memory.high``) or v1 (``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes``):
  the kernel's OOM killer ends the process.

Cgroup directories are found the way the kernel describes them, not by a fixed path:
``/proc/self/cgroup`` names the process's cgroup in each hierarchy, and
``/proc/self/mountinfo`` says where each hierarchy is mounted and which cgroup is the
mount's root. In a container the cgroup is often mounted at its own root (the path in
``/proc/self/cgroup`` is the host's and does not exist under the mount); then the
mount's root is the process's cgroup as far as it can see, and v1's
``hierarchical_memory_limit`` still tells the tightest limit above it.

What a cgroup has used counts without its inactive file cache, which the kernel
reclaims before it kills anything (the working set that ``docker stats`` and cAdvisor
report).
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..posix import mount_table

UNLIMITED = 1 << 62
"""A cgroup limit this large is no limit: v1 writes "unlimited" as the largest page
count it holds (9223372036854771712 with 4 KiB pages)."""


@dataclass(frozen=True, slots=True)
class MemoryCeiling:
    """One limit on the memory this process may use (bytes)."""

    source: str
    """What sets it: ``MemAvailable``, ``RLIMIT_AS``, or the cgroup file that holds it."""
    limit: int
    """The limit itself (for ``MemAvailable``: the machine's ``MemTotal``)."""
    headroom: int
    """What may still be allocated under it (never below 0)."""


def memory_ceilings(proc: str | os.PathLike[str] = "/proc") -> list[MemoryCeiling]:
    """Every limit this process is under now, with what is left under each.

    Args:
        proc: Where procfs is mounted (tests pass a fake tree: ``meminfo``,
            ``self/cgroup``, ``self/mountinfo``, ``self/status``, and the cgroup
            directories that ``mountinfo`` names).

    Returns:
        The machine's available memory first, then the resource limits, then the
        cgroups' limits from this process's cgroup upward; unlimited ones are left out.
    """
    root = Path(proc)
    ceilings = [_machine(root)]
    ceilings += _rlimits(root)
    ceilings += _cgroup_ceilings(root)
    return ceilings


def _machine(proc: Path) -> MemoryCeiling:
    info = _fields(proc / "meminfo")
    if "MemAvailable" in info:
        return MemoryCeiling(
            "MemAvailable", info.get("MemTotal", 0) * 1024, info["MemAvailable"] * 1024
        )
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return MemoryCeiling("free pages", pages, free)


def _rlimits(proc: Path) -> Iterator[MemoryCeiling]:
    status = _fields(proc / "self" / "status")
    # RLIMIT_DATA counts private writable mappings too (Linux 4.7+), as VmData does.
    for name, which, used in (
        ("RLIMIT_AS", resource.RLIMIT_AS, "VmSize"),
        ("RLIMIT_DATA", resource.RLIMIT_DATA, "VmData"),
    ):
        soft, _ = resource.getrlimit(which)
        if soft != resource.RLIM_INFINITY:
            yield MemoryCeiling(name, soft, max(0, soft - status.get(used, 0) * 1024))


def _fields(path: Path) -> dict[str, int]:
    """``Name: value kB`` lines of a procfs file, values as numbers (empty if unreadable)."""
    found = {}
    try:
        with open(path, encoding="ascii", errors="replace") as lines:
            for line in lines:
                name, _, rest = line.partition(":")
                words = rest.split()
                if words and words[0].isdigit():
                    found[name] = int(words[0])
    except OSError:
        pass
    return found


# -- cgroups -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Mount:
    root: str
    """The cgroup the mount shows at its mount point."""
    point: Path
    version: int
    controllers: frozenset[str]


def _cgroup_ceilings(proc: Path) -> Iterator[MemoryCeiling]:
    unified, by_controller = _own_cgroups(proc / "self" / "cgroup")
    for mount in _cgroup_mounts(proc / "self" / "mountinfo"):
        if mount.version == 2 and unified is not None:
            yield from _v2(_own_directory(mount, unified), mount.point)
        elif mount.version == 1 and "memory" in mount.controllers and "memory" in by_controller:
            yield from _v1(_own_directory(mount, by_controller["memory"]), mount.point)


def _own_cgroups(path: Path) -> tuple[str | None, dict[str, str]]:
    """The process's cgroup paths: in the v2 hierarchy, and by v1 controller."""
    unified, by_controller = None, {}
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as lines:
            for line in lines:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) != 3:
                    continue
                number, controllers, cgroup = parts
                if number == "0" and not controllers:
                    unified = cgroup
                for controller in filter(None, controllers.split(",")):
                    by_controller[controller] = cgroup
    except OSError:
        pass
    return unified, by_controller


def _cgroup_mounts(path: Path) -> list[_Mount]:
    """The cgroup file systems ``mountinfo`` lists, each hierarchy once."""
    mounts: list[_Mount] = []
    try:
        table = mount_table(path)
    except OSError:
        return mounts
    for entry in table:
        if entry.fs_type not in ("cgroup", "cgroup2"):
            continue
        controllers = frozenset(entry.super_options.split(","))
        version = 2 if entry.fs_type == "cgroup2" else 1
        if any(m.version == version and m.controllers == controllers for m in mounts):
            continue  # the same hierarchy mounted again (a bind mount)
        mounts.append(_Mount(entry.root, Path(entry.point), version, controllers))
    return mounts


def _own_directory(mount: _Mount, cgroup: str) -> Path:
    """Where the process's cgroup is under ``mount``; the mount point itself when it is
    not there (a container whose cgroup is mounted at its own root)."""
    root = mount.root.rstrip("/")
    if cgroup == root or cgroup.startswith(root + "/"):
        directory = mount.point / cgroup[len(root) :].lstrip("/")
        if directory.is_dir():
            return directory
    return mount.point


def _upward(directory: Path, top: Path) -> Iterator[Path]:
    """``directory`` and each parent up to ``top``, the mount point (included)."""
    while True:
        yield directory
        if directory == top or directory.parent == directory:
            return
        directory = directory.parent


def _v2(directory: Path, top: Path) -> Iterator[MemoryCeiling]:
    for level in _upward(directory, top):
        used = None
        for name in ("memory.max", "memory.high"):
            limit = _number(level / name)
            if limit is None or limit >= UNLIMITED:
                continue
            if used is None:
                used = _used(level, "memory.current", "inactive_file")
            yield MemoryCeiling(str(level / name), limit, max(0, limit - used))


_V1_LIMITS = (
    ("memory.limit_in_bytes", "memory.usage_in_bytes", "hierarchical_memory_limit"),
    ("memory.memsw.limit_in_bytes", "memory.memsw.usage_in_bytes", "hierarchical_memsw_limit"),
)
"""v1's limits: memory, and memory plus swap (where swap is accounted): the file of
the limit, the file of what is used against it, and the limit's ``memory.stat`` key
for the tightest one of the hierarchy."""


def _v1(directory: Path, top: Path) -> Iterator[MemoryCeiling]:
    for limit_file, usage_file, hierarchical in _V1_LIMITS:
        tightest = UNLIMITED
        for level in _upward(directory, top):
            limit = _number(level / limit_file)
            if limit is None or limit >= UNLIMITED:
                continue
            tightest = min(tightest, limit)
            used = _used(level, usage_file, "total_inactive_file")
            yield MemoryCeiling(str(level / limit_file), limit, max(0, limit - used))
        # A tighter limit above what is visible here (a container sees only its own
        # part of the hierarchy): measured against this cgroup's own use, the most
        # that is known of it.
        limit = _stat(directory).get(hierarchical, UNLIMITED)
        if limit < tightest:
            used = _used(directory, usage_file, "total_inactive_file")
            source = f"{directory / 'memory.stat'} {hierarchical}"
            yield MemoryCeiling(source, limit, max(0, limit - used))


def _used(directory: Path, usage_file: str, inactive_key: str) -> int:
    """What the cgroup uses, less the file cache the kernel would reclaim first."""
    usage = _number(directory / usage_file) or 0
    return max(0, usage - _stat(directory).get(inactive_key, 0))


def _stat(directory: Path) -> dict[str, int]:
    found = {}
    try:
        with open(directory / "memory.stat", encoding="ascii", errors="replace") as lines:
            for line in lines:
                name, _, value = line.partition(" ")
                if value.strip().isdigit():
                    found[name] = int(value)
    except OSError:
        pass
    return found


def _number(path: Path) -> int | None:
    """A cgroup file holding a number; None if it is missing, ``max`` or unreadable."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
