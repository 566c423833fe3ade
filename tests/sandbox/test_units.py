"""The sandbox's parts that need no container: output capture, options, preflight."""

from __future__ import annotations

import inspect
import os
import tracemalloc
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem, InvalidArgumentError
from workspacefs.sandbox import (
    ExecResult,
    PodmanSandbox,
    SandboxConfig,
    SandboxOptions,
    TryRun,
    containers_conf,
    preflight,
)
from workspacefs.sandbox._config import parse_size
from workspacefs.sandbox._output import Capture

REPO = Path(__file__).resolve().parents[2]


def test_capture_keeps_everything_within_the_limit() -> None:
    capture = Capture(100)
    for piece in (b"hello ", b"w\xc3\xb6rld"):
        capture.feed(piece)
    kept = capture.result()
    assert (kept.text, kept.total_bytes, kept.cut_bytes, kept.truncated) == (
        "hello wörld",
        12,
        0,
        False,
    )


def test_capture_keeps_head_and_tail_and_counts_the_cut() -> None:
    capture = Capture(10)
    data = bytes(range(48, 58)) * 100  # "0123456789" x 100
    for start in range(0, len(data), 7):
        capture.feed(data[start : start + 7])
    kept = capture.result()
    assert kept.total_bytes == 1000
    assert kept.cut_bytes == 990
    assert kept.text.startswith("01234\n[... 990 bytes of output cut")
    assert kept.text.endswith("...]\n56789")


def test_capture_drops_a_split_character_at_the_cut() -> None:
    capture = Capture(4)
    capture.feed(b"ab" + "é".encode() * 10 + b"yz")  # the tail window starts mid-character
    kept = capture.result()
    assert kept.text.endswith("\néyz") or kept.text.endswith("\nyz")
    assert "\ufffd" not in kept.text.split("]\n")[-1]
    assert kept.cut_bytes == kept.total_bytes - 2 - len(kept.text.split("]\n")[-1].encode())


def test_capture_memory_is_bounded() -> None:
    capture = Capture(1 << 16)
    chunk = b"x" * (1 << 16)
    tracemalloc.start()
    try:
        for _ in range(1600):  # 100 MiB
            capture.feed(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert capture.total_bytes == 100 << 20
    assert peak < 1 << 20


def test_sizes() -> None:
    assert parse_size("512m", "memory") == 512 << 20
    assert parse_size("2g", "memory") == 2 << 30
    assert parse_size("1.5GiB", "disk") == 3 << 29
    assert parse_size(4096, "disk") == 4096
    for bad in ("lots", "-1g", "0", 0, True):
        with pytest.raises(InvalidArgumentError):
            parse_size(bad, "memory")


def config(**changes: object) -> SandboxConfig:
    return SandboxConfig.build(**changes)  # type: ignore[arg-type]


def test_options_are_checked_before_anything_starts() -> None:
    assert config().rootfs == "/"
    assert config().image is None
    assert config(rootfs="/:O").podman_overlay
    assert config(workdir="/work/../ws/").workdir == "/ws"
    assert config(env={"A": "1"}).env == (("A", "1"),)
    bad: list[dict[str, object]] = [
        {"image": "x", "rootfs": "/"},
        {"image": "--privileged"},
        {"rootfs": "/no/such/dir"},
        {"workdir": "relative"},
        {"workdir": "/"},
        {"workdir": "/a:b"},
        {"network": "--host"},
        {"cpus": 0},
        {"cpus": (os.cpu_count() or 1) + 1},
        {"pids_limit": 0},
        {"memory": "lots"},
        {"env": {"1BAD": "x"}},
        {"env": {"A": "nul\0"}},
        {"timeout": 0},
        {"output_limit": -1},
    ]
    for changes in bad:
        with pytest.raises(InvalidArgumentError):
            config(**changes)


def test_sandbox_options_name_every_option_of_a_container() -> None:
    keywords = {
        name
        for name, parameter in inspect.signature(SandboxConfig.build).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert set(SandboxOptions.__annotations__) == keywords


def test_a_filesystem_seen_elsewhere_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="mount_point"):
        PodmanSandbox(InMemoryFilesystem(mount_point="/elsewhere"))
    with pytest.raises(InvalidArgumentError, match="mount_point"):
        PodmanSandbox(InMemoryFilesystem())


def test_the_packaged_containers_conf_is_the_repository_s() -> None:
    packaged = REPO / "src" / "workspacefs" / "sandbox" / "containers.conf"
    assert packaged.read_text() == (REPO / "config" / "containers.conf").read_text()


def test_preflight_names_each_missing_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTAINERS_CONF", str(tmp_path / "missing.conf"))
    problems = preflight()
    assert any(p.startswith("containers.conf: ") and "does not exist" in p for p in problems)

    crun = tmp_path / "crun.conf"
    crun.write_text('[engine]\nruntime = "crun"\ncgroup_manager = "systemd"\n')
    monkeypatch.setenv("CONTAINERS_CONF", str(crun))
    problems = preflight()
    assert any("sets no nofile ulimit" in p for p in problems)
    if not os.path.isdir("/run/systemd/system"):
        assert any(p.startswith("cgroup manager: systemd is not running") for p in problems)

    monkeypatch.setenv("CONTAINERS_CONF", str(REPO / "config" / "containers.conf"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no podman, no runtime on it
    problems = preflight()
    assert problems[0].startswith("podman: not installed")
    assert any(p.startswith("OCI runtime: runc is not installed") for p in problems)
    for problem in problems:
        assert "\n" not in problem


def test_preflight_names_an_unusable_root_filesystem(tmp_path: Path) -> None:
    if preflight():
        pytest.skip("this machine cannot run a sandbox at all: " + "; ".join(preflight()))
    assert preflight() == []
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sh").touch()
    assert preflight(rootfs=tmp_path) == [
        f"root filesystem: {tmp_path} lacks setsid in /bin or /usr/bin"
    ]
    (missing,) = preflight(image="localhost/workspacefs-no-such-image:latest")
    assert missing.startswith("root filesystem: no local image")
    assert containers_conf().endswith("containers.conf")


def test_an_accepted_try_reports_its_own_changes_not_a_write_right_after() -> None:
    origin = InMemoryFilesystem()
    origin.write("a.txt", "a")
    fork = origin.fork()
    before = fork.snapshot()
    fork.write("t.txt", "try")
    after = fork.snapshot()
    result = ExecResult(0, "", "", 0.0, False, fork.diff(before, after), before=before, after=after)
    released: list[TryRun] = []
    run = TryRun("try-1", result, fork, origin, "/nowhere", released.append)
    written: list[str] = []

    def write_meanwhile(journal: object) -> None:
        # Runs as soon as the fast-forward releases the lock, as another writer could.
        if not written:
            written.append("other.txt")
            origin.write("other.txt", "from the API")

    origin.subscribe(write_meanwhile)
    outcome = run.accept()
    assert written == ["other.txt"]
    assert outcome.applied
    assert outcome.changed == ("t.txt",)
    assert released == [run]
