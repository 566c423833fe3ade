"""Listing, pruning and moving persisted snapshots between repositories."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pygit2

from .._errors import BackendUnavailableError
from ..fs import FilesystemSnapshot, SnapshotRetentionPolicy
from ._load import snapshot_record
from ._refs import PREFIX, RefNamespace
from ._repo import open_repository


@dataclass(frozen=True, slots=True)
class StoredSnapshot:
    """A snapshot persisted in a repository."""

    number: int
    ref: str
    commit: str
    record: FilesystemSnapshot


def list_snapshots(repo: str | os.PathLike[str], workspace: str) -> Sequence[StoredSnapshot]:
    """The persisted snapshots of ``workspace``, oldest first."""
    repository = open_repository(repo)
    git_dir = os.path.realpath(repository.path)
    refs = RefNamespace.for_workspace(workspace)
    found = []
    for number in refs.numbers(repository):
        ref = refs.snapshot(number)
        commit = repository.references[ref].peel(pygit2.Commit)
        found.append(StoredSnapshot(number, ref, str(commit.id), snapshot_record(commit, git_dir)))
    return found


def prune(
    repo: str | os.PathLike[str],
    workspace: str,
    policy: SnapshotRetentionPolicy,
    *,
    now: datetime | None = None,
) -> Sequence[StoredSnapshot]:
    """Delete the refs of snapshots ``policy`` expires; their objects become gc-able."""
    repository = open_repository(repo)
    stored = list_snapshots(repo, workspace)
    by_id = {item.record.snapshot_id: item for item in stored}
    doomed = [by_id[r.snapshot_id] for r in policy.expired([s.record for s in stored], now)]
    refs = RefNamespace.for_workspace(workspace)
    for item in doomed:
        for name in (refs.meta(item.number), item.ref):
            if name in repository.references:
                repository.references.delete(name)
        tag = item.record.tag
        name = refs.tag(tag) if tag else ""
        if name in repository.references and str(repository.references[name].target) == item.commit:
            repository.references.delete(name)
    return doomed


def _scope(workspace: str | None) -> str:
    """The refs of one workspace, or of all."""
    return RefNamespace.for_workspace(workspace).base if workspace else PREFIX


def _refspec(workspace: str | None) -> str:
    scope = _scope(workspace)
    return f"+{scope}/*:{scope}/*"


def push(repo: str | os.PathLike[str], url: str, *, workspace: str | None = None) -> None:
    """Push snapshot refs (one workspace's, or all) to any git remote."""
    repository = open_repository(repo)
    try:
        remote = repository.remotes.create_anonymous(url)
        names = [n for n in repository.references if n.startswith(_scope(workspace) + "/")]
        remote.push([f"+{name}:{name}" for name in names])
    except pygit2.GitError as exc:
        raise BackendUnavailableError(f"push to {url} failed: {exc}", url) from exc


def fetch(repo: str | os.PathLike[str], url: str, *, workspace: str | None = None) -> None:
    """Fetch snapshot refs (one workspace's, or all) from a git remote into ``repo``."""
    repository = open_repository(repo, create=True)
    try:
        remote = repository.remotes.create_anonymous(url)
        remote.fetch([_refspec(workspace)])
    except pygit2.GitError as exc:
        raise BackendUnavailableError(f"fetch from {url} failed: {exc}", url) from exc
