"""The change feed with a real container: a Podman container writing files on a daemon's
mount while tool calls run over its socket; every path comes with its cause, the
container's id for the container's files, for a reader on one connection and for one
that keeps dropping its connection and resuming from its last id."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import Daemons, private_runtime
from support.feed import FeedReader, causes_by_path, tool_calls
from workspacefs import Cause

from .conftest import podman

pytestmark = [pytest.mark.container, pytest.mark.fuse]


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Daemons]:
    with private_runtime():
        manager = Daemons(tmp_path)
        try:
            yield manager
        finally:
            manager.close()


@pytest.mark.parametrize(
    ("files", "calls"),
    [(1_000, 100), pytest.param(10_000, 1_000, marks=pytest.mark.slow)],
)
def test_a_containers_files_and_tool_calls_each_with_their_cause(
    daemons: Daemons, tiny_image: str, tmp_path: Path, files: int, calls: int
) -> None:
    record = daemons.start()
    whole = FeedReader(record.socket)
    leaving = FeedReader(record.socket, leave_every=7)
    cid = tmp_path / "container.cid"
    script = (
        "mkdir /workspace/box && i=0; "
        f"while [ $i -lt {files} ]; do echo $i > /workspace/box/$i.txt; i=$((i+1)); done"
    )
    ran: list[int] = []
    container = threading.Thread(
        target=lambda: ran.append(
            podman(
                "run",
                "--rm",
                f"--cidfile={cid}",
                "--network=none",
                f"--volume={record.mountpoint}:/workspace",
                tiny_image,
                "sh",
                "-c",
                script,
            ).returncode
        )
    )
    container.start()
    tool_calls(record.socket, calls)  # at once with the container's writes
    container.join(300)
    assert ran == [0]
    seen_by_whole, seen_by_leaving = whole.finish(), leaving.finish()
    container_id = cid.read_text().strip()
    assert len(container_id) == 64

    for events in (seen_by_whole, seen_by_leaving):
        causes = causes_by_path(events)
        assert set(causes) == {f"box/{i}.txt" for i in range(files)} | {
            f"calls/{n}.txt" for n in range(calls)
        }
        (writer,) = {cause for i in range(files) for cause in causes[f"box/{i}.txt"]}
        assert writer.container == container_id
        assert writer.command == ("sh", "-c", script)
        assert writer.pid is not None
        for n in range(calls):
            assert causes[f"calls/{n}.txt"] == {Cause.call("write_file", f"call-{n}")}
    assert leaving.resumes >= calls // 7  # a tool call's path is an event of its own
