"""The change feed with a real container: a Podman container writing files on a daemon's
mount while tool calls run over its socket; every path comes with its cause, the
container's id for the container's files."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support.daemon import Daemons, private_runtime
from workspacefs import Cause
from workspacefs.daemon import connect
from workspacefs.fs import ChangeEvent
from workspacefs.tools import ToolContext, filesystem_tools

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
    with connect(record.socket) as fs:
        stream = fs.events()
    events: list[ChangeEvent] = []
    done = threading.Event()  # set once the writers are: then a quiet second ends it

    def read() -> None:
        while (event := stream.next_event(1.0)) is not None or not done.is_set():
            if event is not None:
                events.append(event)

    reading = threading.Thread(target=read)
    reading.start()
    cid = tmp_path / "container.cid"
    script = (
        "mkdir /workspace/box && i=0; "
        f"while [ $i -lt {files} ]; do echo $i > /workspace/box/$i.txt; i=$((i+1)); done"
    )
    container = threading.Thread(
        target=lambda: podman(
            "run",
            "--rm",
            f"--cidfile={cid}",
            "--network=none",
            f"--volume={record.mountpoint}:/workspace",
            tiny_image,
            "sh",
            "-c",
            script,
        )
    )
    container.start()
    with connect(record.socket) as fs:
        tools = filesystem_tools(fs)

        def call(n: int) -> None:
            context = ToolContext(filesystem=fs, call_id=f"call-{n}")
            result = tools.call(
                "write_file", {"path": f"calls/{n}.txt", "content": "x"}, context=context
            )
            assert result.success, result.message

        with ThreadPoolExecutor(32) as pool:
            list(pool.map(call, range(calls)))
    container.join(300)
    done.set()
    reading.join(300)
    stream.close()
    container_id = cid.read_text().strip()
    assert len(container_id) == 64

    causes: dict[str, set[Cause]] = {}
    for event in events:
        for path in event.paths:
            # Made, then (a batch later, if the batch ended between them) written.
            assert event.kind == ("modified" if path in causes else "added"), event
            causes.setdefault(path, set()).update(event.causes)
    assert set(causes) == {f"box/{i}.txt" for i in range(files)} | {
        f"calls/{n}.txt" for n in range(calls)
    }
    (writer,) = {cause for i in range(files) for cause in causes[f"box/{i}.txt"]}
    assert writer.container == container_id
    assert writer.command == ("sh", "-c", script)
    assert writer.pid is not None
    for n in range(calls):
        assert causes[f"calls/{n}.txt"] == {Cause.call("write_file", f"call-{n}")}
