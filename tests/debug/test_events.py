"""``/api/events``: a live workspace's change feed, relayed to the page as server-sent
events with each cause's text; resumable; refused where nothing changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx

from workspacefs import Cause, InMemoryFilesystem, attributed
from workspacefs.archive import export_archive
from workspacefs.debug import LiveTarget, open_target, start

from .conftest import bearer

TOOL = Cause.call("write_file", "call-7")


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


def test_the_live_view_follows_the_feed_and_resumes() -> None:
    fs = InMemoryFilesystem()
    with start(LiveTarget(fs)) as server:
        headers = bearer(server.token)
        info = httpx.get(server.base_url + "api/target", headers=headers).json()
        assert info["details"]["change_feed"] is True
        url = server.base_url + "api/events"
        with httpx.stream("GET", url, headers=headers, timeout=30) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            lines = answer.iter_lines()
            (start_at,) = frames(lines, 1)
            with attributed(TOOL):
                fs.write("src/app.py", "print(1)\n")
            (frame,) = frames(lines, 1)
        event = json.loads(frame["data"])
        assert frame["id"] == event["id"]
        assert (event["kind"], event["paths"]) == ("added", ["src/app.py"])
        (cause,) = event["causes"]
        assert cause == {**TOOL.to_dict(), "kind": "call", "text": "write_file call call-7"}
        # The page reconnects with the last id it had: what it missed comes first.
        fs.write("README.md", "# hi\n")
        resumed = {**headers, "last-event-id": frame["id"]}
        with httpx.stream("GET", url, headers=resumed, timeout=30) as answer:
            (_, missed) = frames(answer.iter_lines(), 2)
        assert json.loads(missed["data"])["paths"] == ["README.md"]
        bad = httpx.get(url, headers={**headers, "last-event-id": "nope"})
        assert (bad.status_code, bad.json()["error"]) == (400, "bad_request")
        assert start_at["id"].endswith("-0")


def test_a_target_that_does_not_change_has_no_feed(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "a")
    export_archive(fs, tmp_path / "run.zip")
    with start(open_target(tmp_path / "run.zip")) as server:
        answer = httpx.get(server.base_url + "api/events", headers=bearer(server.token))
    assert (answer.status_code, answer.json()["error"]) == (404, "not_live")
