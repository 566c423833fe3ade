"""mount, unmount, list, status."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._errors import MountedInsideError
from ..daemon import START_TIMEOUT
from ..store import DEFAULT_INTERVAL
from ._app import JsonOption, app, split_mountpoint, workspace
from ._forks import unmount_bound_fork
from ._output import connection_line, emit_json, say, size, stdout, working
from ._rules import HideOption, ProtectOption, QuotaOption, rules_from_options
from ._snapshots import size_option

if TYPE_CHECKING:
    from ..daemon import MountRecord
    from ..store import StoreInfo

MountArgs = Annotated[
    list[str] | None,
    typer.Argument(metavar="[MOUNTPOINT]", help="Default: the one holding the current directory."),
]


@app.command(
    epilog="Examples: workspacefs mount ./ws --name api --from ./src; after a crash or an "
    "unmount, workspacefs mount ./ws --name api resumes it"
)
def mount(
    mountpoint: Annotated[str, typer.Argument(help="An existing empty directory.")],
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="The workspace's name; a stopped workspace of that name is resumed "
            "(default: a new name).",
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option("--store", metavar="DIR", help="Keep the workspace in DIR instead."),
    ] = None,
    durability: Annotated[
        str,
        typer.Option(
            "--durability",
            metavar="POLICY",
            help="interval: on disk within --interval and at every fsync and snapshot; "
            "always: before each change returns; none: in memory only.",
        ),
    ] = "interval",
    interval: Annotated[
        float,
        typer.Option("--interval", metavar="SECONDS", help="The loss window of interval."),
    ] = DEFAULT_INTERVAL,
    source: Annotated[
        str | None,
        typer.Option("--from", help="Start from DIR, FILE.zip, REPO.git or REPO.git#REF."),
    ] = None,
    persist: Annotated[
        str | None, typer.Option("--persist", metavar="REPO", help="Git repository for persist.")
    ] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="Refuse every write.")] = False,
    memory_budget: Annotated[
        str | None,
        typer.Option(
            "--memory-budget",
            metavar="SIZE",
            help="The most file data held in memory (e.g. 512M; default: half of what the "
            "daemon may allocate). With a store it is a cache: data on disk leaves memory "
            "to make room; with --durability none, writes past it fail.",
        ),
    ] = None,
    foreground: Annotated[
        bool, typer.Option("--foreground", help="Serve in this process until Ctrl-C.")
    ] = False,
    private: Annotated[
        bool, typer.Option("--private", help="No allow_other: only you (no containers) get in.")
    ] = False,
    no_latency_hint: Annotated[
        bool,
        typer.Option(
            "--no-latency-hint",
            help="Let idle CPUs sleep while the mount serves (slower requests, no polling).",
        ),
    ] = False,
    load_limits: Annotated[
        list[str] | None,
        typer.Option(
            "--load-limit",
            metavar="NAME=N",
            help="Raise a limit of loading REPO.git (max_entries, max_total_bytes, "
            "max_record_bytes); repeatable.",
        ),
    ] = None,
    special_modes: Annotated[
        bool,
        typer.Option(
            "--special-modes",
            help="Keep the setuid/setgid/sticky bits (and device nodes) REPO.git or "
            "FILE.zip records.",
        ),
    ] = False,
    blame_full_commands: Annotated[
        bool,
        typer.Option(
            "--blame-full-commands",
            help="Blame keeps writers' full command lines, secrets included (default: "
            "passwords, tokens and keys masked).",
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            min=0.1,
            help="Give up if it does not serve by then, stopping the daemon (default: 120).",
        ),
    ] = START_TIMEOUT,
    protect: ProtectOption = None,
    hide: HideOption = None,
    quota: QuotaOption = None,
    as_json: JsonOption = False,
) -> None:
    """Start a daemon serving a workspace at MOUNTPOINT; return once it is mounted.

    The workspace is kept in its store (see --durability): it outlives the daemon,
    and mounting its name again resumes it. A start that fails or takes longer than
    --timeout stops its daemon and leaves nothing mounted.

    --protect, --hide and --quota declare access rules before the mount serves
    (see ``workspacefs rules``); a resumed workspace keeps those it had."""
    from ..daemon import start

    rules = rules_from_options(protect, hide, quota)

    budget = None if memory_budget is None else size_option(memory_budget, "--memory-budget")
    if foreground:
        # The server's side (trio, pyfuse3, pygit2: 0.4 s) only here: a mount in the
        # background is served by a new process, which loads it itself.
        from ..daemon import DaemonOptions, parse_source, run_daemon
        from ..fs import to_json

        parse_source(source)  # a bad --from fails here with its own message

        def ready(message: dict[str, Any]) -> None:
            if not message.get("ok"):
                return  # run_daemon's failure is raised below as one line
            if as_json:
                print(json.dumps(message["record"]), flush=True)
            else:
                say(f"Mounted {message['record']['mountpoint']}; Ctrl-C unmounts")

        options = DaemonOptions(
            mountpoint,
            source,
            persist,
            read_only,
            allow_other=not private,
            latency_hint=not no_latency_hint,
            load_limits=tuple(load_limits or ()),
            special_modes=special_modes,
            blame_full_commands=blame_full_commands,
            name=name,
            store=store and os.path.abspath(store),
            durability=durability,
            interval=interval,
            rules=tuple(to_json(rule) for rule in rules),
            memory_budget=budget,
        )
        raise typer.Exit(run_daemon(options, ready))
    with working(f"mounting {mountpoint}", quiet=as_json):
        record = start(
            mountpoint,
            source=source,
            repository=persist,
            read_only=read_only,
            allow_other=not private,
            latency_hint=not no_latency_hint,
            timeout=timeout,
            load_limits=load_limits or (),
            special_modes=special_modes,
            blame_full_commands=blame_full_commands,
            name=name,
            store=store,
            durability=durability,
            interval=interval,
            rules=rules,
            memory_budget=budget,
        )
    if as_json:
        emit_json(record.to_dict())
        return
    mode = " (read-only)" if record.read_only else ""
    say(f"Mounted {record.mountpoint}{mode}: daemon pid {record.pid}")
    if record.name is not None:
        say(f"  name       {record.name}")
    say(f"  kept       {kept_line(record.store, record.durability, interval)}")
    say(f"  socket     {record.socket}")
    say(f"  workspace  {record.workspace_id}")
    say(f"  persist to {record.repository}")


def kept_line(store: str | None, durability: str, interval: float | None) -> str:
    """Where and how a workspace is kept, for people."""
    if store is None:
        return "in memory only (--durability none): gone when unmounted"
    window = f" {interval:g} s" if durability == "interval" and interval else ""
    return f"{store} ({durability}{window})"


@app.command(epilog="Example: workspacefs unmount ./ws   (or: unmount --recursive ./ws)")
def unmount(
    args: MountArgs = None,
    recursive: Annotated[
        bool,
        typer.Option(
            "--recursive",
            "-r",
            help="First unmount the workspaces mounted inside, innermost first.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Stop the workspace's daemon and remove its mount. A named workspace is kept,
    stopped: ``mount DIR --name NAME`` resumes it (one kept in memory only is gone).

    Refused (exit 5, nothing unmounted) while something is mounted inside it:
    unmounting it would take that along. ``--recursive`` unmounts the
    workspaces inside through their own daemons first.

    On a directory a fork is bound to (``fork MOUNTPOINT``), unbind it and drop the fork.
    """
    from ..daemon import connect

    point, _ = split_mountpoint(args or [], 0, 0)
    if point is not None and (dropped := unmount_bound_fork(point)) is not None:
        name, points = dropped
        if as_json:
            emit_json({"dropped": name, "unbound": points})
        else:
            say(f"Dropped fork {name}; unbound {', '.join(points)}")
        return
    fs = workspace(point)
    mountpoint, pid = fs.mountpoint, fs.pid
    kept = fs.info()
    inner = _inner_workspaces(mountpoint) if recursive else []
    with working(f"unmounting {mountpoint}", quiet=as_json):
        for record in inner:
            with connect(record.socket) as inner_fs:
                inner_fs.unmount()
            if not as_json:
                say(f"Unmounted {record.mountpoint}")
        try:
            fs.unmount()
        except MountedInsideError as exc:
            hint = "" if recursive else "; --recursive unmounts the workspaces among them first"
            raise MountedInsideError(f"{exc.strerror}{hint}", exc.filename) from None
    if as_json:
        emit_json(
            {
                "mountpoint": mountpoint,
                "pid": pid,
                "unmounted": True,
                "inner": [{"mountpoint": r.mountpoint, "pid": r.pid} for r in inner],
                "name": kept.get("name"),
                "store": kept.get("store"),
            }
        )
        return
    say(f"Unmounted {mountpoint}")
    if kept.get("name"):
        say(f"Kept {kept['name']}: workspacefs mount DIR --name {kept['name']} resumes it")
    elif kept.get("store"):
        say(f"Kept in {kept['store']}: workspacefs mount DIR --store ... resumes it")


