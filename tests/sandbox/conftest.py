"""Real Podman sandboxes, one at a time (one FUSE mount per process).

Tests marked ``container`` are skipped (tests/conftest.py), with the preflight's
lines as the reason, only where this machine cannot run a sandbox; scripts/setup.sh
installs and configures what they need.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator

import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.sandbox import PodmanSandbox, containers_conf


def podman(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "CONTAINERS_CONF": containers_conf()},
    )


def container_names() -> set[str]:
    return set(podman("ps", "--all", "--format={{.Names}}").stdout.split())


def mounted_paths() -> list[str]:
    with open("/proc/mounts", encoding="utf-8") as mounts:
        return [line.split()[1] for line in mounts]


def assert_left_nothing(name: str, state: str) -> None:
    """No container, mount or directory of the sandbox is left."""
    assert name not in container_names()
    assert not [point for point in mounted_paths() if point.startswith(state)]
    assert not os.path.exists(state)


def state_dir(box: PodmanSandbox) -> str:
    return os.path.dirname(box.mountpoint)


@contextlib.contextmanager
def closed_cleanly(box: PodmanSandbox) -> Iterator[PodmanSandbox]:
    """``box`` until the block ends, then closed and checked to leave nothing behind."""
    name, state = box.name, state_dir(box)
    try:
        yield box
    finally:
        box.close()
    assert_left_nothing(name, state)


@pytest.fixture
def sandbox() -> Iterator[PodmanSandbox]:
    """A sandbox on the default root filesystem, checked to leave nothing behind."""
    with closed_cleanly(PodmanSandbox(InMemoryFilesystem(mount_point="/workspace"))) as box:
        yield box


TINY_IMAGE = "localhost/workspacefs-test-tiny:latest"
TINY_PROGRAMS = ("sh", "setsid", "cat", "sleep", "ls", "rm", "mkdir", "tr")


def _libraries(program: str) -> set[str]:
    listing = subprocess.run(["ldd", program], capture_output=True, text=True, check=False)
    found = set()
    for line in listing.stdout.splitlines():
        for word in line.split():
            if word.startswith("/"):
                found.add(word)
    return found


@pytest.fixture(scope="session")
def tiny_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local image made here from the host's own binaries (no registry): a shell,
    setsid and a few tools, nothing else."""
    import shutil
    import tarfile

    programs = {name: shutil.which(name) for name in TINY_PROGRAMS}
    assert all(programs.values()), programs
    archive = tmp_path_factory.mktemp("image") / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        for directory in ("bin", "tmp", "opt", "etc", "proc", "sys", "dev", "workspace"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755
            tar.addfile(info)
        files = {f"bin/{name}": os.path.realpath(path) for name, path in programs.items() if path}
        for path in list(files.values()):
            for library in _libraries(path):
                files[library.lstrip("/")] = os.path.realpath(library)
        for target, source in sorted(files.items()):
            tar.add(source, arcname=target)
    made = podman("import", "--quiet", str(archive), TINY_IMAGE)
    assert made.returncode == 0, made.stderr
    try:
        yield TINY_IMAGE
    finally:
        podman("rmi", "--force", TINY_IMAGE)
