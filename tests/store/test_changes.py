"""``CHANGES`` records write a changed chunk as the bytes that differ from the chunk it
replaced: what a rewrite of a few bytes, an append or a truncation journals, and that
replaying the journal gives every file back byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workspacefs.store import Durability, open_workspace, read_journal
from workspacefs.store._changes import shared_ends
from workspacefs.tree import CHUNK_SIZE, Chunk, MemoryBudget

BUDGET = MemoryBudget(None)


def chunk(data: bytes) -> Chunk:
    return Chunk(BUDGET, data)


@settings(max_examples=300, deadline=None)
@given(
    old=st.binary(max_size=9000),
    start=st.integers(0, 9000),
    middle=st.binary(max_size=300),
    end=st.integers(0, 9000),
)
def test_shared_ends_never_claim_a_byte_that_differs(
    old: bytes, start: int, middle: bytes, end: int
) -> None:
    start, end = min(start, len(old)), min(max(start, end), len(old))
    new = old[:start] + middle + old[end:]
    head, tail = shared_ends(chunk(old), chunk(new))
    assert head + tail <= min(len(old), len(new))
    assert old[:head] == new[:head]
    if tail:
        assert old[-tail:] == new[-tail:]
    # What is written: no more than the changed bytes and a few dozen on each side.
    if len(old) == len(new):
        assert len(new) - head - tail <= len(middle) + 2 * 64


def _last_record_bytes(store: Path) -> int:
    return len(read_journal(str(store / "journal")).records[-1].payload)


def test_a_rewrite_or_append_inside_a_chunk_journals_its_own_bytes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED)
    with durable:
        tree = durable.fs.tree
        with tree.lock:
            ino = tree.create(1, "db")
            tree.write(ino, 0, os.urandom(4 * CHUNK_SIZE - 1000))
        durable.sync()
        with tree.lock:
            tree.write(ino, CHUNK_SIZE + 5000, b"p" * 4096)  # a page in a chunk's middle
        durable.sync()
        assert _last_record_bytes(store) < 4096 + 400
        with tree.lock:
            tree.write(ino, 4 * CHUNK_SIZE - 1000, b"a" * 500)  # appended to the last chunk
        durable.sync()
        assert _last_record_bytes(store) < 500 + 400


edits = st.lists(
    st.tuples(
        st.sampled_from(["write", "truncate", "sync"]),
        st.integers(0, 3 * CHUNK_SIZE),
        st.integers(0, 3 * CHUNK_SIZE),
    ),
    max_size=12,
)


@settings(max_examples=25, deadline=None)
@given(steps=edits, seed=st.binary(min_size=8, max_size=8))
def test_a_file_edited_anywhere_comes_back_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int]], seed: bytes
) -> None:
    store = tmp_path_factory.mktemp("store") / "s"
    noise = (seed * (3 * CHUNK_SIZE // 8 + 1))[: 3 * CHUNK_SIZE]
    model = bytearray(noise[: CHUNK_SIZE + 123])
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED)
    with durable:
        tree = durable.fs.tree
        with tree.lock:
            ino = tree.create(1, "f")
            tree.write(ino, 0, bytes(model))
        durable.sync()
        for step, (what, offset, length) in enumerate(steps):
            if what == "sync":
                durable.sync()
                continue
            with tree.lock:
                if what == "write":
                    data = bytes([step + 1]) * min(length, 5000)
                    tree.write(ino, offset, data)
                    model[len(model) :] = bytes(max(0, offset - len(model)))
                    model[offset : offset + len(data)] = data
                else:
                    tree.truncate(ino, offset)
                    del model[offset:]
                    model[len(model) :] = bytes(offset - len(model))
    again, _ = open_workspace(str(store), durability=Durability.REQUESTED, checkpoints=False)
    with again:
        assert again.fs.read_bytes("f").content == bytes(model)


def test_a_file_edited_after_it_left_memory_comes_back_byte_for_byte(tmp_path: Path) -> None:
    # The journal's last state of the file holds no bytes in memory any more (evicted,
    # its chunks an ``Absent`` marker): the edit is journalled against nothing, whole.
    store = tmp_path / "store"
    budget = 1 << 20
    model = bytearray(os.urandom(6 * CHUNK_SIZE))
    others = {f"other{n}": os.urandom(300_000) for n in range(10)}
    durable, _ = open_workspace(str(store), durability=Durability.REQUESTED, memory_budget=budget)
    with durable:
        fs, tree = durable.fs, durable.fs.tree
        fs.write_bytes("f", bytes(model))
        durable.sync()
        for name, data in others.items():  # three budgets: "f" is written back and leaves
            fs.write_bytes(name, data)
        with tree.lock:
            ino = tree.resolve_path("f") or 0
            assert tree.node(ino).absent() is not None  # type: ignore[attr-defined]
            tree.write(ino, CHUNK_SIZE + 100, b"edited")
        model[CHUNK_SIZE + 100 : CHUNK_SIZE + 106] = b"edited"
        durable.sync()
    again, _ = open_workspace(str(store), durability=Durability.REQUESTED, checkpoints=False)
    with again:
        assert again.fs.read_bytes("f").content == bytes(model)
        for name, data in others.items():
            assert again.fs.read_bytes(name).content == data
