"""A server answers its handshake, and its list of tools when a listing of the same code
and configuration is kept on disk, while the workspace and the tools are still being made;
a call waits for them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.tools import DeferredTools, ServedTools, ToolService


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "workspacefs" / "mcp-listing.json"


def _kept(cache: Path, listing: Sequence[object]) -> bool:
    """Whether ``cache`` holds ``listing`` within a while (it is written once the tools
    are made, after calls are let through)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            entries = json.loads(cache.read_text())
        except (OSError, ValueError):
            entries = {}
        if [entry["listing"] for entry in entries.values()][-1:] == [listing]:
            return True
        time.sleep(0.02)
    return False


class Gate:
    """Makes the served tools once let through."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.fs = InMemoryFilesystem()
        self.fs.write("a.txt", "a\n")

    def make(self) -> ToolService:
        assert self.open.wait(20)
        return ServedTools(self.fs)


def _call(served: ToolService, path: str) -> str:
    answer = served.call("read_file", {"path": path}, None, 1)
    return str(answer["content"][0]["text"])


def test_the_listing_kept_is_served_before_the_tools_are_made(cache: Path) -> None:
    first = Gate()
    first.open.set()
    made = DeferredTools(first.make, configuration="memory")
    listing = made.made().listing()
    assert made.listing() == listing
    assert _kept(cache, listing)  # for the next start

    second = Gate()  # not let through: nothing is made yet
    served = DeferredTools(second.make, configuration="memory")
    assert served.listing() == listing
    assert served.version == made.version
    answers: list[str] = []
    calling = threading.Thread(target=lambda: answers.append(_call(served, "a.txt")))
    calling.start()
    calling.join(0.2)
    assert calling.is_alive()  # a call waits for the tools
    second.open.set()
    calling.join(20)
    assert answers == ["     1\ta"]


def test_another_configuration_waits_for_its_own_listing(cache: Path) -> None:
    first = Gate()
    first.open.set()
    DeferredTools(first.make, configuration="memory").made()
    second = Gate()
    served = DeferredTools(second.make, configuration="memory:read_only=True")
    listed: list[int] = []
    listing = threading.Thread(target=lambda: listed.append(len(served.listing())))
    listing.start()
    listing.join(0.2)
    assert listing.is_alive()  # none kept for it: made first
    second.open.set()
    listing.join(20)
    assert listed == [len(ServedTools(InMemoryFilesystem()).listing())]


def test_a_workspace_that_cannot_be_made_fails_each_call_and_the_server(cache: Path) -> None:
    def fail() -> ToolService:
        raise FileNotFoundError(2, "no such file or directory", "/gone")

    served = DeferredTools(fail, configuration="memory")
    answer = served.call("ls", {}, None, 1)
    assert answer["isError"] is True
    assert answer["content"][0]["text"] == (
        "The workspace could not be made, so no tool can run: no such file or directory."
    )
    with pytest.raises(FileNotFoundError):
        served.made()
    assert not cache.exists()


def test_a_damaged_cache_is_made_anew(cache: Path) -> None:
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json")
    gate = Gate()
    gate.open.set()
    served = DeferredTools(gate.make, configuration="memory")
    listing = served.made().listing()
    assert served.listing() == listing
    assert _kept(cache, listing)
