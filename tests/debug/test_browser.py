"""The page in a real headless Chromium (Debian's, driven by playwright): load it, pick
two snapshots with the keyboard, see the diff, open a file at an old snapshot.

The screenshot is checked where it matters: the pixels behind an added line, a
removed line and a changed line carry their highlight colours. It is written
to the test's temp dir, and to ``$WORKSPACEFS_SCREENSHOTS`` when set (that is
how docs/debug-ui.png is made: ``WORKSPACEFS_SCREENSHOTS=docs pytest -m browser``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.best_of import CANDIDATES, CORRECT, SCORE, write_candidate, write_project
from support.daemon import Daemons, private_runtime
from workspacefs import Cause, InMemoryFilesystem, Rule, attributed
from workspacefs.daemon import connect
from workspacefs.debug import LiveTarget, start, toolset_arguments
from workspacefs.tools import UndoableToolset, filesystem_tools

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
# No sandbox: tests run as root in a VM; the rest keeps Chromium off the network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
VIEWPORT = {"width": 1400, "height": 860}

APP_V1 = "import os\n\n\ndef main():\n    print('hello')\n"
APP_V2 = "import os\n\n\ndef main():\n    print('hello, world')\n    return 0\n"

# The colours of app.css: added and removed diff lines, a changed line in the file view.
ADDED = (0xDA, 0xFB, 0xE1)
REMOVED = (0xFF, 0xEB, 0xE9)
CHANGED = (0xFF, 0xF8, 0xC5)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (scripts/setup.sh does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def agent_session() -> tuple[InMemoryFilesystem, UndoableToolset]:
    """An agent's tool calls, each undoable (so each leaves a tagged snapshot)."""
    fs = InMemoryFilesystem(workspace_id="agent-demo")
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"path": "src/app.py", "content": APP_V1}),
        ("write_file", {"path": "README.md", "content": "# demo\n\nRun `python -m app`.\n"}),
        (
            "edit_file",
            {
                "path": "src/app.py",
                "old_string": "    print('hello')\n",
                "new_string": "    print('hello, world')\n    return 0\n",
            },
        ),
        ("write_file", {"path": "src/util.py", "content": "X = 1\n"}),
        ("write_file", {"path": "tests/test_app.py", "content": "def test_main():\n    pass\n"}),
        ("rm", {"path": "README.md"}),
    ]
    for name, arguments in calls:
        assert toolset.call(name, arguments).success, name
    return fs, toolset


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def png_pixels(data: bytes) -> list[tuple[int, int, int]]:
    """The RGB pixels of a small 8-bit, non-interlaced PNG, row by row."""
    png_size(data)
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0)
    assert color in (2, 6), color
    channels = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    previous = bytearray(stride)
    pixels = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                guess = left + up - corner
                near = min(
                    (abs(guess - left), 0, left),
                    (abs(guess - up), 1, up),
                    (abs(guess - corner), 2, corner),
                )
                line[i] = (line[i] + near[2]) & 255
        pixels += [tuple(line[x : x + 3]) for x in range(0, stride, channels)]
        previous = line
    return pixels  # type: ignore[return-value]


def background_at(page: Any, selector: str) -> set[tuple[int, int, int]]:
    """The colours of a small patch at the right end of an element, where text rarely is."""
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    assert box["y"] >= 0, selector
    assert box["y"] + box["height"] <= VIEWPORT["height"], f"{selector} is off screen"
    clip = {"x": box["x"] + box["width"] - 8, "y": box["y"] + 2, "width": 4, "height": 4}
    return set(png_pixels(page.screenshot(clip=clip)))


