"""What the commands print of a workspace's own text (tags, paths, names) prints as it is.

A tag may hold ``:`` (the tool calls' ``undo:<tool>:<call id>`` do), so ``fix:bug:`` and
``undo:shell:c1`` are tags; a directory may be called ``[draft]``. Printed through rich's
defaults, the first became ``fix🐛`` and a bracketed word was read as a style.
"""

from __future__ import annotations

from pathlib import Path

from support.daemon import Daemons, cli_ok
from workspacefs.daemon import connect


def test_tags_and_paths_print_verbatim(daemons: Daemons) -> None:
    record = daemons.start("[draft]")
    point = record.mountpoint
    with connect(record.socket) as fs:
        fs.write("a.txt", "one\n")
        fs.snapshot(tag="undo:shell:c1")
    assert "(fix:bug:)" in cli_ok("snapshot", point, "--tag", "fix:bug:")
    log = cli_ok("log", point)
    assert "fix:bug:" in log
    assert "undo:shell:c1" in log
    assert cli_ok("restore", point, "undo:shell:c1").endswith("(undo:shell:c1)\n")
    assert f"mountpoint  {point}\n" in cli_ok("status", point)
    assert point in cli_ok("list")
    assert Path(point).name == "[draft]"
