"""How a daemon is asked to start, and the checks of what is asked that run before any
process starts (shared by the starter and the daemon itself)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import InvalidArgumentError
from ..store import DEFAULT_INTERVAL

if TYPE_CHECKING:
    from ..git import LoadLimits

START_TIMEOUT = 120.0
"""Seconds to wait for a daemon to mount (loading a big source takes a while)."""


@dataclass(frozen=True, slots=True)
class DaemonOptions:
    """How to start a workspace daemon.

    Args:
        mountpoint: An existing empty directory.
        source: ``--from``: a directory, ZIP archive or ``REPO.git[#REF]``.
        repository: Where ``persist`` writes (default: the repository the
            workspace came from, else the user's default for its id).
        read_only: Serve the workspace read-only (mount and API).
        allow_other: Let other users and containers into the mount.
        latency_hint: Keep idle CPUs quick to wake while the mount serves
            (``mount(latency_hint=...)``; root only).
        load_limits: ``NAME=N`` settings of ``git.LoadLimits`` for a git source.
        special_modes: Keep the setuid, setgid and sticky bits and the device
            nodes a git source records (``git.load(special_modes=True)``), and the
            bits an archive records (``archive.import_archive(special_modes=True)``).
        blame_full_commands: Blame keeps writers' full command lines, secrets
            included (``InMemoryFilesystem(blame_full_commands=True)``).
        name: The workspace's name: its store is ``store.store_of(name)``, resumed
            if it holds a workspace (None: a new name, unless ``store`` is given).
        store: The store directory, if not the named one.
        durability: ``interval``, ``always`` (``store.Durability``) or ``none``:
            no store, the workspace lives in the daemon's memory only.
        interval: Seconds a change may wait for the disk under ``interval``.
        rules: Access rules to declare on the workspace before it is mounted, beside
            those its store kept (``mount --protect/--hide/--quota``): each ``Rule``
            as its JSON object (``fs.to_json``), read by the daemon, so that every
            command (which loads these options) need not load the rules' layer.
        memory_budget: The most bytes the workspace's file data may hold in memory
            (``InMemoryFilesystem(memory_budget=...)``; None: the default). With a
            store it is a cache target (docs/memory.md).
    """

    mountpoint: str
    source: str | None = None
    repository: str | None = None
    read_only: bool = False
    allow_other: bool = True
    latency_hint: bool = True
    load_limits: tuple[str, ...] = ()
    special_modes: bool = False
    blame_full_commands: bool = False
    name: str | None = None
    store: str | None = None
    durability: str = "interval"
    interval: float = DEFAULT_INTERVAL
    rules: tuple[dict[str, Any], ...] = ()
    memory_budget: int | None = None


POLICIES = ("interval", "always", "none")
"""``--durability`` values: the store's policies, and no store."""


def check_durability(options: DaemonOptions) -> None:
    """Refuse a policy, name or interval that cannot work, before a daemon starts.

    Raises:
        InvalidArgumentError: Which one, and why.
    """
    if options.durability not in POLICIES:
        raise InvalidArgumentError(f"--durability takes {', '.join(POLICIES)}", options.durability)
    if options.name is not None:
        from ..store import check_name  # the store's names: its journal's records

        check_name(options.name)
    if options.durability == "none" and (options.name or options.store):
        raise InvalidArgumentError(
            "--durability none keeps no store: a named workspace or --store needs "
            "interval or always",
            options.name or options.store,
        )
    if not options.interval > 0:
        raise InvalidArgumentError("--interval must be a positive number of seconds", None)
    if options.memory_budget is not None and options.memory_budget < 0:
        raise InvalidArgumentError("--memory-budget cannot be negative", None)


def parse_load_limits(settings: Iterable[str]) -> LoadLimits:
    """``git.LoadLimits`` with the ``NAME=N`` ``settings`` (``--load-limit``).

    Raises:
        InvalidArgumentError: A setting names no limit or its value is no count.
    """
    from ..git import DEFAULT_LOAD_LIMITS, LoadLimits  # the limits alone: no git loaded

    known = [field.name for field in dataclasses.fields(LoadLimits)]
    changes: dict[str, int] = {}
    for setting in settings:
        name, sep, value = setting.partition("=")
        if not sep or name not in known:
            raise InvalidArgumentError(
                f"--load-limit takes NAME=N, NAME one of {', '.join(known)}", setting
            )
        try:
            changes[name] = int(value.replace("_", ""))
        except ValueError:
            raise InvalidArgumentError("--load-limit: the value is not a count", setting) from None
        if changes[name] < 0:
            raise InvalidArgumentError("--load-limit: the value is negative", setting)
    return dataclasses.replace(DEFAULT_LOAD_LIMITS, **changes)
