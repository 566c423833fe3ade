"""Model-based test: random operations on InMemoryFilesystem against a plain dict.

Every earlier snapshot must still equal what the model recorded for it, diffs
must equal the model's diffs, and the incremental counters must stay exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from workspacefs import FilesystemSnapshot, InMemoryFilesystem
from workspacefs.tree import (
    CHUNK_SIZE,
    FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE,
    FALLOC_FL_ZERO_RANGE,
    File,
)

NAMES = ["a", "b", "c"]
PATHS = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)
SMALL = st.binary(max_size=40)


def prefixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


@dataclass
class Model:
    files: dict[str, bytes] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)

    def copy(self) -> Model:
        return Model(dict(self.files), set(self.dirs))

    def walk_error(self, path: str) -> type[OSError] | None:
        """The error of walking to ``path``'s parent, if any."""
        for prefix in prefixes(path):
            if prefix in self.files:
                return NotADirectoryError
            if prefix not in self.dirs:
                return FileNotFoundError
        return None

    def under(self, path: str) -> list[str]:
        return [p for p in [*self.files, *self.dirs] if p.startswith(path + "/")]


def fs_state(fs: object) -> Model:
    from workspacefs.fs import TreeFilesystem

    assert isinstance(fs, TreeFilesystem)
    model = Model()
    for match in fs.glob("**"):
        if match.is_file:
            model.files[match.path] = fs.read_bytes(match.path).content
        else:
            model.dirs.add(match.path)
    return model


class WorkspaceMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.fs = InMemoryFilesystem()
        self.model = Model()
        self.snapshots: list[tuple[FilesystemSnapshot, Model]] = []

    def expect(self, error: type[OSError] | None, action: object) -> None:
        assert callable(action)
        before = self.model.copy()
        if error is None:
            action()
            return
        with pytest.raises(error):
            action()
        assert fs_state(self.fs) == before, "a failed operation changed the tree"

    @rule(path=PATHS, data=SMALL)
    def write(self, path: str, data: bytes) -> None:
        error: type[OSError] | None = None
        if any(p in self.model.files for p in prefixes(path)):
            error = NotADirectoryError
        elif path in self.model.dirs:
            error = IsADirectoryError
        self.expect(error, lambda: self.fs.write_bytes(path, data))
        if error is None:
            self.model.dirs.update(prefixes(path))
            self.model.files[path] = data

    @rule(
        pick=st.data(), offset=st.integers(0, 3 * CHUNK_SIZE), size=st.integers(1, 2 * CHUNK_SIZE)
    )
    @precondition(lambda self: bool(self.model.files))
    def write_at_offset(self, pick: st.DataObject, offset: int, size: int) -> None:
        path = pick.draw(st.sampled_from(sorted(self.model.files)), label="path")
        tree = self.fs.tree
        data = bytes([len(path) + offset % 251]) * size
        with tree.lock:
            ino = tree.resolve_path(path)
            assert ino is not None
            tree.write(ino, offset, data)
        old = self.model.files[path]
        grown = old + bytes(max(0, offset - len(old)))
        self.model.files[path] = grown[:offset] + data + grown[offset + size :]

    @rule(pick=st.data(), size=st.integers(0, 2 * CHUNK_SIZE))
    @precondition(lambda self: bool(self.model.files))
    def truncate(self, pick: st.DataObject, size: int) -> None:
        path = pick.draw(st.sampled_from(sorted(self.model.files)), label="path")
        with self.fs.tree.lock:
            ino = self.fs.tree.resolve_path(path)
            assert ino is not None
            self.fs.tree.truncate(ino, size)
        old = self.model.files[path]
        self.model.files[path] = old[:size] + bytes(max(0, size - len(old)))

    @rule(
        pick=st.data(),
        mode=st.sampled_from(
            [
                0,
                FALLOC_FL_KEEP_SIZE,
                FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                FALLOC_FL_ZERO_RANGE,
            ]
        ),
        offset=st.integers(0, 3 * CHUNK_SIZE),
        length=st.integers(1, 2 * CHUNK_SIZE),
    )
    @precondition(lambda self: bool(self.model.files))
    def fallocate(self, pick: st.DataObject, mode: int, offset: int, length: int) -> None:
        path = pick.draw(st.sampled_from(sorted(self.model.files)), label="path")
        tree = self.fs.tree
        with tree.lock:
            ino = tree.resolve_path(path)
            assert ino is not None
            tree.fallocate(ino, mode, offset, length)
        old = self.model.files[path]
        end = offset + length
        size = len(old) if mode & FALLOC_FL_KEEP_SIZE else max(len(old), end)
        new = old + bytes(size - len(old))
        if mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE):
            zeroed = max(0, min(end, size) - offset)
            new = new[:offset] + bytes(zeroed) + new[offset + zeroed :]
        self.model.files[path] = new

    @rule(path=PATHS)
    def mkdir(self, path: str) -> None:
        error: type[OSError] | None = None
        if any(p in self.model.files for p in prefixes(path)):
            error = NotADirectoryError
        elif path in self.model.files:
            error = FileExistsError
        self.expect(error, lambda: self.fs.mkdir(path))
        if error is None:
            self.model.dirs.update([*prefixes(path), path])

    @rule(path=PATHS, recursive=st.booleans())
    def delete(self, path: str, recursive: bool) -> None:
        error = self.model.walk_error(path)
        if error is None and path not in self.model.files and path not in self.model.dirs:
            error = FileNotFoundError
        if error is None and path in self.model.dirs and not recursive:
            error = IsADirectoryError
        self.expect(error, lambda: self.fs.delete(path, recursive=recursive))
        if error is None:
            for gone in [path, *self.model.under(path)]:
                self.model.files.pop(gone, None)
                self.model.dirs.discard(gone)

    @rule(source=PATHS, destination=PATHS)
    def rename(self, source: str, destination: str) -> None:
        target = destination
        model = self.model
        if source not in model.files and source not in model.dirs:
            return
        if model.walk_error(target) is not None:
            return
        error: type[OSError] | None = None
        if source in model.dirs and target.startswith(source + "/"):
            error = OSError  # EINVAL: into itself
        elif source in model.dirs and target in model.files:
            error = NotADirectoryError
        elif source in model.files and target in model.dirs:
            error = IsADirectoryError
        elif source in model.dirs and target in model.dirs and model.under(target):
            error = OSError if source != target else None

        def move() -> None:
            tree = self.fs.tree
            with tree.lock:
                old_parent = tree.resolve_path(source.rpartition("/")[0])
                new_parent = tree.resolve_path(target.rpartition("/")[0])
                assert old_parent is not None
                assert new_parent is not None
                tree.rename(
                    old_parent, source.rpartition("/")[2], new_parent, target.rpartition("/")[2]
                )

        self.expect(error, move)
        if error is not None or source == target:
            return
        if source in model.files:
            model.files[target] = model.files.pop(source)
            return
        moved = [source, *model.under(source)]
        for old in [*model.under(target), target]:
            model.dirs.discard(old)
        for old in moved:
            new = target + old[len(source) :]
            if old in model.files:
                model.files[new] = model.files.pop(old)
            else:
                model.dirs.discard(old)
                model.dirs.add(new)

    @rule(tag=st.none() | st.sampled_from(["t1", "t2"]))
    def snapshot(self, tag: str | None) -> None:
        record = self.fs.snapshot(tag=tag)
        assert record.file_count == len(self.model.files)
        assert record.total_bytes == sum(map(len, self.model.files.values()))
        self.snapshots.append((record, self.model.copy()))

    @rule(index=st.integers(0, 50))
    @precondition(lambda self: bool(self.snapshots))
    def restore(self, index: int) -> None:
        record, model = self.snapshots[index % len(self.snapshots)]
        self.fs.restore(record)
        self.model = model.copy()
        assert self.fs.current_snapshot_id == record.snapshot_id

    @rule(index=st.integers(0, 50))
    @precondition(lambda self: bool(self.snapshots))
    def diff(self, index: int) -> None:
        record, model = self.snapshots[index % len(self.snapshots)]
        result = self.fs.diff(record)
        before, after = model.files, self.model.files
        assert result.added == tuple(sorted(after.keys() - before.keys()))
        assert result.deleted == tuple(sorted(before.keys() - after.keys()))
        assert result.modified == tuple(
            sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
        )
        assert result.unchanged_count == len(after) - len(result.added) - len(result.modified)
        last, last_model = self.snapshots[-1]
        between = self.fs.diff(record, last)
        assert between.added == tuple(sorted(last_model.files.keys() - before.keys()))

    @invariant()
    def live_tree_matches_model(self) -> None:
        assert fs_state(self.fs) == self.model
        assert self.fs.tree.file_count == len(self.model.files)
        assert self.fs.tree.total_bytes == sum(map(len, self.model.files.values()))

    @invariant()
    def budget_counts_exactly_the_chunks_held(self) -> None:
        chunks: dict[int, int] = {}
        views = [self.fs.tree, *(self.fs.version(record) for record, _ in self.snapshots)]
        for view in views:
            for _, _, node in view.walk():
                if isinstance(node, File):
                    chunks.update((id(chunk), len(chunk)) for chunk in node.chunks.values())
        assert self.fs.tree.budget.held == sum(chunks.values())

    @invariant()
    def snapshots_never_change(self) -> None:
        for record, model in self.snapshots:
            assert fs_state(self.fs.at(record)) == model


WorkspaceMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None
)
test_workspace_model = WorkspaceMachine.TestCase
