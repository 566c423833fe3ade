"""One rule for the names people give: snapshot tags, fork names, try-runs.

A name is refused where it is given, with the reason, and changes nothing; what
is accepted is what every later use can hold (a git ref, a directory entry, a
line of a table), so a tag accepted by ``snapshot`` always persists.
"""

from __future__ import annotations

from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from workspacefs import HostFilesystem, InMemoryFilesystem, InvalidArgumentError
from workspacefs import git as wgit
from workspacefs.archive import ArchiveSnapshots
from workspacefs.fs import check_name, check_tag
from workspacefs.tools import SNAPSHOT, ToolContext

REFUSED = {
    "": "empty",
    "a/b": "'/'",
    "x.lock": "'.lock'",
    "héllo": "'é'",
    "with space": "' '",
    "tab\there": "'\\t'",
    "new\nline": "'\\n'",
    "-leading": "start with a letter or digit",
    ".snapshots": "start with a letter or digit",
    "a..b": "'..'",
    "ends.": "end with '.'",
    "x" * 129: "128",
    "a@{1}": "'@'",
    "star*": "'*'",
}
TAG_ONLY_REFUSED = {"42": "number"}
ACCEPTED = ["v1", "before-refactor", "release_2.0", "A", "0a", "cafe", "x" * 128]


@pytest.mark.parametrize(("name", "reason"), REFUSED.items(), ids=repr)
def test_a_name_git_or_a_table_cannot_hold_is_refused_with_the_reason(
    name: str, reason: str
) -> None:
    for check, what in ((check_tag, "tag"), (lambda n: check_name(n, "fork name"), "fork name")):
        with pytest.raises(InvalidArgumentError) as caught:
            check(name)
        assert caught.value.strerror is not None
        assert what in caught.value.strerror
        assert reason in caught.value.strerror
        assert caught.value.filename == name


@pytest.mark.parametrize("name", ACCEPTED)
def test_ordinary_names_are_accepted(name: str) -> None:
    assert check_tag(name) == name
    assert check_name(name, "fork name") == name


@pytest.mark.parametrize(("tag", "reason"), TAG_ONLY_REFUSED.items())
def test_a_number_is_no_tag(tag: str, reason: str) -> None:
    with pytest.raises(InvalidArgumentError, match=reason):
        check_tag(tag)
    assert check_name(tag, "fork name") == tag


def test_a_tag_may_hold_colons_a_name_may_not() -> None:
    assert check_tag("undo:write_file:call-1") == "undo:write_file:call-1"
    with pytest.raises(InvalidArgumentError, match="':'"):
        check_name("undo:write_file", "fork name")  # ``podman -v PATH:/workspace``
    with pytest.raises(InvalidArgumentError, match="255"):
        check_tag("a" + ":" * 100)  # each ':' is ``%3A`` in the ref


@pytest.mark.parametrize("name", ["a/b", "x.lock", "héllo", "with space", "ends."])
def test_snapshot_refuses_a_bad_tag_at_once_and_changes_nothing(name: str, tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("f", "x")
    with pytest.raises(InvalidArgumentError, match="tag"):
        fs.snapshot(tag=name)
    assert fs.snapshots() == []
    assert fs.current_snapshot_id is None
    root = tmp_path / "host"
    root.mkdir()
    host = HostFilesystem(root, git_dir=str(tmp_path / "host.git"))
    with pytest.raises(InvalidArgumentError, match="tag"):
        host.snapshot(tag=name)


def test_the_snapshot_tool_says_why_a_tag_is_refused() -> None:
    fs = InMemoryFilesystem()
    result = SNAPSHOT.invoke({"tag": "a/b"}, context=ToolContext(filesystem=fs))
    assert not result.success
    assert "'/'" in result.message
    assert fs.snapshots() == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tag=st.text(alphabet="aZ09._-:/@ é\n", min_size=1, max_size=12))
def test_every_tag_snapshot_accepts_persists_and_loads_back(tag: str, tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("f", tag)
    try:
        record = fs.snapshot(tag=tag)
    except InvalidArgumentError:
        return
    repo = tmp_path / f"r{abs(hash(tag))}.git"
    wgit.persist(fs, record, repo)
    assert wgit.load(repo, tag, workspace=fs.workspace_id).read("f").content == tag


@pytest.mark.parametrize(("name", "reason"), [("a..b", "'..'"), ("x.lock", "'.lock'")])
def test_archived_snapshots_are_named_by_the_same_rule(
    name: str, reason: str, tmp_path: Path
) -> None:
    manager = ArchiveSnapshots(InMemoryFilesystem(), tmp_path / "snaps")
    with pytest.raises(InvalidArgumentError, match=reason):
        manager.snapshot(name)
    assert manager.list_snapshots() == []
