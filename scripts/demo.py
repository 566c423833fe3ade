"""The main job, driven by the ``workspacefs`` command: mount a workspace, run a Podman
container on it, snapshot, diff, restore, persist to git, load it back, fork it,
merge the fork back, ask who changed a file, then kill the daemon with SIGKILL and
resume the named workspace with nothing acknowledged lost.

Run with scripts/demo.sh. Every step prints the command and what it answered.
Idempotent: everything lives in a fresh scratch directory that is unmounted
and removed at the end, whatever happens.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKSPACEFS = [sys.executable, "-m", "workspacefs.cli"]


def workspacefs(*args: str, check: bool = True, show: int = 12) -> str:
    """Run one command, print it and (up to ``show`` lines of) its output."""
    print(f"\n$ workspacefs {shlex.join(args)}")
    result = subprocess.run([*WORKSPACEFS, *args], capture_output=True, text=True, check=False)
    lines = (result.stdout + result.stderr).rstrip().splitlines()
    for line in lines[:show]:
        print(f"  {line}")
    if show and len(lines) > show:
        print(f"  ... ({len(lines) - show} more lines)")
    if check and result.returncode != 0:
        raise SystemExit(f"demo: `workspacefs {args[0]}` failed with status {result.returncode}")
    return result.stdout


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="workspacefs-demo-"))
    ws, again, repo = scratch / "ws", scratch / "again", scratch / "snapshots.git"
    name = f"demo-{secrets.token_hex(3)}"
    ws.mkdir()
    again.mkdir()
    try:
        print("== is this machine ready?")
        workspacefs("doctor", check=False)

        print("\n== mount a named workspace holding this repository's sources: a daemon owns")
        print("   it, its store on disk keeps each change within a second, each snapshot at once")
        workspacefs(
            "mount", str(ws), "--name", name, "--from", str(REPO / "src"), "--persist", str(repo)
        )
        workspacefs("snapshot", str(ws), "--tag", "hydrated")

        print("\n== an agent works in a Podman container on /workspace")
        workspacefs(
            "run",
            "--mountpoint",
            str(ws),
            "--",
            "/bin/sh",
            "-c",
            "python3 -m compileall -q workspacefs && echo compiled; "
            "grep -rl 'def snapshot' workspacefs | sort | head -3; "
            "mkdir -p notes && echo '# plan' > notes/plan.md; "
            "sed -i 's/O(1)/constant time/' workspacefs/tree/_tree.py; "
            "rm -r workspacefs/testing",
        )

        print("\n== what changed since the snapshot (O(changes)), and the workspace's state")
        changes = json.loads(workspacefs("diff", str(ws), "hydrated", "--json", show=0))
        print(
            f"  added {len(changes['added'])} (notes/plan.md and .pyc files), "
            f"modified {changes['modified']}, deleted {len(changes['deleted'])}"
        )
        workspacefs("diff", str(ws), "hydrated", "--patch", show=8)
        workspacefs("status", str(ws))

        print("\n== restore the snapshot: the mount shows it at once")
        workspacefs("restore", str(ws), "hydrated")
        print(f"  notes/ exists after restore: {(ws / 'notes').exists()}")
        workspacefs("diff", str(ws), "hydrated")

        print("\n== persist to git (incremental), then load it back in a new daemon")
        (ws / "notes.md").write_text("# persisted through the mount\n")
        workspacefs("persist", str(ws), "--tag", "with-notes")
        workspacefs("log", str(ws))
        workspacefs("mount", str(again), "--from", f"{repo}#with-notes", "--durability", "none")
        print(f"  {again}/notes.md: {(again / 'notes.md').read_text().strip()}")
        workspacefs("list")

        print("\n== fork in O(1), change the fork through its path, merge it back")
        fork = workspacefs("fork", "--of", str(ws), "--name", "exp").strip()
        subprocess.run(
            ["/bin/sh", "-c", f"echo '- tried in a fork' >> {fork}/notes.md"], check=True
        )
        print(f"  the workspace's notes.md unchanged: {(ws / 'notes.md').read_text().strip()!r}")
        workspacefs("merge", "exp", "--of", str(ws), "--dry-run")
        workspacefs("merge", "exp", "--of", str(ws))
        workspacefs("fork", "--of", str(ws), "--drop", "exp")

        print("\n== who changed notes.md, snapshot by snapshot")
        workspacefs("snapshot", str(ws), "--tag", "merged")
        workspacefs("blame", str(ws), "notes.md")

        print("\n== bad input gets one clear line and an exit code")
        workspacefs("restore", str(ws), "no-such-snapshot", check=False)
        workspacefs("status", str(scratch), check=False)

        print("\n== kill -9 the daemon: the named workspace resumes, nothing acknowledged lost")
        (ws / "notes.md").write_text("# written just before the crash\n")
        workspacefs("snapshot", str(ws), "--tag", "before-crash")  # a durability point
        pid = json.loads(workspacefs("status", str(ws), "--json", show=0))["pid"]
        print(f"\n$ kill -9 {pid}")
        os.kill(pid, signal.SIGKILL)
        workspacefs("doctor", "--fix", check=False, show=40)
        workspacefs("mount", str(ws), "--name", name)
        print(f"  notes.md after resuming: {(ws / 'notes.md').read_text().strip()!r}")
        workspacefs("log", str(ws))
        workspacefs("unmount", str(ws))
        workspacefs("list", "--all")
    finally:
        for mountpoint in (ws, again):
            subprocess.run([*WORKSPACEFS, "unmount", str(mountpoint)], capture_output=True)
        subprocess.run([*WORKSPACEFS, "discard", name], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n== done: both workspaces unmounted, {name} discarded")


if __name__ == "__main__":
    main()
