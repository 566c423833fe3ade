"""A Podman container on the mount at /workspace sees the live tree, and the API sees its writes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import Mounted

CONTAINERS_CONF = Path(__file__).resolve().parents[2] / "config" / "containers.conf"

pytestmark = pytest.mark.container


def podman(mounted: Mounted, script: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    return subprocess.run(
        [
            "podman",
            "run",
            "--rm",
            "--network=none",
            "-v",
            f"{mounted.root}:/workspace:rw",
            "-w",
            "/workspace",
            "--rootfs",
            "/:O",
            "/bin/sh",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)},
    )


def test_container_and_api_share_the_tree(mounted: Mounted) -> None:
    mounted.fs.write("/workspace/src/app.py", "print('hello from the API')\n")
    before = mounted.fs.snapshot()
    result = podman(
        mounted,
        "python3 src/app.py && mkdir -p build && echo built > build/out.txt "
        "&& sed -i 's/API/container/' src/app.py && ls -1 /workspace",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["hello from the API", "build", "src"]
    assert mounted.fs.read("build/out.txt").content == "built\n"
    assert "container" in mounted.fs.read("src/app.py").content
    diff = mounted.fs.diff(before)
    assert diff.added == ("build/out.txt",)
    assert diff.modified == ("src/app.py",)
    mounted.fs.restore(before)
    again = podman(mounted, "ls -1 /workspace && cat src/app.py")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == ["src", "print('hello from the API')"]
