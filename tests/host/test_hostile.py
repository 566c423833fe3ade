"""The hostile host: an agent plants symlinks and races renames under every operation
that touches a real directory. After each attack a sentinel tree outside the root is
unchanged, and nothing from outside was read into the workspace.

Attacks, from issue 12: a file or directory of the root replaced by a symlink (absolute,
relative, a chain) before a restore; the same swap raced by a second process during
restores, snapshots, imports and hydrations; snapshot records and ids edited to name
something else. Every host snapshot strategy and the shadow provider face them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from workspacefs import FilesystemSnapshot, HostFilesystem, HostMount, InMemoryFilesystem
from workspacefs.host import GitShadowProvider
from workspacefs.posix import _descriptors as descriptors
from workspacefs.posix import openat2_available

from .hostile import (
    GIT_ENV,
    RACE_SECONDS,
    SECRET,
    SLOW_RACE_SECONDS,
    checksum,
    holds_secret,
    make_sentinel,
    state,
    swapping,
)

STRATEGIES = ["git", "copy", "archive"]


def use_resolution(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolve with openat2 (the kernel refuses links) or with the component walk."""
    if how == "component walk":
        monkeypatch.setattr(descriptors._openat2, "usable", False)
    elif not openat2_available():
        pytest.skip("this kernel has no openat2")


