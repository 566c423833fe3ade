"""Session checkpoints: a session's state and its filesystems, snapshotted under one id.

Framework-neutral: a session is anything with ``snapshot_state()`` returning
JSON-serialisable state and ``rollback_state(state)``. ``JsonSession`` is a
small concrete one for users without a framework.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from .._errors import InvalidArgumentError, InvalidContentError, SnapshotNotFoundError
from ..posix import make_private_directory, write_private_file
from ._backends import ArchiveBackend, export_archive, restore_own_archive
from ._snapshots import ArchiveSnapshots, checked_id

JsonState = dict[str, Any]


class Session(Protocol):
    """Anything whose state can be captured as JSON and put back."""

    def snapshot_state(self) -> JsonState: ...

    def rollback_state(self, state: JsonState) -> None: ...


class JsonSession:
    """A session holding a JSON object, e.g. an agent's messages and notes."""

    def __init__(self, state: JsonState | None = None) -> None:
        self.state: JsonState = copy.deepcopy(state) if state else {}

    def snapshot_state(self) -> JsonState:
        _check_json(self.state)
        return copy.deepcopy(self.state)

    def rollback_state(self, state: JsonState) -> None:
        self.state = copy.deepcopy(state)


def _check_json(state: object) -> None:
    try:
        json.dumps(state)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"session state is not JSON-serialisable: {exc}", None) from None


@dataclass(frozen=True, slots=True)
class FilesystemSnapshotRef:
    """Which snapshot of which filesystem goes with a session checkpoint."""

    filesystem_key: str
    snapshot_id: str
    backend_type: str


class SessionCheckpoints:
    """Checkpoint and roll back a session together with its filesystems.

    Archives go to ``<directory>/<filesystem key>/<id>.zip`` and the session
    state to ``<directory>/<id>.session.json``: 0600 files, in directories
    made 0700 (they hold every file and the whole state).
    """

    def __init__(
        self,
        session: Session,
        filesystems: Mapping[str, ArchiveBackend],
        directory: str | os.PathLike[str],
    ) -> None:
        self._session = session
        self._dir = Path(directory)
        make_private_directory(self._dir)
        self._managers = {
            checked_id(key, "filesystem key"): ArchiveSnapshots(fs, self._dir / key)
            for key, fs in filesystems.items()
        }
        self._filesystems = dict(filesystems)

    def checkpoint(self, checkpoint_id: str) -> list[FilesystemSnapshotRef]:
        """Snapshot the session state and every filesystem under ``checkpoint_id``."""
        checked_id(checkpoint_id, "checkpoint id")
        state = self._session.snapshot_state()
        _check_json(state)
        refs = []
        for key, manager in self._managers.items():
            manager.snapshot(checkpoint_id)
            refs.append(
                FilesystemSnapshotRef(key, checkpoint_id, type(self._filesystems[key]).__name__)
            )
        record = {"state": state, "filesystems": [asdict(ref) for ref in refs]}
        write_private_file(self._dir / f"{checkpoint_id}.session.json", json.dumps(record).encode())
        return refs

    def rollback(self, checkpoint_id: str) -> None:
        """Put the session and every filesystem back to ``checkpoint_id``."""
        path = self._dir / f"{checked_id(checkpoint_id, 'checkpoint id')}.session.json"
        if not path.exists():
            raise SnapshotNotFoundError("no such checkpoint", checkpoint_id)
        record = json.loads(path.read_text())
        for manager in self._managers.values():
            manager.rollback(checkpoint_id)
        self._session.rollback_state(record["state"])


def dump_session(
    session: Session,
    filesystem: ArchiveBackend,
    directory: str | os.PathLike[str],
    session_id: str,
    *,
    filesystem_key: str = "workspace",
) -> FilesystemSnapshotRef:
    """Write ``<id>.jsonl`` (a header line, then one line per state key) and ``<id>.fs.zip``,
    both 0600, in ``directory`` (made 0700 if it is missing)."""
    checked_id(session_id, "session id")
    checked_id(filesystem_key, "filesystem key")
    state = session.snapshot_state()
    _check_json(state)
    folder = Path(directory)
    make_private_directory(folder)
    ref = FilesystemSnapshotRef(filesystem_key, session_id, type(filesystem).__name__)
    export_archive(filesystem, folder / f"{session_id}.fs.zip")
    lines = [
        {
            "kind": "header",
            "id": session_id,
            "created_at": datetime.now(UTC).isoformat(),
            "filesystem": asdict(ref),
        }
    ]
    lines += [{"kind": "state", "key": key, "value": value} for key, value in state.items()]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    write_private_file(folder / f"{session_id}.jsonl", text.encode())
    return ref


def load_session(
    directory: str | os.PathLike[str],
    session_id: str,
    session: Session,
    filesystem: ArchiveBackend,
) -> FilesystemSnapshotRef:
    """Resume a dumped session into ``session`` and ``filesystem`` (any backend), the
    workspace exactly as dumped (``restore_own_archive``)."""
    folder = Path(directory)
    journal = folder / f"{checked_id(session_id, 'session id')}.jsonl"
    if not journal.exists():
        raise SnapshotNotFoundError("no such session dump", str(journal))
    try:
        lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
        header, items = lines[0], lines[1:]
        ref = FilesystemSnapshotRef(**header["filesystem"])
        state = {item["key"]: item["value"] for item in items if item["kind"] == "state"}
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise InvalidContentError(f"malformed session dump: {exc}", str(journal)) from None
    restore_own_archive(filesystem, folder / f"{session_id}.fs.zip")
    session.rollback_state(state)
    return ref
