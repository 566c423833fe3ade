"""Persisting in bounded memory: file content goes to git in pieces, and a file git
would have to store larger than the limit (a sparse file: git blobs hold no holes)
is refused before anything is written.

Each case runs in a child interpreter under a real memory limit (``memory_limit``):
a whole-file copy of a 64 GiB sparse file would otherwise take this test process,
or its neighbours, down with it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pygit2
import pytest

from support.memory_limit import python_under_limit
from workspacefs import InMemoryFilesystem, LimitExceededError
from workspacefs import git as wgit
from workspacefs.tree import ROOT_INO

MIB = 1 << 20
GIB = 1 << 30
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def run_limited(code: str, limit: int, *args: str) -> tuple[dict[str, Any], int]:
    """Run ``code`` in a child under a ``limit``-byte memory limit; (its last stdout line
    as JSON, OOM kills). The child must succeed."""
    result, kills = python_under_limit(textwrap.dedent(code), *args, limit=limit)
    assert result.returncode == 0, (result.returncode, kills, result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1]), kills


def repository_picture(path: Path) -> tuple[dict[str, str], list[str]]:
    """Every ref with its target, and every file below ``objects``."""
    repo = pygit2.Repository(str(path))
    refs = {name: str(repo.references[name].target) for name in repo.references}
    objects = sorted(
        os.path.relpath(os.path.join(top, name), path / "objects")
        for top, _, names in os.walk(path / "objects")
        for name in names
    )
    return refs, objects


SPARSE = """
    import json, os, sys
    from workspacefs import InMemoryFilesystem, LimitExceededError
    from workspacefs import git as wgit
    from workspacefs.tree import ROOT_INO

    repo = sys.argv[1]
    fs = InMemoryFilesystem(memory_budget=256 << 20)
    fs.write_bytes("src/app.py", b"print('hello')\\n")
    first = wgit.persist(fs, fs.snapshot(tag="first"), repo)
    with fs.transaction() as tree:
        ino = tree.create(tree.make_dirs("big"), "sparse.img", 0o644)
        tree.truncate(ino, 64 << 30)  # what `truncate -s 64G` does through the mount
    snapshot = fs.snapshot(tag="second")
    try:
        wgit.persist(fs, snapshot, repo)
        error = None
    except LimitExceededError as exc:
        error = {"errno": exc.errno, "filename": exc.filename, "message": exc.strerror}
    print(json.dumps({"error": error, "held": fs.memory_usage().held}), flush=True)
"""


def test_a_sparse_file_past_the_limit_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo.git"
    result, kills = python_under_limit(textwrap.dedent(SPARSE), str(repo), limit=GIB)
    assert result.returncode == 0, (result.returncode, kills, result.stderr[-3000:])
    assert kills == 0
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    error = outcome["error"]
    assert error is not None, "the 64 GiB sparse file was persisted"
    assert error["errno"] == errno.EFBIG
    assert error["filename"] == "big/sparse.img"
    assert "68,719,476,736" in error["message"]  # the file's size
    assert "268,435,456" in error["message"]  # the limit: the workspace's memory budget
    assert "max_file_bytes" in error["message"]  # how to raise it
    assert outcome["held"] < MIB  # nothing was read into the tree meanwhile
    refs, _ = repository_picture(repo)
    # Only the first snapshot's refs: no half-written snapshot, no tag of the second.
    assert sorted(ref.rsplit("/", 2)[-2:] for ref in refs) == [
        ["meta", "1"],
        ["snapshots", "1"],
        ["tags", "first"],
    ]


def test_the_refusal_writes_no_object(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    fs = InMemoryFilesystem(memory_budget=64 * MIB)
    fs.write_bytes("a.txt", b"first\n")
    wgit.persist(fs, fs.snapshot(), repo)
    before = repository_picture(repo)
    fs.write_bytes("b.txt", b"changed too, and never written\n")
    with fs.transaction() as tree:
        tree.truncate(tree.create(ROOT_INO, "hole.bin"), 100 * MIB)
    with pytest.raises(LimitExceededError) as caught:
        wgit.persist(fs, fs.snapshot(), repo)
    assert caught.value.filename == "hole.bin"
    assert repository_picture(repo) == before
    # The state of the incremental persist is untouched: the next one works.
    fs.delete("hole.bin")
    persisted = wgit.persist(fs, fs.snapshot(), repo)
    loaded = wgit.load(repo, persisted.ref)
    assert loaded.read_bytes("b.txt").content == b"changed too, and never written\n"


def test_the_limit_can_be_raised_and_the_file_round_trips(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    fs = InMemoryFilesystem(memory_budget=16 * MIB)
    with fs.transaction() as tree:
        ino = tree.create(ROOT_INO, "sparse.bin")
        tree.write(ino, 3 * MIB + 5, b"data in the middle")
        tree.truncate(ino, 40 * MIB)
    snapshot = fs.snapshot()
    with pytest.raises(LimitExceededError, match="41,943,040"):
        wgit.persist(fs, snapshot, repo)
    persisted = wgit.persist(fs, snapshot, repo, max_file_bytes=64 * MIB)
    loaded = wgit.load(repo, persisted.ref)
    assert loaded.stat("sparse.bin").size_bytes == 40 * MIB
    assert loaded.read_bytes("sparse.bin", offset=3 * MIB, limit=32).content == (
        bytes(5) + b"data in the middle" + bytes(9)
    )
    assert loaded.read_bytes("sparse.bin", offset=39 * MIB, limit=MIB).content == bytes(MIB)


STREAMED = """
    import hashlib, json, random, resource, sys
    from workspacefs import InMemoryFilesystem
    from workspacefs import git as wgit

    repo, size = sys.argv[1], int(sys.argv[2])
    MIB = 1 << 20
    fs = InMemoryFilesystem(memory_budget=2 * size)
    blob = hashlib.sha1(b"blob %d\\0" % size)
    rng = random.Random(7)
    fs.write_bytes("small.txt", b"small\\n")
    with fs.transaction() as tree:
        ino = tree.create(1, "big.bin")
        for offset in range(0, size, MIB):  # random bytes: zlib cannot shrink them
            piece = rng.randbytes(MIB)
            blob.update(piece)
            tree.write(ino, offset, piece)
        del piece

    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    before = peak()
    first = wgit.persist(fs, fs.snapshot(), repo)  # a first persist: one pack
    after_first = peak()
    with fs.transaction() as tree:
        tree.write(tree.resolve_path("big.bin"), 0, b"X")  # incremental: one file changed
    second = wgit.persist(fs, fs.snapshot(), repo)
    print(json.dumps({
        "before": before, "after_first": after_first, "after_second": peak(),
        "expected_first": blob.hexdigest(), "first": first.commit, "second": second.commit,
    }))
