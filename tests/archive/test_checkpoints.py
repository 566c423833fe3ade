"""Every checkpoint that ``snapshot`` accepts restores exactly (issue 11, item 2).

The table: a venv (absolute links), relative links out, odd names, a
zero-filled 8 MiB file, names that are not UTF-8, empty directories, modes;
through ``ArchiveSnapshots``, ``SessionCheckpoints`` and ``dump_session``/
``load_session``, on the in-memory tree and on a host directory. Then the
same promise as a property over random trees.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from workspacefs import (
    ArchiveSnapshots,
    HostFilesystem,
    InMemoryFilesystem,
    JsonSession,
    SessionCheckpoints,
    dump_session,
    load_session,
)
from workspacefs.archive import export_archive, import_archive
from workspacefs.fs import Kind, LinkReach, link_reach
from workspacefs.minimal import FilesystemSnapshot, InMemoryBackend
from workspacefs.tree import ROOT_INO, Directory, File, Symlink, Tree

from .test_archive import picture

NOT_UTF8 = b"caf\xe9-\xff".decode("utf-8", "surrogateescape")


def _node(tree: Tree, path: str) -> int:
    ino = tree.resolve_path(path)
    assert ino is not None, path
    return ino


def venv(fs: InMemoryFilesystem) -> None:
    fs.write("venv/pyvenv.cfg", "home = /usr/bin\n")
    fs.write("venv/lib/python3.11/site-packages/pkg/__init__.py", "X = 1\n")
    with fs.tree.lock:
        tree = fs.tree
        bin_dir = tree.make_dirs("venv/bin")
        tree.symlink(bin_dir, "python", "/usr/bin/python3")
        tree.symlink(bin_dir, "python3", "python")
        tree.symlink(bin_dir, "python3.11", "python")
        tree.symlink(_node(tree, "venv"), "lib64", "lib")


def links_out(fs: InMemoryFilesystem) -> None:
    fs.write("src/main.c", "int main(void) { return 0; }\n")
    with fs.tree.lock:
        fs.tree.symlink(ROOT_INO, "out", "../build")
        fs.tree.symlink(_node(fs.tree, "src"), "up-and-out", "../../shared/include")
        fs.tree.symlink(ROOT_INO, "dangling", "nowhere/at/all")


def odd_names(fs: InMemoryFilesystem) -> None:
    names = [
        "back\\slash.txt",
        "50%.txt",
        "%41.txt",
        "new\nline",
        "tab\there",
        "sp ace",
        "ünïcødé",
        "\u200b",
        "-rf",
        "a:b",
        "*?[",
        ".workspacefs-escaped-x",
        "...",
    ]
    for name in names:
        fs.write(f"odd/{name}", f"{name!r}\n")
    fs.write("odd/dir\\with\\backslashes/inner.txt", "inner\n")


def zeros(fs: InMemoryFilesystem) -> None:
    fs.write_bytes("big/zeros.bin", bytes(8 << 20))
    fs.write_bytes("big/sparse-ish.bin", bytes(3 << 20) + b"end")


def not_utf8(fs: InMemoryFilesystem) -> None:
    with fs.tree.lock:
        tree = fs.tree
        folder = tree.mkdir(ROOT_INO, NOT_UTF8, 0o755)
        ino = tree.create(folder, NOT_UTF8 + ".txt", 0o644)
        tree.write(ino, 0, b"bytes in a name that is not UTF-8\n")
        tree.symlink(ROOT_INO, "to-" + NOT_UTF8, NOT_UTF8 + "/" + NOT_UTF8 + ".txt")


def empty_dirs(fs: InMemoryFilesystem) -> None:
    fs.mkdir("empty")
    fs.mkdir("deep/er/and/deeper/still")


def modes(fs: InMemoryFilesystem) -> None:
    layout = {
        "none": 0o000,
        "private": 0o600,
        "exec": 0o755,
        "setuid": 0o4755,
        "group": 0o2750,
        "odd": 0o571,
    }
    for name in layout:
        fs.write(f"modes/{name}", name)
    fs.mkdir("modes/closed/inner")
    fs.mkdir("modes/shared")
    with fs.tree.lock:
        tree = fs.tree
        for name, mode in layout.items():
            tree.setattr(_node(tree, f"modes/{name}"), mode=mode, mtime_ns=123_456_789)
        tree.setattr(_node(tree, "modes/closed"), mode=0o500, mtime_ns=42)
        tree.setattr(_node(tree, "modes/shared"), mode=0o3777)


def everything(fs: InMemoryFilesystem) -> None:
    for build in (venv, links_out, odd_names, zeros, not_utf8, empty_dirs, modes):
        build(fs)


CASES: dict[str, Callable[[InMemoryFilesystem], None]] = {
    "venv": venv,
    "links out": links_out,
    "odd names": odd_names,
    "8 MiB of zeros": zeros,
    "non-UTF-8 names": not_utf8,
    "empty dirs": empty_dirs,
    "modes": modes,
    "everything": everything,
}


def workspace(case: str) -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write("README.md", "# checkpoint me\n")
    CASES[case](fs)
    return fs


def spoil(fs: InMemoryFilesystem) -> None:
    """What an agent does after a checkpoint: edits, deletes, creates."""
    fs.write("README.md", "changed")
    fs.write("new/file.txt", "new")
    for entry in fs.list():
        if entry.name not in ("README.md", "new"):
            fs.delete(entry.path, recursive=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_archive_snapshots_restore_exactly(case: str, tmp_path: Path) -> None:
    fs = workspace(case)
    before = picture(fs)
    manager = ArchiveSnapshots(fs, tmp_path / "snaps")
    manager.snapshot("cp")
    spoil(fs)
    manager.rollback("cp")
    assert picture(fs) == before


@pytest.mark.parametrize("case", ["modes", "everything"])
def test_seed_003_snapshot_manager_restores_exactly(case: str, tmp_path: Path) -> None:
    backend = InMemoryBackend()
    fs = backend.backend
    assert isinstance(fs, InMemoryFilesystem)
    CASES[case](fs)
    before = picture(fs)
    manager = FilesystemSnapshot(backend, tmp_path / "snaps")
    manager.snapshot("cp")
    spoil(fs)
    manager.rollback("cp")
    assert picture(fs) == before


def test_restoring_any_other_archive_drops_special_modes(tmp_path: Path) -> None:
    fs = workspace("modes")
    manager = ArchiveSnapshots(fs, tmp_path / "snaps")
    manager.snapshot("cp")
    manager.restore(tmp_path / "snaps" / "cp.zip")  # a path: as from elsewhere
    modes = {e.name: stat.S_IMODE(fs.stat(e.path).mode) for e in fs.list("modes")}
    assert (modes["setuid"], modes["group"], modes["shared"]) == (0o755, 0o750, 0o1777)


@pytest.mark.parametrize("case", sorted(CASES))
def test_session_checkpoints_restore_exactly(case: str, tmp_path: Path) -> None:
    fs = workspace(case)
    before = picture(fs)
    session = JsonSession({"turn": 1})
    checkpoints = SessionCheckpoints(session, {"workspace": fs}, tmp_path / "ckpt")
    checkpoints.checkpoint("turn-1")
    spoil(fs)
    session.state["turn"] = 2
    checkpoints.rollback("turn-1")
    assert picture(fs) == before
    assert session.state == {"turn": 1}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dumped_sessions_load_exactly(case: str, tmp_path: Path) -> None:
    fs = workspace(case)
    dump_session(JsonSession({"turn": 1}), fs, tmp_path, "session-1")
    resumed = InMemoryFilesystem()
    load_session(tmp_path, "session-1", JsonSession(), resumed)
    assert picture(resumed) == picture(fs)


def host_picture(root: Path) -> dict[bytes, tuple[object, ...]]:
    found: dict[bytes, tuple[object, ...]] = {}
    for current, dirs, files in os.walk(os.fsencode(root)):
        for name in dirs + files:
            path = os.path.join(current, name)
            info = os.lstat(path)
            rel = os.path.relpath(path, os.fsencode(root))
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", info.st_mode, info.st_mtime_ns)
            else:
                with open(path, "rb") as handle:
                    found[rel] = ("file", info.st_mode, info.st_mtime_ns, handle.read())
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_host_checkpoints_restore_exactly(case: str, tmp_path: Path) -> None:
    export_archive(workspace(case), tmp_path / "seed.zip")
    root = tmp_path / "root"
    root.mkdir()
    host = HostFilesystem(root)
    import_archive(host, tmp_path / "seed.zip")
    before = host_picture(root)
    manager = ArchiveSnapshots(host, tmp_path / "snaps")
    manager.snapshot("cp")
    for entry in os.scandir(root):  # spoil it, through the host
        host.delete(os.fsdecode(entry.name), recursive=True)
    host.write("new.txt", "new")
    manager.rollback("cp")
    assert host_picture(root) == before


# -- the same promise over random trees --------------------------------------------

_NAME_BYTES = st.sampled_from(
    [b"a", b"B", b".", b"-", b"\\", b"%", b" ", b"\n", b"\xe9", b"\xff", b"\xc3\xa9", b"git", b"41"]
)
_NAMES = (
    st.lists(_NAME_BYTES, min_size=1, max_size=6)
    .map(b"".join)
    .filter(lambda raw: raw not in (b".", b".."))
    .map(lambda raw: raw.decode("utf-8", "surrogateescape"))
)
_TARGETS = st.lists(
    st.sampled_from(["..", ".", "a", "B", "/usr/bin", "x y", "\\"]), min_size=1, max_size=5
).map("/".join)


@st.composite
def random_trees(draw: st.DrawFn) -> list[tuple[str, str, object]]:
    """(kind, path, payload) operations building a tree: dirs, files, links."""
    operations: list[tuple[str, str, object]] = []
    dirs = [""]
    for _ in range(draw(st.integers(1, 14))):
        parent = draw(st.sampled_from(dirs))
        name = draw(_NAMES)
        path = f"{parent}/{name}" if parent else name
        kind = draw(st.sampled_from(["dir", "file", "file", "link"]))
        if kind == "dir":
            dirs.append(path)
            operations.append(("dir", path, draw(st.sampled_from([0o755, 0o700, 0o2775]))))
        elif kind == "file":
            content = draw(st.sampled_from([b"", b"x", bytes(2 << 20), os.urandom(100)]))
            operations.append(
                ("file", path, (content, draw(st.sampled_from([0o644, 0o755, 0o4711, 0]))))
            )
        else:
            operations.append(("link", path, draw(_TARGETS)))
    return operations


def build(operations: list[tuple[str, str, object]]) -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    with fs.tree.lock:
        tree = fs.tree
        for kind, path, payload in operations:
            parent_path, _, name = path.rpartition("/")
            parent = tree.resolve_path(parent_path)
            if parent is None or not isinstance(tree.get(parent), Directory):
                continue
            if name in tree.directory(parent).entries:
                continue
            if kind == "dir":
                assert isinstance(payload, int)
                tree.mkdir(parent, name, payload)
            elif kind == "file":
                assert isinstance(payload, tuple)
                ino = tree.create(parent, name, payload[1])
                tree.write(ino, 0, payload[0])
            else:
                assert isinstance(payload, str)
                tree.symlink(parent, name, payload)
    return fs


def hidden_escape(fs: InMemoryFilesystem) -> bool:
    """True if a link of ``fs`` reads as inside but leads out (what archives refuse)."""
    view = fs.view
    kinds: dict[str, tuple[Kind, str | None]] = {}
    for path, _, node in view.walk():
        if isinstance(node, Symlink):
            kinds[path] = (Kind.SYMLINK, node.target)
        elif isinstance(node, Directory):
            kinds[path] = (Kind.DIRECTORY, None)
        elif isinstance(node, File):
            kinds[path] = (Kind.FILE, None)
    return any(
        link_reach(path, target, kinds.get) is LinkReach.HIDDEN_ESCAPE
        for path, (kind, target) in kinds.items()
        if kind is Kind.SYMLINK and target is not None
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(operations=random_trees())
def test_every_accepted_checkpoint_restores_exactly(
    operations: list[tuple[str, str, object]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    fs = build(operations)
    before = picture(fs)
    manager = ArchiveSnapshots(fs, tmp_path_factory.mktemp("snaps"))
    try:
        manager.snapshot("cp")
    except PermissionError:
        assert hidden_escape(fs), "refused a tree without a hidden escape"
        return
    assert not hidden_escape(fs), "accepted a tree with a hidden escape"
    spoil(fs)
    manager.rollback("cp")
    assert picture(fs) == before
