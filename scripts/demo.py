"""The main job: a workspace mounted for a Podman container and the Python API at once.

Run with scripts/demo.sh. Each step prints what it did.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from workspacefs import HostMount, InMemoryFilesystem, git, mount

REPO = Path(__file__).resolve().parent.parent
CONTAINERS_CONF = REPO / "config" / "containers.conf"


def step(title: str) -> None:
    print(f"\n== {title}")


def container(mountpoint: Path, script: str) -> str:
    """Run ``script`` in a Podman container with the workspace at /workspace."""
    result = subprocess.run(
        ["podman", "run", "--rm", "--network=none", "-v", f"{mountpoint}:/workspace:rw",
         "-w", "/workspace", "--rootfs", "/:O", "/bin/sh", "-c", script],
        capture_output=True, text=True, check=False,
        env={**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)},
    )  # fmt: skip
    if result.returncode != 0:
        raise SystemExit(f"container failed: {result.stderr}")
    return result.stdout


def main() -> None:
    fs = InMemoryFilesystem(mount_point="/workspace")

    step("hydrate the workspace from this repository's sources")
    count = fs.hydrate_from_host(
        HostMount("src", include_glob=("*.py",), mount_path="/workspace/src"),
        allowed_roots=[REPO],
    )
    print(f"copied {count} files; {fs.tree.file_count} files, {fs.tree.total_bytes:,} bytes")

    with tempfile.TemporaryDirectory(prefix="workspacefs-demo-") as scratch:
        mountpoint = Path(scratch) / "workspace"
        mountpoint.mkdir()
        with mount(fs, mountpoint, allow_other=True):
            step(f"mounted at {mountpoint} (FUSE); snapshot before the agent starts (O(1))")
            started = time.perf_counter()
            base = fs.snapshot(tag="hydrated")
            elapsed_us = (time.perf_counter() - started) * 1e6
            print(f"snapshot '{base.tag}' {base.snapshot_id} in {elapsed_us:.0f} us")

            step("an agent works in a Podman container on /workspace")
            print(
                container(
                    mountpoint,
                    "python3 -m compileall -q src && echo compiled; "
                    "grep -rl 'def snapshot' src | sort; "
                    "mkdir -p notes && echo '# plan' > notes/plan.md; "
                    "sed -i 's/O(1)/constant time/' src/workspacefs/tree/_tree.py; "
                    "rm -r src/workspacefs/testing",
                ),
                end="",
            )

            step("... and through the Python API, on the same live tree")
            fs.write("notes/plan.md", "- snapshot before risky edits\n", mode="append")
            print(fs.read("notes/plan.md").content, end="")
            print("grep:", sorted({m.path for m in fs.grep("constant time", glob="*.py")}))

            step("diff against the snapshot (O(changes))")
            diff = fs.diff(base)
            compiled = [p for p in diff.added if p.endswith(".pyc")]
            print(f"added {len(diff.added)} ({len(compiled)} .pyc), e.g. notes/plan.md: "
                  f"{'notes/plan.md' in diff.added}")  # fmt: skip
            print(f"modified {list(diff.modified)}")
            print(f"deleted {list(diff.deleted)}")

            step("restore (O(1) plus invalidating what changed); the container sees it")
            started = time.perf_counter()
            fs.restore(base)
            print(f"restored in {(time.perf_counter() - started) * 1e3:.1f} ms")
            print(container(mountpoint, "ls /workspace; ls src/workspacefs | head -3"), end="")
            print("diff after restore is empty:", not fs.diff(base).changed)

            step("browse the snapshot read-only, without restoring: API and /.snapshots")
            print(fs.at(base).read("src/workspacefs/tree/_tree.py", limit=1).content, end="")
            print(container(mountpoint, "ls /workspace/.snapshots; "
                            "head -1 /workspace/.snapshots/hydrated/src/workspacefs/__init__.py"),
                  end="")  # fmt: skip

            step("persist to git (pygit2): the snapshot, then the agent's work incrementally")
            repo = Path(scratch) / "snapshots.git"
            first = git.persist(fs, base, repo)
            print(f"{first.ref} -> {first.commit[:12]} ({first.objects_written} objects)")
            fs.write("notes/plan.md", "# plan\n- persisted\n")
            later = fs.snapshot(tag="with-notes")
            second = git.persist(fs, later, repo)
            print(f"{second.ref} -> {second.commit[:12]} ({second.objects_written} objects)")
            log = subprocess.run(
                ["git", f"--git-dir={repo}", "log", "--shortstat", "--format=%h %s", second.ref],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            print(log.strip())

            step("load it back in a fresh process (lazily) and read from it")
            loader = (
                "from workspacefs import git\n"
                f"fs = git.load({str(repo)!r}, 'with-notes', workspace={fs.workspace_id!r})\n"
                "print(fs.read('notes/plan.md').content, end='')\n"
                "print(fs.tree.file_count, 'files')\n"
            )
            print(subprocess.run([sys.executable, "-c", loader], capture_output=True,
                                 text=True, check=True).stdout, end="")  # fmt: skip

        step("bad input gets clear errors and changes nothing")
        attempts: list[tuple[Callable[[], object], str]] = [
            (lambda: fs.read("../../etc/passwd"), "path escape"),
            (lambda: fs.read("/etc/passwd"), "absolute path outside /workspace"),
            (lambda: fs.write("big.txt", "x" * 48_001), "oversize write"),
            (lambda: fs.grep(r"(a)\1"), "unsupported regex"),
        ]
        for action, label in attempts:
            try:
                action()
            except (OSError, ValueError) as exc:
                print(f"{label:<34} -> {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
