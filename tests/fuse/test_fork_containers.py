"""Two forks on one mount, each the /workspace of its own container, written at once."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem

from .conftest import Mounted
from .test_container import CONTAINERS_CONF

pytestmark = pytest.mark.container

WRITER = (
    "for i in $(seq 200); do echo {me}$i > {me}-$i.txt; done; "
    "echo {me} > shared.txt; rm -f src/drop-{me}.py; mkdir -p out/{me}; "
    # A barrier (bounded, so a failed partner leaves no container behind): each
    # lists its workspace only once the other has written all of its files.
    "touch /barrier/{me}; n=0; until [ -e /barrier/{other} ] || [ $n -ge 6000 ]; do "
    "sleep 0.01; n=$((n+1)); done; "
    "ls /workspace | sort | tr '\\n' ' '; cat shared.txt"
)


def start(path: str, script: str, barrier: Path) -> subprocess.Popen[str]:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    return subprocess.Popen(
        [
            "podman",
            "run",
            "--rm",
            "--network=none",
            "-v",
            f"{path}:/workspace:rw",
            "-v",
            f"{barrier}:/barrier:rw",
            "-w",
            "/workspace",
            "--rootfs",
            "/:O",
            "/bin/sh",
            "-c",
            script,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)},
    )


def snapshot_of(fs: InMemoryFilesystem) -> dict[str, str]:
    return {m.path: fs.read(m.path).content for m in fs.glob("**/*") if m.is_file}


def test_two_forks_two_containers_neither_sees_the_other(mounted: Mounted, tmp_path: Path) -> None:
    origin = mounted.fs
    origin.write("src/app.py", "print('origin')\n")
    origin.write("src/drop-a.py", "a\n")
    origin.write("src/drop-b.py", "b\n")
    before = snapshot_of(origin)
    forks = {"a": origin.fork(), "b": origin.fork()}
    paths = {name: mounted.handle.add_fork(name, fork) for name, fork in forks.items()}
    # Both containers run at once, each writing its own fork through the one mount.
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    running = {
        name: start(paths[name], WRITER.format(me=name, other="b" if name == "a" else "a"), barrier)
        for name in forks
    }
    outputs = {name: proc.communicate(timeout=120) for name, proc in running.items()}
    for name, (out, err) in outputs.items():
        assert running[name].returncode == 0, err
        listing, shared = out.strip().rsplit(" ", 1)
        other = "b" if name == "a" else "a"
        assert f"{name}-200.txt" in listing.split()
        assert not [entry for entry in listing.split() if entry.startswith(f"{other}-")]
        assert shared == name
    for name, fork in forks.items():
        other = "b" if name == "a" else "a"
        assert fork.read("shared.txt").content == f"{name}\n"
        assert fork.read(f"{name}-7.txt").content == f"{name}7\n"
        assert not fork.exists(f"{other}-7.txt")
        assert not fork.exists(f"src/drop-{name}.py")
        assert fork.exists(f"src/drop-{other}.py")
        assert sorted(os.listdir(Path(paths[name]) / "out")) == [name]
    assert snapshot_of(origin) == before  # the origin is unchanged
    assert sorted(os.listdir(mounted.root)) == ["src"]
