"""The debug UI's timeline shows what each snapshot holds in memory, alone and shared."""

from __future__ import annotations

from typing import Any

import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.debug import LiveTarget, start

from .conftest import Case, client_for, json_of
from .test_browser import VIEWPORT, browser  # noqa: F401  (the fixture)

KIB = 1024


def history() -> InMemoryFilesystem:
    """ "one" alone holds 10 KiB, "two" 5 KiB and the live state 2 KiB; a 7-byte file is shared."""
    fs = InMemoryFilesystem(workspace_id="space-demo")
    fs.write_bytes("README.md", b"# demo\n")
    for tag, size in (("one", 10 * KIB), ("two", 5 * KIB)):
        fs.write_bytes("data.bin", b"x" * size)
        fs.snapshot(tag=tag)
    fs.write_bytes("data.bin", b"y" * 2 * KIB)
    return fs


def test_live_targets_carry_shared_and_exclusive_bytes() -> None:
    fs = history()
    target = LiveTarget(fs)
    with client_for(target) as client:
        snapshots = json_of(client.get("/api/snapshots"))["snapshots"]
    assert [(s["tag"], s["space"]) for s in snapshots] == [
        ("one", {"reached": 10 * KIB + 7, "shared": 7, "exclusive": 10 * KIB}),
        ("two", {"reached": 5 * KIB + 7, "shared": 7, "exclusive": 5 * KIB}),
        (None, {"reached": 2 * KIB + 7, "shared": 7, "exclusive": 2 * KIB}),
    ]


def test_stored_histories_carry_none(case: Case) -> None:
    snapshots = json_of(case.client.get("/api/snapshots"))["snapshots"]
    counted = [s["space"] is not None for s in snapshots]
    assert all(counted) if case.live else not any(counted)


@pytest.mark.browser
def test_the_timeline_shows_them(browser: Any) -> None:  # noqa: F811
    with start(LiveTarget(history())) as server:
        page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
        page.goto(server.url)
        page.wait_for_selector("body[data-ready='1']")
        assert page.locator("#timeline li .space").all_inner_texts() == [
            "holds 10.0 KiB alone · shares 7 B",
            "holds 5.0 KiB alone · shares 7 B",
            "holds 2.0 KiB alone · shares 7 B",
        ]
        page.close()