def keep(shot: bytes, name: str, tmp_path: Path) -> None:
    (tmp_path / name).write_bytes(shot)
    wanted = os.environ.get("WORKSPACEFS_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / name, Path(wanted) / name)


def test_pick_two_snapshots_see_the_diff_open_an_old_file(browser: Any, tmp_path: Path) -> None:
    fs, toolset = agent_session()
    target = LiveTarget(fs, call_arguments=toolset_arguments(lambda: toolset.history))
    ids = [str(s.snapshot_id) for s in fs.snapshots()]
    # One before each call and one after it: #2k-1 before call k, #2k after it.
    assert len(ids) == 12
    with start(target) as server:
        page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on(
            "request",
            lambda r: None if r.url.startswith(server.base_url) else problems.append(r.url),
        )
        page.goto(server.url)
        page.wait_for_selector("body[data-ready='1']")

        # The timeline: every snapshot, what made it, and the live state last.
        rows = page.locator("#timeline li")
        assert rows.count() == 13
        assert rows.nth(0).locator(".origin").inner_text().startswith("before write_file (call-1)")
        assert (
            rows.nth(3)
            .locator(".origin")
            .inner_text()
            .startswith('after write_file (call-2) {"path":"README.md","content"')
        )
        assert rows.nth(12).locator(".id").inner_text() == "live"
        assert rows.nth(0).locator(".id").inner_text() == ids[0][:8]  # as the CLI shows it

        # Keyboard only: from = #5 (before the edit), to = #8 (after it and util.py).
        page.keyboard.press("s")
        for key in ["Home", *["ArrowDown"] * 4, "a", *["ArrowDown"] * 3, "b"]:
            page.keyboard.press(key)
        assert page.locator("#from-select").input_value() == ids[4]
        assert page.locator("#to-select").input_value() == ids[7]
        page.keyboard.press("Enter")  # browse #8 in the tree
        page.wait_for_selector("#tree-snapshot:has-text('#8')")
        page.keyboard.press("d")
        page.wait_for_selector("#diff-lines")

        changed = page.locator("#changed-files li")
        assert changed.all_inner_texts() == ["Msrc/app.py", "Asrc/util.py"]
        assert page.locator("#diff-lines td.del").all_inner_texts() == ["    print('hello')"]
        assert page.locator("#diff-lines td.add").all_inner_texts() == [
            "    print('hello, world')",
            "    return 0",
        ]
        # The tree marks what changed: src/ holds changes.
        page.wait_for_selector("#tree li.contains-changes[data-path='src']")
        page.keyboard.press("t")
        page.keyboard.press("End")  # src/ is the last entry at the top
        page.keyboard.press("ArrowRight")
        page.wait_for_selector("#tree li.modified[data-path='src/app.py']")
        assert page.locator("#tree li.added[data-path='src/util.py']").count() == 1

        shot = page.screenshot()
        assert png_size(shot) == (VIEWPORT["width"], VIEWPORT["height"])
        assert background_at(page, "#diff-lines td.add") == {ADDED}
        assert background_at(page, "#diff-lines td.del") == {REMOVED}
        keep(shot, "debug-ui.png", tmp_path)

        page.keyboard.press("u")  # unified
        assert page.locator("#diff-lines.unified td.op.add").count() == 2

        # The file at an old snapshot: #5, before the edit.
        page.keyboard.press("s")
        for _ in range(3):
            page.keyboard.press("ArrowUp")
        page.keyboard.press("Enter")
        page.wait_for_selector("#tree-snapshot:has-text('#5')")
        page.keyboard.press("t")
        page.keyboard.press("End")
        page.keyboard.press("ArrowRight")  # expand src/
        page.wait_for_selector("#tree li[data-path='src/app.py']")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
        page.wait_for_selector("#file-lines")
        assert page.locator("#file-view .view-header").inner_text().startswith("src/app.py")
        lines = page.locator("#file-lines td.src").all_inner_texts()
        assert lines == APP_V1.splitlines()
        assert "at #5" in page.locator("#file-view .view-header").inner_text()

        # Against #8 (the diff's other end), the changed line is highlighted.
        assert page.locator("#file-lines tr.changed td.ln").all_inner_texts() == ["5"]
        assert background_at(page, "#file-lines tr.changed td.src") == {CHANGED}
        keep(page.screenshot(), "debug-ui-file.png", tmp_path)
        page.close()
        assert problems == []


def test_errors_reach_the_page(browser: Any) -> None:
    fs = InMemoryFilesystem()
    fs.write_bytes("blob.bin", b"\0" * 10)
    snapshot = fs.snapshot()
    with start(LiveTarget(fs)) as server:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{server.url}#snapshot={snapshot.snapshot_id}&file=blob.bin")
        page.wait_for_selector("body[data-ready='1']")
        error = page.locator("#file-view .error")
        assert error.get_attribute("data-error") == "binary"
        link = page.locator("#file-view a[download]")
        href = link.get_attribute("href")
        assert href == f"/api/snapshots/{snapshot.snapshot_id}/raw?path=blob.bin"
        # The download needs no token in its URL: the page's cookie carries it.
        assert page.evaluate("(href) => fetch(href).then((r) => r.status)", href) == 200
        page.close()


def test_the_printed_url_lets_the_browser_in_and_nothing_else_does(browser: Any) -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "a\n")
    fs.snapshot()
    with start(LiveTarget(fs)) as server:
        context = browser.new_context()
        page = context.new_page()
        assert page.goto(server.base_url).status == 401  # no token, no page
        page.goto(server.url)
        page.wait_for_selector("body[data-ready='1']")
        assert page.url == f"{server.base_url}#snapshot=live"  # the token has left it
        (cookie,) = context.cookies()
        assert (cookie["value"], cookie["httpOnly"], cookie["sameSite"]) == (
            server.token,
            True,
            "Strict",
        )
        assert page.evaluate("document.cookie") == ""  # no script reads it
        page.reload()  # the cookie alone lets the page in again
        page.wait_for_selector("body[data-ready='1']")
        assert page.locator("#timeline li").count() == 2
        context.close()