def _inner_workspaces(mountpoint: str) -> list[MountRecord]:
    """The running workspaces mounted inside ``mountpoint``, innermost first.

    Raises:
        MountedInsideError: Something else is mounted inside (a stale mount, a
            bind, another filesystem): ``--recursive`` unmounts only workspaces,
            so nothing is unmounted.
    """
    from ..daemon import running_mounts
    from ..fuse import mounts_inside

    running = {record.mountpoint: record for record in running_mounts()}
    inside = mounts_inside(mountpoint)
    others = [point for point in inside if point not in running]
    if others:
        raise MountedInsideError(
            f"not unmounted: {', '.join(others)} mounted inside "
            f"{'is' if len(others) == 1 else 'are'} no running workspace "
            "(a stale one: workspacefs doctor --fix); unmount that first",
            mountpoint,
        )
    return [running[point] for point in inside]


AllOption = Annotated[
    bool, typer.Option("--all", "-a", help="Also the stopped workspaces kept in their stores.")
]


@app.command(name="list", epilog="Example: workspacefs list --all")
def list_(show_all: AllOption = False, as_json: JsonOption = False) -> None:
    """List this user's workspaces: those running, and those whose daemon died
    (killed: its mount is left stale until ``doctor --fix``); with --all, the named
    workspaces that are stopped too."""
    from ..daemon import known_mounts

    known = sorted(known_mounts(), key=lambda k: k.record.mountpoint)
    stale = _stale({k.record.mountpoint for k in known if not k.alive})
    served = {k.record.store for k in known if k.alive and k.record.store}
    stopped = _stopped(served) if show_all else []
    if as_json:
        emit_json(
            [
                {**k.record.to_dict(), "alive": k.alive, "stale": k.record.mountpoint in stale}
                for k in known
            ]
            + [
                {
                    "name": info.name,
                    "store": info.path,
                    "alive": False,
                    "files": info.files,
                    "bytes": info.workspace_bytes,
                    "disk_bytes": info.disk_bytes,
                    "journal_bytes": info.journal_bytes,
                    "last_change": _iso(info.last_change),
                    "pid": info.pid,
                }
                for info in stopped
            ]
        )
        return
    if not known and not stopped:
        say("No workspace is mounted." + ("" if show_all else " (--all: stopped ones)"))
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("NAME", "MOUNTPOINT", "PID", "STARTED", "MODE", "STATE"):
        table.add_column(column)
    for k in known:
        r = k.record
        mode = "ro" if r.read_only else "rw"
        state = "running" if k.alive else "dead, mount stale" if r.mountpoint in stale else "dead"
        table.add_row(r.name or "-", r.mountpoint, str(r.pid), r.started_at, mode, state)
    for info in stopped:
        held = "" if info.files is None else f"{info.files:,} files, "
        held += "" if info.workspace_bytes is None else f"{size(info.workspace_bytes)}; "
        state = (
            f"stopped: {held}{size(info.disk_bytes)} on disk, last change "
            f"{_iso(info.last_change) or 'never'}"
        )
        table.add_row(info.name, "-", "-", "-", "-", state)
    stdout.print(table)
    if not all(k.alive for k in known):
        say(
            "A daemon is dead: workspacefs doctor --fix detaches its stale mount and removes "
            "its files (a named workspace stays kept: doctor says how to resume it)."
        )


