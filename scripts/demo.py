"""The main job, as far as it exists: a workspace, edits, snapshots, diff, restore.

Run with scripts/demo.sh. Each step prints what it did.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from workspacefs import HostMount, InMemoryFilesystem


def step(title: str) -> None:
    print(f"\n== {title}")


def main() -> None:
    repo = Path(__file__).resolve().parent.parent
    fs = InMemoryFilesystem(mount_point="/workspace")

    step("hydrate the workspace from this repository's sources")
    count = fs.hydrate_from_host(
        HostMount("src", include_glob=("*.py",), mount_path="/workspace/src"),
        allowed_roots=[repo],
    )
    print(f"copied {count} files; {fs.tree.file_count} files, {fs.tree.total_bytes:,} bytes")

    step("snapshot (O(1))")
    started = time.perf_counter()
    base = fs.snapshot(tag="hydrated")
    elapsed_us = (time.perf_counter() - started) * 1e6
    print(f"snapshot {base.snapshot_id} '{base.tag}' in {elapsed_us:.0f} us")

    step("an agent edits: write, append, delete")
    fs.write("/workspace/notes/plan.md", "# plan\n- read the tree code\n")
    fs.write("notes/plan.md", "- snapshot before risky edits\n", mode="append")
    fs.delete("src/workspacefs/testing", recursive=True)
    print(fs.read("notes/plan.md").content, end="")

    step("glob and grep (RE2: linear time)")
    print([m.path for m in fs.glob("src/workspacefs/tree/*.py")])
    for match in fs.grep(r"def snapshot\(", glob="*.py"):
        print(f"{match.path}:{match.line_number}: {match.line_content.strip()}")

    step("diff against the snapshot (O(changes))")
    diff = fs.diff(base)
    print(f"added {list(diff.added)}")
    print(f"deleted {len(diff.deleted)} files, e.g. {list(diff.deleted[:2])}")
    print(f"unchanged {diff.unchanged_count}")

    step("browse the snapshot without restoring")
    view = fs.at(base)
    in_view, in_live = view.exists("src/workspacefs/testing"), fs.exists("src/workspacefs/testing")
    print(f"testing/ in the snapshot: {in_view}; in the live tree: {in_live}")

    step("restore (O(1))")
    fs.restore(base)
    print("after restore, diff is empty:", not fs.diff(base).changed)
    print("notes/plan.md exists:", fs.exists("notes/plan.md"))

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
    print("\nThe FUSE mount, containers and git persistence arrive in later releases.")


if __name__ == "__main__":
    main()