def test_the_timeline_and_the_diff_say_who_changed_what(browser: Any) -> None:
    fs, _ = agent_session()
    fs.write("notes.txt", "by hand\n")  # no cause in effect: adds no name to the live row
    ids = [str(s.snapshot_id) for s in fs.snapshots()]
    with start(LiveTarget(fs)) as server:
        page = browser.new_page(viewport=VIEWPORT)
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"{server.url}#from={ids[4]}&to={ids[7]}")
        page.wait_for_selector("body[data-ready='1']")
        page.wait_for_selector("#timeline li .causes")
        rows = page.locator("#timeline li")
        # The snapshot after call k (#2k) holds what it changed; the one before it, nothing.
        assert rows.nth(0).locator(".causes").count() == 0  # the empty start
        assert rows.nth(1).locator(".causes").inner_text() == "by write_file call call-1"
        assert rows.nth(2).locator(".causes").count() == 0
        assert rows.nth(5).locator(".causes").inner_text() == "by edit_file call call-3"
        assert rows.nth(9).locator(".causes").inner_text() == "by write_file call call-5"
        assert rows.nth(11).locator(".causes").inner_text() == "by rm call call-6"

        # From #5 to #8: the edit of call 3 and the new file of call 4, each named.
        page.wait_for_selector("#changed-files li")
        changed = page.locator("#changed-files li")
        assert changed.nth(0).get_attribute("title") == "by edit_file call call-3"
        assert changed.nth(1).get_attribute("title") == "by write_file call call-4"
        page.wait_for_selector("#diff-file .view-header .who")
        assert page.locator("#diff-file .view-header .who").inner_text() == (
            "by edit_file call call-3"
        )
        page.close()
        assert problems == []


@pytest.mark.fuse
@pytest.mark.container
def test_the_attempts_of_a_trial_side_by_side(browser: Any, tmp_path: Path) -> None:
    """A daemon's trial (as ``workspacefs debug MOUNTPOINT`` shows it): one card per
    attempt, side by side, the best marked, each with its result, changes and output."""
    with private_runtime():
        daemons = Daemons(tmp_path)
        try:
            record = daemons.start(source=str(write_project(tmp_path / "project")))
            with connect(record.socket) as fs:
                trial = fs.best_of([write_candidate(c) for c in CANDIDATES], score=SCORE)
                _compare_attempts(browser, LiveTarget(fs), trial.id, tmp_path)
        finally:
            daemons.close()


