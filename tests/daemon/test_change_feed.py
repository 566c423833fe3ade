"""A daemon's change feed (``GET /v3/events``): processes writing on the mount and tool
calls over the socket at once, each path with its cause; a reader that goes away and
resumes from its last id misses nothing; ``workspacefs watch``; raw HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.daemon import Daemons, cli, serve_debug, stop_debug
from support.feed import FeedReader, causes_by_path, tool_calls
from workspacefs import AccessDeniedError, Cause, InvalidArgumentError, Rule, attributed
from workspacefs.daemon import API_VERSION, DaemonUnreachableError, MountRecord, connect
from workspacefs.fs import ChangeEvent, ChangeStream

TOOL = Cause.call("edit_file", "toolu_1")


@pytest.fixture
def daemon(daemons: Daemons) -> MountRecord:
    return daemons.start()


def drain(stream: ChangeStream, quiet: float = 1.0) -> list[ChangeEvent]:
    found = []
    while (event := stream.next_event(quiet)) is not None:
        found.append(event)
    return found


def test_mount_writes_and_remote_calls_each_come_with_their_cause(daemon: MountRecord) -> None:
    with connect(daemon.socket) as fs, fs.events() as stream:
        with attributed(TOOL):
            fs.write("src/app.py", "v1\n")
        shell = subprocess.Popen(["sh", "-c", f"echo hi > {daemon.mountpoint}/notes.md"])
        assert shell.wait(timeout=60) == 0
        events = drain(stream)
    found = {path: (e.kind, e.causes) for e in events for path in e.paths}
    assert found["src/app.py"] == ("added", (TOOL,))
    kind, (cause,) = found["notes.md"]
    assert (kind, cause.pid, cause.command[:2]) == ("added", shell.pid, ("sh", "-c"))


def writers(
    mountpoint: str, files: int, processes: int
) -> list[tuple[subprocess.Popen[bytes], str]]:
    """``processes`` shells on the mount, each writing its share of ``files`` files in a
    directory of its own with shell builtins (so the shell itself is the writer)."""
    started = []
    for n in range(processes):
        directory = f"proc{n}"
        script = (
            f"mkdir {mountpoint}/{directory} && i=0; "
            f"while [ $i -lt {files // processes} ]; do echo $i > {mountpoint}/{directory}/$i.txt; "
            "i=$((i+1)); done"
        )
        started.append((subprocess.Popen(["sh", "-c", script]), directory))
    return started


@pytest.mark.parametrize(
    ("files", "calls"),
    [(1_000, 100), pytest.param(10_000, 1_000, marks=pytest.mark.slow)],
)
def test_every_path_with_its_cause_and_a_resumed_reader_misses_nothing(
    daemon: MountRecord, files: int, calls: int
) -> None:
    whole = FeedReader(daemon.socket)  # reads everything on one connection
    # Drops its connection every 7 events, mid-stream, while the writers go on, and
    # resumes from the last id it read.
    leaving = FeedReader(daemon.socket, leave_every=7)
    procs = writers(daemon.mountpoint, files, 4)
    tool_calls(daemon.socket, calls)
    for proc, _ in procs:
        assert proc.wait(timeout=300) == 0
    seen_by_whole, seen_by_leaving = whole.finish(), leaving.finish()

    expected = {f"proc{n}/{i}.txt": procs[n][0].pid for n in range(4) for i in range(files // 4)}
    for events in (seen_by_whole, seen_by_leaving):
        causes = causes_by_path(events)
        assert set(causes) == set(expected) | {f"calls/{n}.txt" for n in range(calls)}
        for path, pid in expected.items():
            assert {c.pid for c in causes[path]} == {pid}, path
            assert all(c.command[:2] == ("sh", "-c") and c.container is None for c in causes[path])
        for n in range(calls):
            assert causes[f"calls/{n}.txt"] == {Cause.call("write_file", f"call-{n}")}
    assert leaving.resumes >= calls // 7  # a tool call's path is an event of its own


def test_an_id_from_an_earlier_run_gets_a_gap(daemons: Daemons) -> None:
    record = daemons.start()
    with connect(record.socket) as fs, fs.events() as stream:
        fs.write("a.txt", "1")
        (event,) = drain(stream)
    daemons.close()
    record = daemons.start()
    with connect(record.socket) as fs, fs.events(after=event.id) as stream:
        gap = stream.next_event(10)
        assert gap is not None
        assert gap.kind == "gap"
        fs.write("b.txt", "2")
        (after,) = drain(stream)
    assert after.paths == ("b.txt",)
    with connect(record.socket) as fs:
        with pytest.raises(InvalidArgumentError, match="malformed event id"):
            fs.events(after="not an id")
        with pytest.raises(InvalidArgumentError):
            fs.events(glob="")


def test_unmount_ends_a_stream_being_read(daemons: Daemons) -> None:
    record = daemons.start()
    ended: list[BaseException] = []

    def follow(stream: ChangeStream) -> None:
        try:
            for _ in stream:
                pass
        except DaemonUnreachableError as exc:
            ended.append(exc)

    with connect(record.socket) as fs:
        stream = fs.events()
        reader = threading.Thread(target=follow, args=(stream,))
        reader.start()
        fs.unmount()
    reader.join(30)
    assert "ended the change feed" in str(ended[0])
    assert stream.closed


@pytest.fixture
def http(daemon: MountRecord) -> Iterator[httpx.Client]:
    transport = httpx.HTTPTransport(uds=daemon.socket)
    with httpx.Client(transport=transport, base_url="http://workspacefs", timeout=30) as client:
        yield client


def frames(lines: Iterator[str], count: int) -> list[dict[str, str]]:
    """The next ``count`` frames (comments skipped) as {field: value}."""
    found: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in lines:
        if not line:
            if current:
                found.append(current)
                current = {}
            if len(found) == count:
                return found
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            current[name] = value
    raise AssertionError(f"the stream ended after {found}")


def test_the_endpoint_speaks_server_sent_events(daemon: MountRecord, http: httpx.Client) -> None:
    url = f"/v{API_VERSION}/events"
    with http.stream("GET", url, params={"keepalive": "0.2"}) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        lines = answer.iter_lines()
        (start,) = frames(lines, 1)
        assert set(start) == {"retry", "id"}  # where it starts: nothing yet
        Path(daemon.mountpoint, "x.txt").write_text("x")
        (event,) = frames(lines, 1)
    data = json.loads(event["data"])
    assert (event["id"], data["kind"], data["paths"]) == (data["id"], "added", ["x.txt"])
    assert data["causes"][0]["pid"] == os.getpid()  # this process wrote it
    # A browser reconnects with Last-Event-ID, which wins over ?after=.
    headers = {"last-event-id": start["id"]}
    with http.stream("GET", url, headers=headers, params={"after": event["id"]}) as again:
        resumed = frames(again.iter_lines(), 2)
    assert resumed[1]["id"] == event["id"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"after": "zz"}, "malformed event id"),
        ({"glob": ""}, "path glob"),
        ({"glob": "[" * 5000}, "path glob"),
        ({"keepalive": "0"}, "keepalive"),
        ({"keepalive": "nan"}, "keepalive"),
        ({"keepalive": "soon"}, "keepalive"),
    ],
)
def test_bad_requests_are_refused_before_the_stream(
    daemon: MountRecord, http: httpx.Client, params: dict[str, str], message: str
) -> None:
    answer = http.get(f"/v{API_VERSION}/events", params=params)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "InvalidArgumentError"
    assert message in error["message"]
    assert http.post(f"/v{API_VERSION}/events").status_code == 400  # GET only
    with connect(daemon.socket) as fs:
        assert fs.exists(".")  # still serving


def test_watch_prints_each_path_with_its_cause(daemon: MountRecord) -> None:
    with connect(daemon.socket) as fs:
        with fs.events() as stream:
            start = stream.last_id
        with attributed(TOOL):
            fs.write("README.md", "# hi\n")
            fs.write("app.py", "")
    human = cli("watch", daemon.mountpoint, "*.md", "--after", start, "--timeout", "1.5")
    assert human.returncode == 0, human.stderr
    assert human.stdout.splitlines()[0].endswith(" A README.md\tedit_file call toolu_1")
    assert "app.py" not in human.stdout
    assert "--after resumes there" in human.stderr
    as_json = cli("watch", daemon.mountpoint, "--json", "--after", start, "--timeout", "1.5")
    assert as_json.returncode == 0, as_json.stderr
    events = [ChangeEvent.from_dict(json.loads(line)) for line in as_json.stdout.splitlines()]
    assert {path for event in events for path in event.paths} == {"README.md", "app.py"}
    assert {cause for event in events for cause in event.causes} == {TOOL}
    bad = cli("watch", daemon.mountpoint, "--after", "nope", "--timeout", "0.1")
    assert bad.returncode == 1
    assert "malformed event id" in bad.stderr


def test_the_debug_ui_of_a_daemon_relays_its_feed(daemon: MountRecord) -> None:
    debug = serve_debug(daemon.mountpoint)
    try:
        headers = {"authorization": f"Bearer {debug.token}"}
        with httpx.stream("GET", debug.base + "/api/events", headers=headers, timeout=30) as answer:
            lines = answer.iter_lines()
            frames(lines, 1)  # where it starts
            Path(daemon.mountpoint, "seen.txt").write_text("x")
            (frame,) = frames(lines, 1)
    finally:
        stop_debug(debug)
    event = json.loads(frame["data"])
    assert event["paths"] == ["seen.txt"]
    (cause,) = event["causes"]
    assert cause["pid"] == os.getpid()
    assert cause["text"].startswith(f"pid {os.getpid()} ")


def test_a_denial_is_an_event_for_every_reader(daemon: MountRecord) -> None:
    with connect(daemon.socket) as fs:
        fs.write("locked.txt", "x\n")
        fs.add_rules([Rule("locked.txt")])
        with fs.events() as stream:
            start = stream.last_id
            with attributed(TOOL), pytest.raises(AccessDeniedError):
                fs.write("locked.txt", "y")
            with pytest.raises(PermissionError):  # a process on the mount
                Path(daemon.mountpoint, "locked.txt").write_text("z")
            events = drain(stream)
    denied = [e for e in events if e.kind == "denied"]
    assert [(e.paths, e.denial.action if e.denial else None) for e in denied] == [
        (("locked.txt",), "write"),
        (("locked.txt",), "truncate"),
    ]
    assert denied[0].causes == (TOOL,)
    assert denied[0].denial is not None
    assert denied[0].denial.rule == Rule("locked.txt")
    assert denied[1].causes[0].pid is not None
    human = cli("watch", daemon.mountpoint, "--after", start, "--timeout", "1.5")
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    assert "denied write of locked.txt by edit_file call toolu_1" in lines[0]
    assert "read-only 'locked.txt' (EACCES)" in lines[0]
    as_json = cli("watch", daemon.mountpoint, "--json", "--after", start, "--timeout", "1.5")
    again = [ChangeEvent.from_dict(json.loads(line)) for line in as_json.stdout.splitlines()]
    assert [e.denial for e in again if e.kind == "denied"] == [e.denial for e in denied]
