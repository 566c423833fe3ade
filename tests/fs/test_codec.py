"""``fs.to_json``/``fs.from_json``: one JSON form for the value types, read as declared."""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from workspacefs import InvalidArgumentError
from workspacefs.fs import (
    Cause,
    ConflictReport,
    FileStat,
    FilesystemSnapshot,
    InMemoryFilesystem,
    MergeConflict,
    MergeReport,
    MergeResult,
    MergeSide,
    PathChange,
    ReadBytesResult,
    ReadResult,
    SnapshotChanges,
    SnapshotRef,
    SnapshotRetentionPolicy,
    SpaceUsage,
    TreeEntry,
    from_json,
    to_json,
)


def round_trip(value: Any, kind: Any = None) -> Any:
    """``value`` through JSON text and back, as ``kind`` (default: its own type)."""
    text = json.dumps(to_json(value, kind))
    return from_json(type(value) if kind is None else kind, json.loads(text))


RECORD = FilesystemSnapshot(
    snapshot_id=uuid.UUID("12345678-1234-5678-1234-567812345678"),
    created_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
    ref=SnapshotRef("git", "abc123", "/repo.git"),
    root_path="/",
    tag="t",
    workspace_id="w",
)


def test_a_snapshot_record_keeps_the_form_git_history_stores() -> None:
    # Persisted history and users' session state hold this form: it must not change.
    assert RECORD.to_dict() == {
        "snapshot_id": "12345678-1234-5678-1234-567812345678",
        "created_at": "2025-01-02T03:04:05+00:00",
        "ref": {"kind": "git", "location": "abc123", "repository": "/repo.git"},
        "root_path": "/",
        "tag": "t",
        "parent_id": None,
        "file_count": 0,
        "total_bytes": 0,
        "workspace_id": "w",
    }
    assert FilesystemSnapshot.from_dict(RECORD.to_dict()) == RECORD


@pytest.mark.parametrize(
    "value",
    [
        RECORD,
        FileStat("a", True, False, 3, RECORD.created_at, None, mode=0o100644),
        ReadBytesResult(b"\x00\xffbytes", "a", 7, 0, 7, False),
        SnapshotChanges(RECORD, None, (PathChange("a", "added", (Cause.call("t", "c1"),)),)),
        SnapshotRetentionPolicy(max_count=3, max_age_hours=1.5),
        MergeSide("file", 0o100644, b"data"),
    ],
    ids=lambda value: type(value).__name__,
)
def test_values_round_trip(value: object) -> None:
    assert round_trip(value) == value


def test_a_compared_out_field_does_not_travel_and_is_made_again() -> None:
    page = ReadResult("one\ntwo\n", "a", 2, 0, 2000, False)
    data = to_json(page)
    assert "lines" not in data
    assert from_json(ReadResult, data).lines == ("one", "two")


def test_a_derived_field_travels_for_readers_and_is_computed_again() -> None:
    fs = InMemoryFilesystem()
    fs.write("a", "x" * 100)
    fs.snapshot()
    usage = fs.space_usage()
    data = to_json(usage)
    assert data["workspace"]["live"] == {"reached": 100, "shared": 100, "exclusive": 0}
    assert "_shares" not in data
    again = round_trip(usage)
    assert again == usage
    with pytest.raises(InvalidArgumentError, match="over the wire"):
        again.exclusive_bytes([])
    assert SpaceUsage.from_dict(usage.to_dict()) == usage


def test_a_row_class_travels_as_an_array() -> None:
    entry = TreeEntry("dir/link", "symlink", 6, 0o120777, "target")
    assert to_json(entry) == ["dir/link", "symlink", 6, 0o120777, "target"]
    assert from_json(list[TreeEntry], [["a", "file"], to_json(entry)]) == [
        TreeEntry("a", "file"),
        entry,
    ]


def test_a_value_is_written_as_its_declared_type() -> None:
    side = MergeSide("file", 0o100644, b"whole file")
    result = MergeResult(
        changed=("a",),
        conflicts=(MergeConflict(path="b", kind="content", base=None, ours=side, theirs=side),),
        applied=False,
    )
    # As a report, the conflict keeps its path, kind, markers and detail, not its sides.
    data = to_json(result, MergeReport)
    assert data["conflicts"] == [{"path": "b", "kind": "content", "markers": None, "detail": None}]
    assert from_json(MergeReport, data).conflicts == (ConflictReport("b", "content"),)
    assert round_trip(result) == result


class Colour(enum.Enum):
    RED = "red"


@dataclass(frozen=True, slots=True)
class Holder:
    colour: Colour
    when: datetime | None
    sizes: dict[str, int] = field(default_factory=dict)
    pair: tuple[int, str] = (0, "")


def test_enums_optionals_mappings_and_fixed_tuples() -> None:
    value = Holder(Colour.RED, None, {"a": 1}, (2, "b"))
    assert to_json(value) == {"colour": "red", "when": None, "sizes": {"a": 1}, "pair": [2, "b"]}
    assert round_trip(value) == value


@pytest.mark.parametrize(
    ("kind", "data", "says"),
    [
        (int, "1", "expected int, got str"),
        (int, True, "expected int, got bool"),
        (bytes, "not base64!", "not a valid bytes"),
        (uuid.UUID, 5, "expected UUID, got int"),
        (datetime, "yesterday", "not a valid datetime"),
        (FilesystemSnapshot, {**RECORD.to_dict(), "extra": 1}, "unknown fields ['extra']"),
        (FilesystemSnapshot, {"snapshot_id": str(RECORD.snapshot_id)}, "missing fields"),
        (FilesystemSnapshot, {**RECORD.to_dict(), "file_count": "many"}, "file_count"),
        (SnapshotRef, {"kind": "tape", "location": "x"}, "unknown snapshot kind"),
        (list[str], "abc", "expected"),
        (Holder, ["red"], "expected Holder"),
    ],
)
def test_input_that_does_not_fit_is_refused_naming_it(kind: Any, data: Any, says: str) -> None:
    with pytest.raises(InvalidArgumentError) as refused:
        from_json(kind, data)
    assert says in str(refused.value)


def test_a_value_not_of_its_declared_type_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="expected str, got bytes"):
        to_json(b"x", str)
    with pytest.raises(TypeError, match="no JSON form"):
        to_json(object(), set[int])
