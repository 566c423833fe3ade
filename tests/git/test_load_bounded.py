"""Loading from git is bounded: file contents stream into the memory budget, and a
snapshot's entries, declared sizes and records are counted before anything is built.

The hostile repositories are small (zeros compress well; a directory record can name
one subtree many times) and expand to far more than a process can hold. Where the
unbounded code would die, the load runs in a child process under a real memory limit
(``memory_limit``), so a regression is an OOM kill the test sees, not a dead test run.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pygit2
import pytest

from support.forged_repos import DIR, FILE, GIT_ENV, Forge, bomb, record
from support.interpreter import child_env
from support.memory_limit import python_under_limit
from workspacefs import InMemoryFilesystem, LimitExceededError, NoSpaceError, SnapshotError
from workspacefs import git as wgit
from workspacefs.tree import CHUNK_SIZE

MIB = 1 << 20
BIG = 256 * MIB
"""The zero blob: 256 KiB in the repository, more than the child's memory limit."""
CHILD_LIMIT = 192 * MIB
SIGNATURE = pygit2.Signature("forge", "forge@example.invalid", 0, 0)

READ_ALL = textwrap.dedent(
    """
    import hashlib, sys
    from workspacefs import git
    fs = git.load(sys.argv[1], "1", workspace="ws")
    digest, offset = hashlib.md5(), 0
    while chunk := fs.read_bytes(sys.argv[2], offset=offset, limit=16 << 20).content:
        digest.update(chunk)
        offset += len(chunk)
    print(digest.hexdigest(), offset, fs.memory_usage().held)
    """
)

LOAD = textwrap.dedent(
    """
    import sys
    from workspacefs import git, LimitExceededError
    try:
        git.load(sys.argv[1], "1", workspace="ws")
    except LimitExceededError as exc:
        print("refused:", exc)
    """
)


def zeros_md5(size: int) -> str:
    digest = hashlib.md5()
    block = bytes(MIB)
    for start in range(0, size, MIB):
        digest.update(block[: size - start])
    return digest.hexdigest()


def run_limited(code: str, *args: str, limit: int) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``code`` in a fresh interpreter under a memory limit of ``limit`` bytes;
    the result and how many processes the OOM killer ended."""
    return python_under_limit(code, *args, limit=limit)


@pytest.fixture(scope="module")
def zero_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Snapshot 1: ``big.bin``, BIG zero bytes, and ``small.txt``."""
    forge = Forge(tmp_path_factory.mktemp("zeros") / "repo.git")
    big, small = forge.big_blob(BIG), forge.blob(b"small\n")
    forge.root(
        {"big.bin": (record(FILE, size=BIG), big), "small.txt": (record(FILE, size=6), small)}
    )
    return forge.path


def test_a_lazy_file_streams_in_bounded_pieces(zero_repo: Path) -> None:
    # The whole blob at once is more than the child may hold: read in pieces it fits,
    # and zeros stay holes (nothing held).
    done, kills = run_limited(READ_ALL, str(zero_repo), "big.bin", limit=CHILD_LIMIT)
    assert kills == 0
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [zeros_md5(BIG), str(BIG), "0"]


def test_lazy_files_read_exactly_from_packs_and_loose_objects(tmp_path: Path) -> None:
    data = os.urandom(MIB) + bytes(5 * MIB) + os.urandom(123)
    fs = InMemoryFilesystem(workspace_id="ws")
    fs.write_bytes("packed.bin", data)  # a first persist writes a pack
    wgit.persist(fs, fs.snapshot(), tmp_path / "repo.git")
    fs.write_bytes("loose.bin", data[::-1])  # a small second persist: loose objects
    fs.write_bytes("tiny.txt", b"tiny")
    wgit.persist(fs, fs.snapshot(), tmp_path / "repo.git")
    # Streamed, each file costs what is not zeros; read whole, 6 MiB first.
    loaded = wgit.load(tmp_path / "repo.git", "2", workspace="ws", memory_budget=4 * MIB)
    for name, expected in (("packed.bin", data), ("loose.bin", data[::-1]), ("tiny.txt", b"tiny")):
        got = b"".join(
            loaded.read_bytes(name, offset=offset, limit=16 * MIB).content
            for offset in range(0, len(expected), 16 * MIB)
        )
        assert hashlib.md5(got).digest() == hashlib.md5(expected).digest(), name
    assert loaded.memory_usage().held < 2 * (MIB + 2 * CHUNK_SIZE)


