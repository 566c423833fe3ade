"""``exec``: exit codes, timeouts that kill the process group, big output, background jobs."""

from __future__ import annotations

import threading
import time
import tracemalloc

import pytest

from workspacefs import InMemoryFilesystem, InvalidArgumentError, SnapshotRetentionPolicy
from workspacefs.sandbox import PodmanSandbox

pytestmark = pytest.mark.container


def processes(box: PodmanSandbox) -> list[str]:
    """Command lines of the container's processes, but for the one asking."""
    listing = box.exec("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
    return [line.strip() for line in listing.stdout.splitlines() if line.strip()]


def test_exit_code_and_streams(sandbox: PodmanSandbox) -> None:
    result = sandbox.exec("echo out; echo err >&2; printf 'no newline'; exit 3")
    assert result.exit_code == 3
    assert not result.ok
    assert not result.timed_out
    assert result.stdout == "out\nno newline"
    assert result.stderr == "err\n"
    assert (result.stdout_bytes, result.stderr_bytes, result.cut_bytes) == (14, 4, 0)
    missing = sandbox.exec("no-such-command-here")
    assert missing.exit_code == 127
    assert "not found" in missing.stderr


def test_cwd_env_and_stdin(sandbox: PodmanSandbox) -> None:
    sandbox.filesystem.mkdir("/workspace/sub/dir")
    result = sandbox.exec('pwd; echo "$GREETING"', cwd="sub/dir", env={"GREETING": "hi there"})
    assert result.stdout == "/workspace/sub/dir\nhi there\n"
    assert sandbox.exec("pwd", cwd="/tmp").stdout == "/tmp\n"
    data = bytes(range(256)) * 8192  # 2 MiB, more than a pipe holds: written as read
    counted = sandbox.exec("wc -c; echo done >&2", stdin=data)
    assert counted.stdout.strip() == str(len(data))
    assert sandbox.exec("cat", stdin="héllo\n").stdout == "héllo\n"
    ignored = sandbox.exec("true", stdin=data)  # never read: the rest is dropped, no hang
    assert ignored.ok
    with pytest.raises(InvalidArgumentError):
        sandbox.exec("  ")
    with pytest.raises(InvalidArgumentError):
        sandbox.exec("true", env={"BAD NAME": "x"})
    with pytest.raises(InvalidArgumentError):
        sandbox.exec("true", timeout=0)
    with pytest.raises(FileNotFoundError):
        sandbox.exec("pwd", cwd="no/such/dir")
    sandbox.filesystem.write("/workspace/file.txt", "x")
    with pytest.raises(NotADirectoryError):
        sandbox.exec("pwd", cwd="file.txt")


def test_timeout_kills_the_whole_process_group(sandbox: PodmanSandbox) -> None:
    started = time.monotonic()
    result = sandbox.exec(
        "sleep 301 & (sleep 302; echo never) & sh -c 'sleep 303' & echo started; sleep 304",
        timeout=1.5,
    )
    assert result.timed_out
    assert not result.ok
    assert result.exit_code == 137  # SIGKILL
    assert result.stdout == "started\n"
    assert 1.5 <= result.duration < 10
    assert time.monotonic() - started < 10
    assert not [p for p in processes(sandbox) if "sleep 30" in p]
    assert sandbox.exec("echo still here").stdout == "still here\n"


def test_a_timeout_right_away_still_kills(sandbox: PodmanSandbox) -> None:
    result = sandbox.exec("sleep 305", timeout=0.01)
    assert result.timed_out
    assert not [p for p in processes(sandbox) if "sleep 305" in p]


def test_background_jobs_end_with_their_command(sandbox: PodmanSandbox) -> None:
    started = time.monotonic()
    result = sandbox.exec("sleep 306 & sleep 307 > /dev/null & echo forked")
    assert result.ok
    assert result.stdout == "forked\n"
    assert time.monotonic() - started < 5  # it did not wait for them
    assert not [p for p in processes(sandbox) if "sleep 30" in p]
    # A process in a session of its own is a daemon: it keeps running.
    daemon = sandbox.exec("setsid sleep 308 > /dev/null 2>&1 < /dev/null &")
    assert daemon.ok
    assert [p for p in processes(sandbox) if p == "sleep 308"]


def test_a_daemon_holding_the_output_neither_holds_exec_nor_writes_into_the_next(
    sandbox: PodmanSandbox,
) -> None:
    started = time.monotonic()
    left = sandbox.exec("setsid sh -c 'sleep 1; echo late; echo late >&2' & echo early")
    assert left.ok
    assert left.stdout == "early\n"
    assert time.monotonic() - started < 1  # its end did not wait for the daemon's output
    later = sandbox.exec("sleep 2; echo next")
    assert (later.stdout, later.stderr) == ("next\n", "")
    # One that writes without end: what is read after the command's end is bounded, and
    # the daemon's next write, once nobody reads, ends it (SIGPIPE).
    started = time.monotonic()
    endless = sandbox.exec("setsid yes & echo forked >&2")
    assert endless.ok
    assert endless.stderr == "forked\n"
    assert time.monotonic() - started < 5
    assert not [p for p in processes(sandbox) if p == "yes"]


def test_100_mb_of_output_is_capped_in_bounded_memory(sandbox: PodmanSandbox) -> None:
    tracemalloc.start()
    try:
        result = sandbox.exec(
            "head -c 100000000 /dev/zero | tr '\\0' x; echo; echo last line; "
            "head -c 3000000 /dev/zero | tr '\\0' e >&2"
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    limit = sandbox.config.output_limit
    assert result.ok
    assert result.stdout_bytes == 100_000_000 + len("\nlast line\n")
    assert result.stderr_bytes == 3_000_000
    assert result.truncated
    assert result.cut_bytes == result.stdout_bytes + result.stderr_bytes - 4 * (limit // 2)
    assert result.stdout.startswith("x" * (limit // 2))
    assert result.stdout.endswith("x\nlast line\n")
    assert f"[... {result.stdout_bytes - limit:,} bytes of output cut" in result.stdout
    assert len(result.stdout) < limit + 200
    assert peak < 8 * limit + (4 << 20), f"peak Python allocation {peak:,} bytes"


def test_one_command_at_a_time(sandbox: PodmanSandbox) -> None:
    """Commands from two threads run one after the other, each diff its own."""
    results = {}

    def run(name: str) -> None:
        results[name] = sandbox.exec(f"echo {name} > {name}.txt; sleep 0.5")

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["a"].changes.added == ("a.txt",)
    assert results["b"].changes.added == ("b.txt",)


def test_each_exec_leaves_a_tagged_snapshot_pair(sandbox: PodmanSandbox) -> None:
    fs = sandbox.filesystem
    first = sandbox.exec("echo one > one.txt")
    second = sandbox.exec("rm one.txt; echo two > two.txt")
    tags = [s.tag for s in fs.snapshots()]
    for result in (first, second):
        assert result.before.tag in tags
        assert result.after.tag in tags
    number = first.before.tag.split("-")[1] if first.before.tag else ""
    assert first.after.tag == f"exec-{number}-after"
    assert second.changes.deleted == ("one.txt",)
    assert second.changes.added == ("two.txt",)
    sandbox.restore(second.before)  # undo the second command
    assert sandbox.exec("cat one.txt; ls").stdout == "one\none.txt\n"


def test_changes_survive_a_retention_policy_keeping_one_snapshot() -> None:
    # The policy prunes "before" as soon as "after" is taken: the changes are
    # still what the command did, and try-runs (whose fork inherits the policy)
    # report theirs too.
    policy = SnapshotRetentionPolicy(max_count=1, keep_tagged=False)
    fs = InMemoryFilesystem(mount_point="/workspace", retention=policy)
    fs.write("kept.txt", "kept\n")
    with PodmanSandbox(fs) as box:
        result = box.exec("echo new > new.txt && rm kept.txt")
        assert (result.changes.added, result.changes.deleted) == (("new.txt",), ("kept.txt",))
        run = box.try_exec("echo tried > tried.txt")
        assert run.result.changes.added == ("tried.txt",)
        run.reject()
    assert [s.tag for s in fs.snapshots()] == ["exec-1-after"]
