"""The daemon's store: where its workspace is kept, made new or resumed.

A daemon serves a *named* workspace: its store (``store.store_of(name)``, or
``--store``) holds the journal of the live tree and its snapshots, so the
workspace outlives the daemon. A store that holds a workspace is resumed, at any
mount point; one that holds none starts from ``--from``. ``--durability none``
keeps no store: the workspace lives in the daemon's memory only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import git
from ..fs import InMemoryFilesystem
from ..store import Durability, DurableWorkspace, Recovery, new_name, open_workspace
from ..store import store_of as named_store
from ._options import DaemonOptions, check_durability

log = logging.getLogger(__name__)


def _with_budget(
    load: Callable[[], InMemoryFilesystem], budget: int
) -> Callable[[], InMemoryFilesystem]:
    """``load``, its workspace given ``budget`` once loaded (what it loads is lazy from
    git, or must fit the default budget)."""

    def loaded() -> InMemoryFilesystem:
        fs = load()
        fs.memory_budget = budget
        return fs

    return loaded


@dataclass(frozen=True, slots=True)
class Kept:
    """A workspace and where it is kept."""

    fs: InMemoryFilesystem
    durable: DurableWorkspace | None
    recovery: Recovery | None
    name: str | None
    store: str | None


def open_kept(
    options: DaemonOptions,
    mountpoint: str,
    load: Callable[[], InMemoryFilesystem] | None,
    base: str | None,
) -> Kept:
    """The daemon's workspace: resumed from its store, or made by ``load`` (None:
    empty) and kept there from now on; or, under ``none``, just made.

    Args:
        load: What a new workspace starts from (``--from``); refused if the store
            holds a workspace already.
        base: The git repository ``load`` loads from, if it does.

    Raises:
        AlreadyExistsError: ``load`` was given and the store holds a workspace.
        BusyError: Another daemon serves the store.
    """
    check_durability(options)
    budget = options.memory_budget
    if budget is not None and load is not None:
        load = _with_budget(load, budget)
    if options.durability == "none":
        fs = load() if load is not None else InMemoryFilesystem(mount_point=mountpoint)
        if budget is not None:
            fs.memory_budget = budget
        return Kept(fs, None, None, None, None)
    git.sync_writes()  # persist is a durability point too
    name = options.name
    if name is None and options.store is None:
        name = new_name(os.path.basename(mountpoint))
    store = options.store or os.fspath(named_store(name or ""))
    os.makedirs(os.path.dirname(store), mode=0o700, exist_ok=True)
    options_of_fs: dict[str, Any] = {"mount_point": mountpoint}
    if budget is not None:
        options_of_fs["memory_budget"] = budget
    durable, recovery = open_workspace(
        store,
        durability=Durability(options.durability),
        interval=options.interval,
        initial=load,
        base=base,
        **options_of_fs,
    )
    if recovery.records:
        log.info(
            "resumed %s: %d records, %d snapshots%s",
            store,
            recovery.records,
            recovery.snapshots,
            "" if recovery.damage is None else f"; stopped early: {recovery.damage.reason}",
        )
    return Kept(durable.fs, durable, recovery, name, store)
