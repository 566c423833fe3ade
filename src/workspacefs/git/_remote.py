"""Listing, pruning and moving persisted snapshots between repositories."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pygit2

from .._errors import BackendUnavailableError
from ..fs import (
    FilesystemSnapshot,
    RefRefused,
    RefWritten,
    SnapshotRetentionPolicy,
    TransferResult,
)
from ._load import snapshot_record
from ._refs import PREFIX, RefNamespace
from ._repo import open_repository
from ._transfer import inspector, plan


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
    """The refs of one workspace, or of all (ends with ``/``)."""
    return (RefNamespace.for_workspace(workspace).base if workspace else PREFIX) + "/"


def _advertised(remote: pygit2.Remote, scope: str) -> dict[str, pygit2.Oid]:
    """The refs under ``scope`` that ``remote`` offers (peeled entries and symbolic
    refs left out: workspacefs writes neither)."""
    found = {}
    for head in remote.list_heads():
        name = head.name or ""
        if name.startswith(scope) and not name.endswith("^{}") and not head.symref_target:
            found[name] = head.oid
    return found


def _held(repository: pygit2.Repository, scope: str) -> dict[str, pygit2.Oid]:
    """The direct refs under ``scope`` that ``repository`` holds."""
    found = {}
    for name in repository.references:
        if name.startswith(scope):
            target = repository.references[name].target
            if isinstance(target, pygit2.Oid):
                found[name] = target
    return found


def push(repo: str | os.PathLike[str], url: str, *, workspace: str | None = None) -> TransferResult:
    """Push snapshot refs (one workspace's, or all) to any git remote, replacing none
    of the remote's: a snapshot whose number the remote uses gets the next free
    number there, a tag or other ref the remote holds stays as it is (``_transfer``).

    Raises:
        BackendUnavailableError: The remote cannot be reached or refused the push
            (e.g. another push took a name meanwhile).
    """
    repository = open_repository(repo)
    scope = _scope(workspace)
    try:
        remote = repository.remotes.create_anonymous(url)
        decided = plan(_held(repository, scope), _advertised(remote, scope), inspector(repository))
        if decided.writes:
            # No ``+``: should the remote have taken a name since it was listed, git
            # refuses to replace it.
            remote.push([f"{write.source}:{write.name}" for write in decided.writes])
    except pygit2.GitError as exc:
        raise BackendUnavailableError(f"push to {url} failed: {exc}", url) from exc
    return TransferResult(url, decided.writes, decided.refused, decided.unchanged)


def fetch(
    repo: str | os.PathLike[str], url: str, *, workspace: str | None = None
) -> TransferResult:
    """Fetch snapshot refs (one workspace's, or all) from a git remote into ``repo``,
    replacing none of ``repo``'s: a snapshot whose number ``repo`` uses gets the
    next free number, a tag or other ref ``repo`` holds stays as it is, and what is
    not whole (a snapshot without its metadata, a tag naming no snapshot taken) is
    not taken (``_transfer``). The result says what went where and what was refused.

    Raises:
        BackendUnavailableError: The remote cannot be reached.
    """
    repository = open_repository(repo, create=True)
    scope = _scope(workspace)
    try:
        remote = repository.remotes.create_anonymous(url)
        sending = _advertised(remote, scope)
        wanted = sorted(name for name, oid in sending.items() if oid not in repository.odb)
        if wanted:
            remote.fetch(wanted)  # refspecs without a destination: objects only, no ref
    except pygit2.GitError as exc:
        raise BackendUnavailableError(f"fetch from {url} failed: {exc}", url) from exc
    decided = plan(sending, _held(repository, scope), inspector(repository))
    written: list[RefWritten] = []
    refused = list(decided.refused)
    for write in decided.writes:
        try:
            repository.references.create(write.name, write.commit, force=False)
        except (pygit2.GitError, ValueError) as exc:  # taken meanwhile, or a clashing name
            refused.append(RefRefused(write.source, write.commit, f"not taken: {exc}"))
        else:
            written.append(write)
    return TransferResult(url, tuple(written), tuple(refused), decided.unchanged)
