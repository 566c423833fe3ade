"""Reading every memory limit a process is under, over fake procfs and cgroup trees.

Each test builds what the kernel shows -- ``/proc/meminfo``, ``/proc/self/cgroup``,
``/proc/self/mountinfo`` and the cgroup directories it names -- in a temporary
directory, in the kernel's formats, and passes it as ``proc``. The real thing is
tested too: a process in a real memory cgroup (here) and a daemon under one
(tests/daemon/test_cgroup_limit.py).
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from pathlib import Path

from support.interpreter import child_env
from support.memory_limit import memory_limit
from workspacefs.fs import MemoryCeiling, available_memory, memory_ceilings

MIB = 1 << 20
GIB = 1 << 30
V1_UNLIMITED = 9223372036854771712  # what v1 shows for "no limit" with 4 KiB pages
AVAILABLE = 8 * GIB


class Host:
    """A fake ``/proc`` and ``/sys/fs/cgroup`` under ``base``."""

    def __init__(self, base: Path) -> None:
        self.proc = base / "proc"
        (self.proc / "self").mkdir(parents=True)
        self.sys = base / "sys" / "fs" / "cgroup"
        (self.proc / "meminfo").write_text(
            f"MemTotal:       {16 * GIB // 1024} kB\n"
            f"MemFree:        {AVAILABLE // 2048} kB\n"
            f"MemAvailable:   {AVAILABLE // 1024} kB\n"
        )
        (self.proc / "self" / "status").write_text("Name:\tpython\nVmSize:\t  123456 kB\n")
        (self.proc / "self" / "mountinfo").write_text(
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
            "31 22 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        )
        self.cgroup_lines("0::/")

    def cgroup_lines(self, *lines: str) -> None:
        """``/proc/self/cgroup``: ``hierarchy-id:controllers:path`` lines."""
        (self.proc / "self" / "cgroup").write_text("".join(f"{line}\n" for line in lines))

    def mount(self, fstype: str, point: Path, root: str = "/", options: str = "rw") -> Path:
        """A ``mountinfo`` line for a cgroup file system at ``point`` showing ``root``."""
        point.mkdir(parents=True, exist_ok=True)
        shown = str(point).replace(" ", "\\040")
        with open(self.proc / "self" / "mountinfo", "a") as mountinfo:
            mountinfo.write(
                f"40 31 0:40 {root} {shown} rw,nosuid,nodev,noexec,relatime shared:9 "
                f"- {fstype} {fstype} {options}\n"
            )
        return point

    def v1(
        self,
        directory: Path,
        *,
        limit: int = V1_UNLIMITED,
        usage: int = 0,
        inactive: int = 0,
        memsw: tuple[int, int] | None = None,
        hierarchical: int = V1_UNLIMITED,
    ) -> None:
        """A v1 memory cgroup directory with its files (``memsw``: limit and usage)."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "memory.limit_in_bytes").write_text(f"{limit}\n")
        (directory / "memory.usage_in_bytes").write_text(f"{usage}\n")
        if memsw is not None:
            (directory / "memory.memsw.limit_in_bytes").write_text(f"{memsw[0]}\n")
            (directory / "memory.memsw.usage_in_bytes").write_text(f"{memsw[1]}\n")
        (directory / "memory.stat").write_text(
            f"cache 0\nrss {usage}\ninactive_file {inactive}\n"
            f"hierarchical_memory_limit {hierarchical}\n"
            f"hierarchical_memsw_limit {V1_UNLIMITED}\n"
            f"total_rss {usage}\ntotal_inactive_file {inactive}\n"
        )

    def v2(
        self,
        directory: Path,
        *,
        high: str = "max",
        memory_max: str = "max",
        current: int = 0,
        inactive: int = 0,
    ) -> None:
        """A v2 cgroup directory with its memory files."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "memory.high").write_text(f"{high}\n")
        (directory / "memory.max").write_text(f"{memory_max}\n")
        (directory / "memory.current").write_text(f"{current}\n")
        (directory / "memory.stat").write_text(f"anon {current}\ninactive_file {inactive}\n")

    def cgroup_ceilings(self) -> list[tuple[str, int, int]]:
        """(file relative to ``sys``, limit, headroom) of each cgroup ceiling."""
        return [
            (str(Path(c.source).relative_to(self.sys)), c.limit, c.headroom)
            for c in memory_ceilings(self.proc)
            if c.source.startswith(str(self.sys))
        ]


def v1_host(tmp_path: Path, path: str) -> Host:
    """A cgroup v1 machine (hybrid: v2 mounted at ``unified`` without controllers), the
    process in memory cgroup ``path``."""
    host = Host(tmp_path)
    host.mount("cgroup", host.sys / "cpu", options="rw,cpu")
    host.mount("cgroup", host.sys / "memory", options="rw,memory")
    host.mount("cgroup2", host.sys / "unified")
    host.v1(host.sys / "memory")
    host.cgroup_lines("5:cpu:/", f"4:memory:{path}", "0::/")
    return host


def test_only_the_machine_without_cgroups(tmp_path: Path) -> None:
    host = Host(tmp_path)
    ceilings = memory_ceilings(host.proc)
    assert ceilings[0] == MemoryCeiling("MemAvailable", 16 * GIB, AVAILABLE)
    assert not host.cgroup_ceilings()
    assert available_memory(host.proc) == AVAILABLE


def test_v1_limit_less_what_is_used_but_reclaimable(tmp_path: Path) -> None:
    host = v1_host(tmp_path, "/jobs/one")
    host.v1(host.sys / "memory" / "jobs")
    host.v1(host.sys / "memory" / "jobs" / "one", limit=GIB, usage=300 * MIB, inactive=100 * MIB)
    assert host.cgroup_ceilings() == [
        ("memory/jobs/one/memory.limit_in_bytes", GIB, GIB - 200 * MIB)
    ]
    assert available_memory(host.proc) == GIB - 200 * MIB


def test_v1_unlimited_is_no_limit(tmp_path: Path) -> None:
    host = v1_host(tmp_path, "/jobs/one")
    host.v1(host.sys / "memory" / "jobs" / "one", usage=300 * MIB)
    assert not host.cgroup_ceilings()
    assert available_memory(host.proc) == AVAILABLE


def test_v1_the_tightest_level_of_the_hierarchy_counts(tmp_path: Path) -> None:
    host = v1_host(tmp_path, "/jobs/one")
    # The parent's limit is looser, but siblings use most of it.
    host.v1(host.sys / "memory" / "jobs", limit=2 * GIB, usage=1900 * MIB, hierarchical=2 * GIB)
    host.v1(host.sys / "memory" / "jobs" / "one", limit=GIB, usage=100 * MIB, hierarchical=GIB)
    assert host.cgroup_ceilings() == [
        ("memory/jobs/one/memory.limit_in_bytes", GIB, GIB - 100 * MIB),
        ("memory/jobs/memory.limit_in_bytes", 2 * GIB, 148 * MIB),
    ]
    assert available_memory(host.proc) == 148 * MIB


def test_v1_memory_and_swap_limit(tmp_path: Path) -> None:
    host = v1_host(tmp_path, "/one")
    host.v1(host.sys / "memory" / "one", limit=GIB, usage=500 * MIB, memsw=(GIB, 900 * MIB))
    assert host.cgroup_ceilings() == [
        ("memory/one/memory.limit_in_bytes", GIB, GIB - 500 * MIB),
        ("memory/one/memory.memsw.limit_in_bytes", GIB, GIB - 900 * MIB),
    ]
    assert available_memory(host.proc) == GIB - 900 * MIB


def test_v1_in_a_container_whose_cgroup_is_mounted_at_its_own_root(tmp_path: Path) -> None:
    # /proc/self/cgroup names the host's path; under the mount it does not exist. The
    # limit is set above the container's cgroup, which it cannot see but memory.stat
    # reports.
    host = Host(tmp_path)
    host.mount("cgroup", host.sys / "memory", options="rw,memory")
    host.cgroup_lines("4:memory:/machine/pod-7/ctr-3")
    host.v1(host.sys / "memory", usage=100 * MIB, hierarchical=512 * MIB)
    assert host.cgroup_ceilings() == [
        ("memory/memory.stat hierarchical_memory_limit", 512 * MIB, 412 * MIB)
    ]


def test_v1_mount_root_is_the_process_cgroup(tmp_path: Path) -> None:
    # mountinfo says which cgroup the mount shows (a container without a cgroup
    # namespace, on Docker's v1 layout): the process's cgroup is the mount point.
    host = Host(tmp_path)
    host.mount("cgroup", host.sys / "memory", root="/docker/abc", options="rw,memory")
    host.cgroup_lines("4:memory:/docker/abc")
    host.v1(host.sys / "memory", limit=256 * MIB, usage=56 * MIB, hierarchical=256 * MIB)
    assert host.cgroup_ceilings() == [("memory/memory.limit_in_bytes", 256 * MIB, 200 * MIB)]


def test_v1_controllers_mounted_together_in_a_path_with_a_space(tmp_path: Path) -> None:
    host = Host(tmp_path)
    point = host.mount("cgroup", host.sys / "memory and cpu", options="rw,cpu,memory")
    host.cgroup_lines("3:cpu,memory:/a")
    host.v1(point / "a", limit=GIB, usage=GIB // 2)
    assert host.cgroup_ceilings() == [("memory and cpu/a/memory.limit_in_bytes", GIB, GIB // 2)]


def test_v2_max_and_high_of_every_ancestor(tmp_path: Path) -> None:
    host = Host(tmp_path)
    host.mount("cgroup2", host.sys)
    host.cgroup_lines("0::/user.slice/session.scope")
    # The root cgroup has no memory files.
    host.v2(host.sys / "user.slice", high=str(3 * GIB), current=2 * GIB)
    host.v2(
        host.sys / "user.slice" / "session.scope",
        memory_max=str(2 * GIB),
        current=GIB,
        inactive=GIB // 4,
    )
    assert host.cgroup_ceilings() == [
        ("user.slice/session.scope/memory.max", 2 * GIB, 2 * GIB - 3 * GIB // 4),
        ("user.slice/memory.high", 3 * GIB, GIB),
    ]
    assert available_memory(host.proc) == GIB


def test_v2_unlimited_is_no_limit(tmp_path: Path) -> None:
    host = Host(tmp_path)
    host.mount("cgroup2", host.sys)
    host.cgroup_lines("0::/a")
    host.v2(host.sys / "a", current=GIB)
    assert not host.cgroup_ceilings()


def test_v2_in_a_cgroup_namespace(tmp_path: Path) -> None:
    # Inside a container the namespace's root is "/" and is what the mount shows; the
    # walk upward stops at the mount point, where the cgroup file system ends.
    host = Host(tmp_path)
    host.mount("cgroup2", host.sys)
    host.cgroup_lines("0::/")
    host.v2(host.sys, memory_max=str(GIB), current=GIB // 4)
    (host.sys.parent / "memory.max").write_text(f"{MIB}\n")  # not a cgroup: ignored
    assert host.cgroup_ceilings() == [("memory.max", GIB, 3 * GIB // 4)]


def test_v2_path_missing_under_the_mount_falls_back_to_its_root(tmp_path: Path) -> None:
    host = Host(tmp_path)
    host.mount("cgroup2", host.sys)
    host.cgroup_lines("0::/system.slice/docker-1f.scope")
    host.v2(host.sys, memory_max=str(GIB), current=GIB // 2)
    assert host.cgroup_ceilings() == [("memory.max", GIB, GIB // 2)]


def test_the_least_headroom_wins(tmp_path: Path) -> None:
    host = v1_host(tmp_path, "/one")
    host.v1(host.sys / "memory" / "one", limit=64 * GIB, usage=GIB)
    assert available_memory(host.proc) == AVAILABLE  # the machine has less than the cgroup


def test_a_real_cgroup_limit_bounds_the_default_budget() -> None:
    limit = GIB
    script = textwrap.dedent(
        """
        from workspacefs import InMemoryFilesystem
        from workspacefs.fs import available_memory, memory_ceilings
        print(available_memory(), InMemoryFilesystem().memory_budget)
        print(*(ceiling.source for ceiling in memory_ceilings()), sep="\\n")
        """
    )
    with memory_limit(limit) as enforced:
        out = subprocess.run(
            [sys.executable, "-c", script],
            preexec_fn=enforced.preexec,
            env=child_env(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    available, budget = map(int, out[0].split())
    assert 0 < budget <= available // 2 < limit // 2
    if enforced.cgroup is not None:
        name = "memory.max" if enforced.version == 2 else "memory.limit_in_bytes"
        assert str(enforced.cgroup / name) in out[1:]


def test_a_data_limit_bounds_what_can_be_allocated() -> None:
    limit = 2 * GIB
    script = textwrap.dedent(
        """
        from workspacefs.fs import available_memory, memory_ceilings
        data = [c for c in memory_ceilings() if c.source == "RLIMIT_DATA"]
        print(available_memory(), *(f"{c.limit} {c.headroom}" for c in data))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=child_env(),
        capture_output=True,
        text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (limit, limit)),
        check=True,
    ).stdout.split()
    available, data_limit, headroom = map(int, out)
    assert data_limit == limit
    assert 0 < available <= headroom < limit  # the interpreter's own data counts against it
