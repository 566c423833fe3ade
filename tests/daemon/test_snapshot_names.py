"""The command line and the agent tools name snapshots alike: the same tag, id or id
prefix finds the same snapshot through both, and what names nothing fails in both.

One daemon's workspace, reached by ``workspacefs restore`` in a subprocess and by
the ``restore`` tool handler on the daemon's client.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from support.daemon import Daemons, cli
from workspacefs.daemon import connect
from workspacefs.fs import FilesystemSnapshot
from workspacefs.tools import ToolContext, filesystem_tools

MAX_SNAPSHOTS = 5_000
"""Two of this many random ids share their first 4 characters all but surely (the
chance that none do is below e^-190); about 300 are needed on average."""


def _collision(taken: list[FilesystemSnapshot], take: Callable[[], FilesystemSnapshot]) -> str:
    """Snapshots taken until two ids share their first 4 characters; that prefix."""
    seen = {str(record.snapshot_id)[:4] for record in taken}
    while len(taken) < MAX_SNAPSHOTS:
        record = take()
        taken.append(record)
        prefix = str(record.snapshot_id)[:4]
        if prefix in seen:
            return prefix
        seen.add(prefix)
    raise AssertionError("no two ids share a prefix")


def test_the_cli_and_the_tools_resolve_names_alike(daemons: Daemons) -> None:
    record = daemons.start()
    mountpoint = Path(record.mountpoint)
    with connect(record.socket) as fs:
        older = fs.snapshot(tag="first")
        newer = fs.snapshot(tag="first")  # the CLI lets a tag name two: the newest wins
        plain = fs.snapshot()
        # A tag that reads as another snapshot's id prefix: the tag comes first.
        hidden = str(plain.snapshot_id)[:8]
        tagged = fs.snapshot(tag=hidden)
        taken = [older, newer, plain, tagged]
        shared = _collision(taken, fs.snapshot)
        assert {r.snapshot_id for r in taken} <= {r.snapshot_id for r in fs.snapshots()}
        full = str(older.snapshot_id)
        found = {
            "first": newer.snapshot_id,
            full: older.snapshot_id,
            f"  {str(plain.snapshot_id)[:6].upper()} ": plain.snapshot_id,
            hidden: tagged.snapshot_id,
        }
        refused = {
            "no-such-tag": "no snapshot has this tag or id",
            full[:3]: "no snapshot has this tag or id",  # shorter than any prefix accepted
            shared: "id prefix matches 2 snapshots",
        }
        tools = filesystem_tools(fs)
        context = ToolContext(filesystem=fs)

        def tool(name: str) -> tuple[bool, object]:
            result = tools.call("restore", {"id_or_tag": name}, context=context)
            value = result.value
            return result.success, (
                value.snapshot_id if isinstance(value, FilesystemSnapshot) else result.message
            )

        for name, expected in found.items():
            command = cli("restore", str(mountpoint), name, "--json")
            assert command.returncode == 0, (name, command.stderr)
            assert json.loads(command.stdout)["snapshot_id"] == str(expected), name
            assert tool(name) == (True, expected), name
        for name, message in refused.items():
            command = cli("restore", str(mountpoint), name)
            assert (command.returncode, command.stdout) == (1, ""), name
            assert command.stderr == f"workspacefs: error: {message}: {name}\n"
            # The tools word every unknown snapshot one way for the model.
            assert tool(name) == (False, f"Cannot restore snapshot `{name}`: no such snapshot.")