def _compare_attempts(browser: Any, target: LiveTarget, trial_id: str, tmp_path: Path) -> None:
    with start(target) as server:
        page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(server.url)
        page.wait_for_selector("body[data-ready='1']")
        assert page.locator("#tab-attempts").is_visible()
        assert page.locator("#attempts-view").is_hidden()
        page.keyboard.press("o")
        page.wait_for_selector("#attempts-view article.attempt")
        assert page.locator("#trial-select").input_value() == trial_id
        cards = page.locator("#attempts article.attempt")
        assert cards.count() == 3
        boxes = [cards.nth(i).bounding_box() for i in range(3)]
        assert all(box is not None for box in boxes)
        # Side by side: one row, left to right in the trial's order, none overlapping.
        assert len({round(box["y"]) for box in boxes}) == 1
        for left, right in itertools.pairwise(boxes):
            assert left["x"] + left["width"] <= right["x"]
        view = page.locator("#attempts-view").bounding_box()
        assert view is not None
        assert boxes[2]["x"] + boxes[2]["width"] <= view["x"] + view["width"]
        assert [cards.nth(i).get_attribute("data-attempt") for i in range(3)] == [
            "try-1",
            "try-2",
            "try-3",
        ]
        best = page.locator("#attempts article.attempt.best")
        assert best.get_attribute("data-attempt") == "try-2"
        assert best.locator(".badge.best").inner_text() == "best"
        assert best.locator(".verdict").inner_text() == "passed"
        assert [cards.nth(i).locator(".verdict").inner_text() for i in (0, 2)] == [
            "failed",
            "failed",
        ]
        assert best.locator(".score").inner_text() == "1"
        assert best.locator(".paths li").all_inner_texts() == ["Mstats.py"]
        assert best.locator("pre.command").inner_text() == write_candidate(CORRECT)
        failed = cards.nth(0).locator("pre.tail").last.inner_text()
        assert "FAIL: test_even" in failed  # the score command's own words
        assert cards.nth(0).locator(".scoring").inner_text().startswith("exit 1 in ")
        summary = page.locator("#attempts-view .trial-summary").inner_text()
        assert summary.startswith("1 of 3 passed in ")
        shot = page.screenshot()
        assert png_size(shot) == (VIEWPORT["width"], VIEWPORT["height"])
        keep(shot, "debug-ui-attempts.png", tmp_path)
        page.close()
        assert problems == []


def test_the_live_view_follows_the_change_feed(browser: Any) -> None:
    fs = InMemoryFilesystem()
    fs.write("src/app.py", APP_V1)
    fs.snapshot()
    with start(LiveTarget(fs)) as server:
        page = browser.new_page(viewport=VIEWPORT)
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"{server.url}#snapshot=live&file=src/app.py")
        page.wait_for_selector("body[data-ready='1']")
        page.wait_for_selector("#live-state:has-text('following')")
        page.locator("#tree li[data-path='src'] > .label").click()  # open src/
        page.wait_for_selector("#tree li[data-path='src/app.py']")

        # Changes made elsewhere reach the page without a reload: the list of live
        # changes says what and who, the tree and the open file show them.
        with attributed(Cause.call("write_file", "call-9")):
            fs.write("src/util.py", "X = 1\n")
            fs.write("src/app.py", APP_V2)
        page.wait_for_selector("#live-feed li.added[data-path='src/util.py']")
        row = page.locator("#live-feed li[data-path='src/util.py']")
        assert row.locator(".who").inner_text() == "by write_file call call-9"
        page.wait_for_selector("#tree li[data-path='src/util.py']")  # src/ still open
        page.wait_for_selector("#file-lines td.src:has-text('return 0')")
        fs.delete("src/util.py")
        page.wait_for_selector("#live-feed li.deleted[data-path='src/util.py']")
        page.wait_for_selector("#tree li[data-path='src/util.py']", state="detached")
        # A change an access rule refused is a row of its own, naming the rule.
        fs.rules.add(Rule("src/app.py"))
        with attributed(Cause.call("edit_file", "call-10")), pytest.raises(OSError):
            fs.write("src/app.py", "x")
        page.wait_for_selector("#live-feed li.denied[data-path='src/app.py']")
        denied = page.locator("#live-feed li.denied[data-path='src/app.py']")
        assert denied.locator(".st").inner_text() == "!"
        title = denied.get_attribute("title") or ""
        assert "write denied by workspace rule read-only 'src/app.py'" in title
        assert "edit_file call call-10" in title
        page.close()
        assert problems == []