def test_lazy_files_stream_from_an_alternate_object_directory(tmp_path: Path) -> None:
    data = bytes(5 * MIB) + b"end"
    shared = Forge(tmp_path / "shared.git")
    blob = shared.blob(data)  # loose, in the other repository only
    forge = Forge(tmp_path / "repo.git")
    (forge.path / "objects/info/alternates").write_text(str(shared.path / "objects") + "\n")
    forge.root({"f.bin": (record(FILE, size=len(data)), blob)})
    # Streamed, it costs its last chunk; read whole, it would need 5 MiB first.
    fs = wgit.load(forge.path, "1", workspace="ws", memory_budget=1 * MIB)
    assert fs.read_bytes("f.bin").content == data
    assert fs.memory_usage().held == 3


def test_a_file_over_the_budget_is_no_space_and_changes_nothing(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    size = 64 * MIB
    big = forge.big_blob(size, fill=b"\x01")
    forge.root(
        {
            "big.bin": (record(FILE, size=size), big),
            "small.txt": (record(FILE, size=6), forge.blob(b"small\n")),
        }
    )
    fs = wgit.load(forge.path, "1", workspace="ws")
    fs.memory_budget = 16 * MIB
    for _ in range(2):  # the same clear error each time: the file is still lazy, not broken
        with pytest.raises(NoSpaceError, match="memory budget"):
            fs.read_bytes("big.bin", limit=10)
        assert fs.memory_usage().held == 0
    assert fs.read_bytes("small.txt").content == b"small\n"
    fs.memory_budget = 128 * MIB
    assert fs.read_bytes("big.bin", offset=size - 3).content == b"\x01" * 3
    assert fs.memory_usage().held == size + 6


def deltified(forge: Forge, size: int) -> tuple[pygit2.Oid, bytes]:
    """A blob of ``size`` random bytes that the pack holds as a delta of another."""
    base = os.urandom(size)
    changed = base[:1000] + b"changed" + base[1007:]
    first, second = forge.blob(base), forge.blob(changed)
    tree = forge.tree([(b"a", wgit.MODE_FILE, first), (b"b", wgit.MODE_FILE, second)])
    keep = forge.repo.create_commit(None, SIGNATURE, SIGNATURE, "keep", tree, [])
    forge.repo.references.create("refs/keep", keep)
    subprocess.run(["git", f"--git-dir={forge.path}", "repack", "-adfq"], env=GIT_ENV, check=True)
    listing = subprocess.run(
        ["git", f"--git-dir={forge.path}", "cat-file", "--batch-check=%(objectname) %(deltabase)"],
        input=f"{first}\n{second}\n",
        capture_output=True,
        text=True,
        env=GIT_ENV,
        check=True,
    ).stdout
    for line in listing.splitlines():
        name, base_id = line.split()
        if set(base_id) != {"0"}:
            return pygit2.Oid(hex=name), base if name == str(first) else changed
    raise AssertionError(f"git stored no delta: {listing}")


def test_a_blob_stored_as_a_delta_is_refused_early_when_it_cannot_fit(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    size = 8 * MIB
    oid, data = deltified(forge, size)
    forge.root({"delta.bin": (record(FILE, size=size), oid)})
    fs = wgit.load(forge.path, "1", workspace="ws")
    fs.memory_budget = 4 * MIB  # the blob's size, from its header, is over it
    with pytest.raises(NoSpaceError, match="memory budget"):
        fs.read_bytes("delta.bin", limit=10)
    fs.memory_budget = 64 * MIB
    got = b"".join(
        fs.read_bytes("delta.bin", offset=o, limit=16 * MIB).content
        for o in range(0, size, 16 * MIB)
    )
    assert got == data


@pytest.mark.parametrize(("declared", "actual"), [(10, b"hello"), (3, b"hello")])
def test_a_blob_of_another_size_than_recorded_is_eio(
    tmp_path: Path, declared: int, actual: bytes
) -> None:
    forge = Forge(tmp_path / "repo.git")
    forge.root({"f": (record(FILE, size=declared), forge.blob(actual))})
    fs = wgit.load(forge.path, "1", workspace="ws")
    with pytest.raises(OSError, match="expected") as caught:
        fs.read_bytes("f")
    assert caught.value.errno == 5
    assert fs.memory_usage().held == 0


# -- entries, sizes and records are counted before anything is built ------------------


def test_a_directory_bomb_is_refused_before_building(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "bomb.git")
    ref = bomb(forge, fanout=16, depth=6)  # 17,895,697 directories from 8 records
    assert sum(1 for _ in forge.path.rglob("*") if _.is_file()) < 100
    done, kills = run_limited(LOAD, str(forge.path), limit=512 * MIB)
    assert kills == 0
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout
    assert "over the limit of 1,000,000 (max_entries" in done.stdout
    with pytest.raises(LimitExceededError, match="max_entries"):
        wgit.load(forge.path, ref)


def test_entries_past_the_memory_left_are_refused_before_building(tmp_path: Path) -> None:
    # Within max_entries, but their bookkeeping (about 2 KiB each) is more than the
    # half of this process's memory that the default budget leaves to it.
    forge = Forge(tmp_path / "bomb.git")
    bomb(forge, fanout=8, depth=6)  # 299,593 entries
    code = LOAD.replace("LimitExceededError", "NoSpaceError")
    space = 1 << 30
    done = subprocess.run(
        [sys.executable, "-c", code, str(forge.path)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
        check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (space, space)),
    )
    assert done.returncode == 0, done.stderr
    assert "loading 299,593 entries needs about" in done.stdout


def test_the_entry_limit_can_be_raised(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "bomb.git")
    ref = bomb(forge, fanout=4, depth=3)  # 1 + 4 + 16 + 64 directories below the root
    with pytest.raises(LimitExceededError, match="85 entries, over the limit of 84"):
        wgit.load(forge.path, ref, limits=wgit.LoadLimits(max_entries=84))
    fs = wgit.load(forge.path, ref, limits=wgit.LoadLimits(max_entries=85))
    assert len(fs.glob("**/*")) == 85


def test_one_record_with_too_many_entries_is_refused_while_parsed(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    names = {f"e{i}": record(DIR) for i in range(5000)}
    subdirs = dict.fromkeys(names, forge.meta_tree({}))
    root = forge.meta_tree({".": record(DIR), **names}, subdirs)
    ref = forge.snapshot(forge.tree([]), root)
    with pytest.raises(LimitExceededError, match="holds more entries than loading may make"):
        wgit.load(forge.path, ref, limits=wgit.LoadLimits(max_entries=1000))


def test_a_record_over_the_size_limit_is_not_read(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    huge = b"{" + b" " * (65 * MIB) + b"}"  # valid JSON, 65 KiB compressed
    ref = forge.snapshot(forge.tree([]), forge.meta_tree(huge))
    with pytest.raises(LimitExceededError, match="max_record_bytes"):
        wgit.load(forge.path, ref)


def test_declared_sizes_are_bounded(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    blob = forge.blob(b"x")
    entries = {f"f{i}": (record(FILE, size=1 << 38), blob) for i in range(5)}
    ref = forge.root(entries)  # 5 x 256 GiB declared
    with pytest.raises(LimitExceededError, match="max_total_bytes"):
        wgit.load(forge.path, ref)
    fs = wgit.load(forge.path, ref, limits=wgit.LoadLimits(max_total_bytes=5 << 38))
    assert fs.stat("f0").size_bytes == 1 << 38


def test_a_symlink_blob_is_not_read_past_path_max(zero_repo: Path, tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    repository = pygit2.Repository(str(zero_repo))
    big = repository.revparse_single("refs/workspacefs/ws/snapshots/1").peel(pygit2.Tree)["big.bin"]
    (forge.path / "objects/info/alternates").write_text(str(zero_repo / "objects") + "\n")
    forge.root({"link": (record(0o120777), big.id)})
    code = LOAD.replace("except LimitExceededError", "except Exception")
    done, kills = run_limited(code, str(forge.path), limit=CHILD_LIMIT)
    assert kills == 0
    assert done.returncode == 0, done.stderr
    assert "symlink target" in done.stdout


def test_a_snapshot_whose_record_is_damaged_is_still_a_snapshot_error(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    ref = forge.snapshot(forge.tree([]), forge.meta_tree(b"not json"))
    with pytest.raises(SnapshotError, match="JSON"):
        wgit.load(forge.path, ref)


DEEP = b"[" * 100_000 + b"]" * 100_000
"""JSON nested far deeper than a recursive parser goes."""


def test_a_record_nested_too_deeply_is_a_snapshot_error(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    ref = forge.snapshot(forge.tree([]), forge.meta_tree(DEEP))
    with pytest.raises(SnapshotError, match="nested too deeply"):
        wgit.load(forge.path, ref)


def test_a_history_nested_too_deeply_is_a_snapshot_error(tmp_path: Path) -> None:
    forge = Forge(tmp_path / "repo.git")
    records = forge.blob(json.dumps({".": record(DIR)}).encode())
    history = forge.blob(DEEP)
    meta = forge.tree([(b"history", wgit.MODE_FILE, history), (b"meta", wgit.MODE_FILE, records)])
    ref = forge.snapshot(forge.tree([]), meta)
    commit = pygit2.Repository(str(forge.path)).revparse_single(ref).peel(pygit2.Commit)
    with pytest.raises(SnapshotError, match="nested too deeply"):
        wgit.recorded_changes(pygit2.Repository(str(forge.path)), commit)