def _stale(dead: set[str]) -> set[str]:
    """The mount points of ``dead`` that are stale mounts (dead daemons' only: the FUSE
    layer is loaded for them alone)."""
    if not dead:
        return set()
    from ..fuse import is_stale

    return {point for point in dead if is_stale(point)}


def _stopped(served: set[str]) -> list[StoreInfo]:
    """The named workspaces kept in their stores and served by no running daemon."""
    from ..store import named_stores

    return [info for info in named_stores() if info.path not in served]


@app.command(epilog="Example: workspacefs discard old-experiment")
def discard(
    name: Annotated[str, typer.Argument(help="A stopped workspace (workspacefs list --all).")],
    as_json: JsonOption = False,
) -> None:
    """Delete a stopped named workspace: its store, journal, snapshots and all."""
    from ..store import discard as discard_store

    info = discard_store(name)
    if as_json:
        emit_json({"discarded": info.name, "store": info.path, "journal_bytes": info.journal_bytes})
        return
    say(f"Discarded {info.name} ({info.path}, {size(info.journal_bytes)} journal)")


def _iso(seconds: float | None) -> str | None:
    from datetime import UTC, datetime

    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def journal_line(journal: dict[str, Any] | None) -> str:
    """Where a store's journal stands, for people."""
    if not journal:
        return "-"
    line = f"on disk through record {journal['durable_through']}"
    if journal.get("synced_at"):
        line += f", last synced {journal['synced_at']}"
    if journal.get("resumed_records"):
        line += f"; resumed {journal['resumed_records']} records"
    damage = journal.get("damage")
    if damage:
        line += f"; resuming stopped at offset {damage['offset']}: {damage['reason']}"
    return line