"""


def _blob_sha(repo: Path, oid: str) -> str:
    """The id of what git itself reads back as the blob ``oid`` (streamed)."""
    command = ["git", f"--git-dir={repo}", "cat-file"]
    size = subprocess.run([*command, "-s", oid], capture_output=True, env=GIT_ENV, check=True)
    digest = hashlib.sha1(b"blob %d\0" % int(size.stdout))
    with subprocess.Popen([*command, "blob", oid], stdout=subprocess.PIPE, env=GIT_ENV) as reader:
        assert reader.stdout is not None
        while block := reader.stdout.read(MIB):
            digest.update(block)
    return digest.hexdigest()


def test_persist_streams_a_large_file(tmp_path: Path) -> None:
    """A 64 MiB file of random bytes persists (first as a pack, then incrementally)
    while the process's peak memory grows by far less than the file: a whole-file
    copy (or the compressed one beside it) would add 64 MiB each."""
    repo = tmp_path / "repo.git"
    size = 64 * MIB
    found, kills = run_limited(STREAMED, GIB, str(repo), str(size))
    assert kills == 0
    assert found["after_first"] - found["before"] < 24 * MIB, found
    assert found["after_second"] - found["before"] < 24 * MIB, found
    repository = pygit2.Repository(str(repo))
    first = repository[found["first"]].peel(pygit2.Commit)
    second = repository[found["second"]].peel(pygit2.Commit)
    first_blob = str(first.tree["big.bin"].id)
    assert first_blob == found["expected_first"]
    assert _blob_sha(repo, first_blob) == first_blob  # git reads back what was meant
    second_blob = str(second.tree["big.bin"].id)
    assert second_blob != first_blob
    assert _blob_sha(repo, second_blob) == second_blob
    assert second.tree["small.txt"].id == first.tree["small.txt"].id


def test_streamed_files_share_one_pack_and_load_back(tmp_path: Path) -> None:
    """Large files (streamed), small ones (in parallel), the same large content twice
    (one object kept) and a hard link, in a first persist and an incremental one: git
    accepts the packs and every byte loads back."""
    repo = tmp_path / "repo.git"
    fs = InMemoryFilesystem(memory_budget=256 * MIB)
    large = bytes(range(256)) * (12 * 1024 + 1)  # 3 MiB and a bit
    fs.write_bytes("one.bin", large)
    fs.write_bytes("two.bin", large)
    fs.write_bytes("small.txt", b"small\n")
    with fs.transaction() as live:
        one = live.resolve_path("one.bin")
        assert one is not None
        live.link(one, ROOT_INO, "linked.bin")
    first = wgit.persist(fs, fs.snapshot(), repo)
    fs.write_bytes("three.bin", large[::-1])
    fs.write_bytes("four.bin", large)  # known content in a new file: incremental
    second = wgit.persist(fs, fs.snapshot(), repo)
    subprocess.run(
        ["git", f"--git-dir={repo}", "fsck", "--strict", "--no-dangling"],
        check=True,
        env=GIT_ENV,
        capture_output=True,
    )
    repository = pygit2.Repository(str(repo))
    stored = repository[second.commit].peel(pygit2.Commit).tree
    assert len({stored[n].id for n in ("one.bin", "two.bin", "four.bin", "linked.bin")}) == 1
    for ref, names in (
        (first.ref, ["one.bin", "two.bin", "linked.bin"]),
        (second.ref, ["one.bin", "three.bin", "four.bin"]),
    ):
        loaded = wgit.load(repo, ref)
        for name in names:
            expected = large[::-1] if name == "three.bin" else large
            got = b"".join(
                loaded.read_bytes(name, offset=offset, limit=MIB).content
                for offset in range(0, len(large), MIB)
            )
            assert got == expected, name
        assert loaded.read_bytes("small.txt").content == b"small\n"