@pytest.fixture(params=["openat2", "component walk"])
def resolution(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    use_resolution(request.param, monkeypatch)
    return str(request.param)


@pytest.fixture(
    params=[
        pytest.param(("openat2", RACE_SECONDS), id="short"),
        pytest.param(("component walk", SLOW_RACE_SECONDS), id="long", marks=pytest.mark.slow),
    ]
)
def race(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> float:
    """How long a race runs, and with which resolution: a short one with openat2, a
    long one (``slow``) with the component walk."""
    how, seconds = request.param
    if how == "openat2" and not openat2_available():
        how = "component walk"
    use_resolution(how, monkeypatch)
    return float(seconds)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return make_sentinel(tmp_path)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src" / "lib").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('snapshot')\n")
    (root / "src" / "lib" / "util.py").write_text("UTIL = 1\n")
    (root / "notes.txt").write_text("snapshot notes\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


def host(root: Path, tmp_path: Path, strategy: str) -> HostFilesystem:
    return HostFilesystem(
        root,
        git_dir=tmp_path / "g.git",
        snapshot_dir=tmp_path / "kept",
        snapshot_strategy=strategy,  # type: ignore[arg-type]
    )


def plant(link: Path, target: str | Path) -> None:
    """Replace whatever ``link`` is by a symlink to ``target``, as an agent would."""
    if link.is_dir() and not link.is_symlink():
        subprocess.run(["rm", "-rf", str(link)], check=True)
    elif link.exists() or link.is_symlink():
        link.unlink()
    os.symlink(target, link)


def plant_chain(root: Path) -> None:
    plant(root / "hop", "../outside")
    plant(root / "src", "hop/dir")


PLANTS: dict[str, Callable[[Path, Path], None]] = {
    "file link, relative": lambda r, o: plant(r / "notes.txt", "../outside/victim/.bashrc"),
    "file link, absolute": lambda r, o: plant(r / "notes.txt", o / "victim" / ".bashrc"),
    "dir link, absolute": lambda r, o: plant(r / "src", o / "dir"),
    "dir link, relative": lambda r, o: plant(r / "src", "../outside/dir"),
    "dir link, chain": lambda r, o: plant_chain(r),
    "nested dir link": lambda r, o: plant(r / "src" / "lib", o / "dir" / "lib"),
}


@pytest.mark.parametrize("attack", sorted(PLANTS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_restore_replaces_planted_links(
    strategy: str, attack: str, root: Path, outside: Path, tmp_path: Path, resolution: str
) -> None:
    fs = host(root, tmp_path, strategy)
    before = state(root)
    snapshot = fs.snapshot()
    sentinel = checksum(outside)
    PLANTS[attack](root, outside)
    fs.restore(snapshot)
    assert checksum(outside) == sentinel
    assert state(root) == before
    assert not fs.diff(snapshot).changed


@pytest.mark.parametrize("attack", sorted(PLANTS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_snapshot_never_reads_through_planted_links(
    strategy: str, attack: str, root: Path, outside: Path, tmp_path: Path, resolution: str
) -> None:
    fs = host(root, tmp_path, strategy)
    PLANTS[attack](root, outside)
    snapshot = fs.snapshot()
    (root / "notes.txt").unlink(missing_ok=True)
    fs.restore(snapshot)
    assert holds_secret(root) == []


def race_restores(fs: HostFilesystem, root: Path, outside: Path, seconds: float) -> int:
    for i in range(300):  # a restore long enough for the swap to land inside it
        (root / "src" / "lib" / f"m{i}.py").write_text(f"M = {i}\n")
    snapshot = fs.snapshot()
    os.symlink(outside / "dir", root.parent / "evil")
    sentinel = checksum(outside)
    restores = 0
    with swapping(root / "src", root.parent / "evil", seconds) as swapper:
        while swapper.process is not None and swapper.process.poll() is None:
            try:
                fs.write("src/app.py", f"changed {restores}\n")
                fs.write("src/lib/util.py", "changed\n")
            except OSError:
                pass  # src is a link at this moment: the API refuses, as it should
            try:
                fs.restore(snapshot)
                restores += 1
            except OSError:
                pass  # losing the race may fail a restore; it must never write outside
    assert swapper.swaps > 0
    assert checksum(outside) == sentinel
    if (root / "src").is_symlink():  # the race ended mid-swap: undo it, then restore
        os.rename(root / "src", root.parent / "spare")
        os.rename(root.parent / "evil", root / "src")
    fs.restore(snapshot)
    assert not fs.diff(snapshot).changed
    assert checksum(outside) == sentinel
    return restores


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_restore_racing_a_directory_swap(
    strategy: str, root: Path, outside: Path, tmp_path: Path, race: float
) -> None:
    # The root sits in a directory of its own so that the swap partner is outside it.
    assert race_restores(host(root, tmp_path, strategy), root, outside, race) > 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_snapshot_racing_a_directory_swap(
    strategy: str, root: Path, outside: Path, tmp_path: Path, race: float
) -> None:
    fs = host(root, tmp_path, strategy)
    os.symlink(outside / "dir", root.parent / "evil")
    taken: list[FilesystemSnapshot] = []
    with swapping(root / "src", root.parent / "evil", race) as swapper:
        while swapper.process is not None and swapper.process.poll() is None:
            (root / "notes.txt").write_text(f"round {len(taken)}\n")
            with contextlib.suppress(OSError):
                taken.append(fs.snapshot())
    assert swapper.swaps > 0
    assert taken
    if (root / "src").is_symlink():
        os.rename(root / "src", root.parent / "spare")
        os.rename(root.parent / "evil", root / "src")
    for snapshot in taken:
        fs.restore(snapshot)
        assert holds_secret(root) == [], snapshot


# -- imports ------------------------------------------------------------------------


def archive_of(tmp_path: Path, files: int = 2000) -> Path:
    source = InMemoryFilesystem()
    for i in range(files):
        source.write(f"d/sub/f{i}.txt", f"archived {i}\n")
    from workspacefs.archive import export_archive

    export_archive(source, tmp_path / "in.zip")
    return tmp_path / "in.zip"


def test_import_racing_a_staging_swap(
    root: Path, outside: Path, tmp_path: Path, race: float
) -> None:
    archive = archive_of(tmp_path)
    fs = HostFilesystem(root)
    os.symlink(outside / "dir", root.parent / "evil")
    sentinel = checksum(outside)
    imports = 0
    pattern = root / ".workspacefs-import-*" / "d"
    with swapping(pattern, root.parent / "evil", race) as swapper:
        while swapper.process is not None and swapper.process.poll() is None:
            try:
                fs.import_archive(archive)
                imports += 1
            except OSError:
                pass
    assert swapper.swaps > 0
    assert imports > 0
    assert checksum(outside) == sentinel


# -- hydrate ------------------------------------------------------------------------


def test_hydrate_racing_a_directory_swap(tmp_path: Path, outside: Path, race: float) -> None:
    allowed = tmp_path / "allowed"
    (allowed / "project" / "src" / "lib").mkdir(parents=True)
    for name in ("app.py", "notes.txt", "lib/util.py"):  # the names the sentinel has too
        (allowed / "project" / "src" / name).write_text("fine\n")
    os.symlink(outside / "dir", tmp_path / "evil")
    hydrated = 0
    with swapping(allowed / "project" / "src", tmp_path / "evil", race) as swapper:
        while swapper.process is not None and swapper.process.poll() is None:
            fs = InMemoryFilesystem()
            try:
                fs.hydrate_from_host(HostMount("project"), allowed_roots=[allowed])
                hydrated += 1
            except OSError:
                continue
            for match in fs.glob("**"):
                if match.is_file:
                    assert SECRET not in fs.read_bytes(match.path).content, match.path
    assert swapper.swaps > 0
    assert hydrated > 0


CHAIN = "d/u/" * 8 + "../" * 16 + "etc/passwd"


def chained_tree(top: Path) -> None:
    (top / "d").mkdir(parents=True)
    os.symlink("..", top / "d" / "u")
    os.symlink(CHAIN, top / "pw")
    (top / "fine.txt").write_text("fine\n")


def test_hydrate_of_a_chained_link_is_refused(
    tmp_path: Path, outside: Path, resolution: str
) -> None:
    allowed = tmp_path / "allowed"
    chained_tree(allowed / "project")
    fs = InMemoryFilesystem()
    fs.write("kept.txt", "kept")
    with pytest.raises(PermissionError, match="symlink"):
        fs.hydrate_from_host(HostMount("project"), allowed_roots=[allowed])
    assert [e.name for e in fs.list()] == ["kept.txt"]


def test_hydrate_sanitises_special_modes(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    (allowed / "p" / "shared").mkdir(parents=True)
    (allowed / "p" / "shared" / "file.txt").write_text("shared\n")
    (allowed / "p" / "tool").write_text("#!/bin/sh\n")
    os.chmod(allowed / "p" / "tool", 0o4755)
    os.chmod(allowed / "p" / "shared", 0o3777)
    fs = InMemoryFilesystem()
    fs.hydrate_from_host(HostMount("p"), allowed_roots=[allowed])
    assert fs.stat("p/tool").mode & 0o7777 == 0o755
    assert fs.stat("p/shared").mode & 0o7777 == 0o1777  # setgid gone, the sticky bit kept


# -- the shadow provider ------------------------------------------------------------


@pytest.fixture
def repo(root: Path) -> Path:
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "initial"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=GIT_ENV)
    return root


@pytest.mark.parametrize("attack", sorted(PLANTS))
def test_shadow_restore_replaces_planted_links(
    attack: str, repo: Path, outside: Path, resolution: str
) -> None:
    provider = GitShadowProvider(repo, session_id="s", include_untracked=True)
    before = {k: v for k, v in state(repo).items() if not k.startswith(".git")}
    snapshot = provider.snapshot()
    sentinel = checksum(outside)
    PLANTS[attack](repo, outside)
    provider.restore(snapshot)
    assert checksum(outside) == sentinel
    after = {k: v for k, v in state(repo).items() if not k.startswith(".git")}
    assert {k: v for k, v in after.items() if k != "hop"} == before


@pytest.mark.parametrize("attack", sorted(PLANTS))
def test_shadow_snapshot_never_reads_through_planted_links(
    attack: str, repo: Path, outside: Path, resolution: str
) -> None:
    provider = GitShadowProvider(repo, session_id="s", include_untracked=True)
    PLANTS[attack](repo, outside)
    snapshot = provider.snapshot()
    command = ["git", "-C", str(repo), "grep", "-l", SECRET.decode(), snapshot.commit]
    listing = subprocess.run(command, capture_output=True, text=True, env=GIT_ENV)
    assert listing.stdout == ""


def test_shadow_restore_racing_a_directory_swap(repo: Path, outside: Path, race: float) -> None:
    provider = GitShadowProvider(repo, session_id="s")
    snapshot = provider.snapshot()
    os.symlink(outside / "dir", repo.parent / "evil")
    sentinel = checksum(outside)
    with swapping(repo / "src", repo.parent / "evil", race) as swapper:
        while swapper.process is not None and swapper.process.poll() is None:
            with contextlib.suppress(OSError):
                provider.restore(snapshot)
    assert swapper.swaps > 0
    assert checksum(outside) == sentinel


def test_shadow_branch_racing_a_directory_swap(
    repo: Path, outside: Path, tmp_path: Path, race: float
) -> None:
    provider = GitShadowProvider(repo, session_id="s")
    snapshot = provider.snapshot()
    os.symlink(outside / "dir", tmp_path / "evil")
    sentinel = checksum(outside)
    made = 0
    with swapping(tmp_path / "wt-*" / "src", tmp_path / "evil", race) as swapper:
        while swapper.process is not None and swapper.process.poll() is None:
            with contextlib.suppress(OSError):
                provider.branch(snapshot, f"b{made}", tmp_path / f"wt-{made}")
            made += 1
    assert swapper.swaps > 0
    assert checksum(outside) == sentinel
    provider.cleanup()
    assert checksum(outside) == sentinel


def test_shadow_cleanup_follows_no_edited_record(repo: Path, outside: Path, tmp_path: Path) -> None:
    provider = GitShadowProvider(repo, session_id="s")
    snapshot = provider.snapshot()
    provider.branch(snapshot, "one", tmp_path / "wt-one")
    provider.seek(snapshot, tmp_path / "wt-two")
    admin = repo / ".git" / "worktrees" / "wsfs-s-one"
    (admin / "gitdir").write_text(f"{outside / 'dir' / '.git'}\n")  # the record, edited
    subprocess.run(["rm", "-rf", str(tmp_path / "wt-two")], check=True)
    os.symlink(outside / "dir", tmp_path / "wt-two")  # the worktree, replaced by a link
    sentinel = checksum(outside)
    provider.cleanup()
    assert checksum(outside) == sentinel
    assert not admin.exists()


# -- records and ids from outside ---------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_edited_snapshot_record_is_refused(strategy: str, root: Path, tmp_path: Path) -> None:
    from workspacefs import SnapshotNotFoundError

    victim = tmp_path / "victim-home"
    victim.mkdir()
    (victim / "id_rsa").write_bytes(SECRET)
    other = host(victim, tmp_path / "elsewhere", strategy)
    elsewhere = other.snapshot()  # a real snapshot, of another directory and store
    fs = host(root, tmp_path, strategy)
    record = fs.snapshot().to_dict()
    before = state(root)
    edits: list[dict[str, str | None]] = [
        {"location": str(victim)},
        {"location": elsewhere.ref.location},
    ]
    if strategy == "git":
        edits = [
            {"location": elsewhere.ref.location, "repository": elsewhere.ref.repository},
            {"repository": elsewhere.ref.repository},
        ]
    for edit in edits:
        forged = FilesystemSnapshot.from_dict({**record, "ref": {**record["ref"], **edit}})
        with pytest.raises(SnapshotNotFoundError):
            HostFilesystem(root).restore(forged)
        assert state(root) == before
    assert holds_secret(root) == []


def test_session_ids_are_names_not_paths(tmp_path: Path) -> None:
    from workspacefs import JsonSession, SessionCheckpoints, dump_session, load_session

    fs = InMemoryFilesystem()
    fs.write("a.txt", "a")
    (tmp_path / "sessions").mkdir()
    with pytest.raises(ValueError, match="id"):
        dump_session(JsonSession(), fs, tmp_path / "sessions", "../x")
    with pytest.raises(ValueError, match="id"):
        load_session(tmp_path / "sessions", "../x", JsonSession(), fs)
    checkpoints = SessionCheckpoints(JsonSession(), {"workspace": fs}, tmp_path / "sessions")
    with pytest.raises(ValueError, match="id"):
        checkpoints.checkpoint("../x")
    with pytest.raises(ValueError, match="id"):
        checkpoints.rollback("../x")
    with pytest.raises(ValueError, match="key"):
        SessionCheckpoints(JsonSession(), {"../up": fs}, tmp_path / "sessions")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sessions"]


def test_edited_shadow_record_is_refused(repo: Path) -> None:
    from dataclasses import replace

    from workspacefs import SnapshotNotFoundError

    provider = GitShadowProvider(repo, session_id="s")
    snapshot = provider.snapshot()
    other = GitShadowProvider(repo, session_id="other").snapshot()
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        env=GIT_ENV,
        check=True,
    ).stdout.strip()
    for commit in (head, other.commit, "0" * 40, "HEAD"):
        with pytest.raises(SnapshotNotFoundError):
            provider.restore(replace(snapshot, commit=commit))