def requests_line(requests: dict[str, Any] | None) -> str:
    """The mount's kernel requests for people: the total, the most frequent types, time."""
    from ..fuse import RequestStats

    if not requests:
        return "-"
    counts = RequestStats(counts=requests["counts"]).summary()
    mode = "open-free" if requests["open_free"] else "opens with requests"
    if requests.get("latency_hint"):
        mode += ", CPU latency hint"
    return f"{counts}; {requests['handler_seconds']:.2f} s in handlers; {mode}"


def budget_line(facts: dict[str, Any]) -> str:
    """The memory budget and what file data holds: in memory (of it, evictable: the
    store holds it too) and on disk only."""
    line = f"{size(facts['memory_budget'])} ({size(facts['memory_held'])} held"
    if facts.get("memory_evictable") or facts.get("memory_on_disk"):
        line += f", {size(facts.get('memory_evictable') or 0)} of it evictable"
        line += f"; {size(facts.get('memory_on_disk') or 0)} on disk only"
    return line + ")"


def hydration_line(facts: dict[str, Any]) -> str:
    """Where the background listing of a large snapshot loaded from git stands."""
    line = f"{facts['state']}: {facts['listed_entries']:,} entries listed"
    if facts["unlisted"]:
        line += f", {facts['unlisted']:,} directories not yet"
    line += f"; {facts['hydrated_files']:,} files read"
    if facts.get("budget_full"):
        line += " (half the budget: the rest is read when used)"
    return line + (f"; {facts['error']}" if facts.get("error") else "")


@app.command(epilog="Example: workspacefs status ./ws")
def status(args: MountArgs = None, as_json: JsonOption = False) -> None:
    """Show the daemon and the workspace: pid, socket, files, bytes, memory, snapshots,
    forks, and the kernel requests the mount has served."""
    point, _ = split_mountpoint(args or [], 0, 0)
    with workspace(point) as fs:
        facts = fs.status()
    if as_json:
        emit_json(facts)
        return
    rows = [
        ("mountpoint", facts["mountpoint"] + (" (read-only)" if facts["read_only"] else "")),
        ("daemon pid", str(facts["pid"])),
        ("socket", facts["socket"]),
        ("workspace", facts["workspace_id"]),
        ("files", f"{facts['files']:,}"),
        ("bytes", size(facts["bytes"])),
        ("memory", size(facts["memory_bytes"])),
        ("budget", budget_line(facts)),
        ("snapshots", f"{facts['snapshots']} (current: {facts['current_snapshot'] or '-'})"),
        ("forks", f"{facts.get('forks', 0)} (workspacefs forks)"),
        ("requests", requests_line(facts.get("requests"))),
        ("fuse", connection_line(facts.get("fuse"))),
        ("name", facts.get("name") or "-"),
        ("kept", kept_line(facts.get("store"), facts["durability"], facts.get("interval"))),
        ("journal", journal_line(facts.get("journal"))),
        *([("hydration", hydration_line(facts["hydration"]))] if facts.get("hydration") else []),
        ("persist to", facts["repository"]),
        ("started", facts["started_at"]),
        ("log", facts["log"]),
    ]
    for key, value in rows:
        say(f"{key:<11} {value}")
