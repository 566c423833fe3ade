"""The daemon's bulk verbs through ``RemoteFilesystem``: ``readlink`` and ``entries``, which
answer as the in-process workspace does (links read, never followed; listings in pages)."""

from __future__ import annotations

import os
from pathlib import Path

from support.daemon import Daemons
from workspacefs import connect
from workspacefs.fs import MAX_ENTRIES, tree_key


def test_links_and_pages_of_entries(daemons: Daemons) -> None:
    record = daemons.start()
    mountpoint = Path(record.mountpoint)
    for number in range(25):
        (mountpoint / f"d{number % 3}").mkdir(exist_ok=True)
        (mountpoint / f"d{number % 3}" / f"f{number:02d}").write_text("x" * number)
    os.symlink("/usr/bin/python3", mountpoint / "python")
    os.symlink("d0", mountpoint / "d0link")
    with connect(record.socket) as fs:
        snapshot = fs.snapshot(tag="s")
        (mountpoint / "python").unlink()
        assert fs.readlink("d0link") == "d0"
        assert fs.at(snapshot).readlink("python") == "/usr/bin/python3"
        whole = fs.at(snapshot).entries()
        assert len(whole) == 25 + 3 + 2
        assert {(e.path, e.kind, e.target) for e in whole if e.kind == "symlink"} == {
            ("d0link", "symlink", "d0"),
            ("python", "symlink", "/usr/bin/python3"),
        }
        assert next(e for e in whole if e.path == "d1/f01").size == 1
        pages = []
        after = ""
        while page := fs.at(snapshot).entries(after=after, limit=4):
            pages += page
            after = tree_key(page[-1])
        assert pages == whole
        top = fs.entries(recursive=False, limit=MAX_ENTRIES)
        assert [e.path for e in top] == ["d0", "d0link", "d1", "d2"]
