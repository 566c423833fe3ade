"""One workspace history, kept every way the debug UI reads one.

Three steps (``start``, ``middle``, ``last``) of the same workspace as a live
``InMemoryFilesystem``, the same through the protocol only (as a daemon's
``RemoteFilesystem`` is read), a git repository of persisted snapshots, a
directory of ``ArchiveSnapshots``, session dumps, and session checkpoints.
Every target must answer the same questions the same way.
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from workspacefs import FilesystemSnapshot, InMemoryFilesystem, JsonSession, git
from workspacefs.archive import ArchiveSnapshots, SessionCheckpoints, dump_session
from workspacefs.debug import DebugTarget, LiveTarget, create_app, open_target
from workspacefs.fs import Filesystem

APP_V1 = "import os\n\n\ndef main():\n    print('hello')\n"
APP_V2 = "import os\n\n\ndef main():\n    print('hello, world')\n    return 0\n"
LOGO = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256))
BIG = 1 << 20  # the app's text limit


def big_text(size: int) -> bytes:
    """Text just over ``size`` bytes that compresses like a log (a file of one repeated
    byte compresses over 1000 times, and archives refuse that as a zip bomb)."""
    lines = []
    total = 0
    for number in itertools.count():
        line = f"{number:08d} {hashlib.sha256(str(number).encode()).hexdigest()}\n"
        lines.append(line)
        total += len(line)
        if total > size:
            return "".join(lines).encode()
    raise AssertionError("unreachable")


STEPS = ("start", "middle", "last")

# What each step holds: path -> bytes.
STATES: dict[str, dict[str, bytes]] = {
    "start": {
        "README.md": b"# demo\n",
        "src/app.py": APP_V1.encode(),
        "assets/logo.bin": LOGO,
    },
    "middle": {
        "README.md": b"# demo\n",
        "src/app.py": APP_V2.encode(),
        "src/util.py": b"X = 1\n",
        "assets/logo.bin": LOGO,
    },
    "last": {
        "src/app.py": APP_V2.encode(),
        "src/util.py": b"X = 1\n",
        "assets/logo.bin": LOGO,
        "logs/big.log": big_text(BIG),
    },
}
TAGS = {"start": "start", "middle": "exec-1-after", "last": "last"}


def build_history(
    on_step: Callable[[str, InMemoryFilesystem, FilesystemSnapshot], None] | None = None,
) -> tuple[InMemoryFilesystem, dict[str, FilesystemSnapshot]]:
    """The workspace after its three steps, and each step's snapshot."""
    fs = InMemoryFilesystem(workspace_id="debug-tests")
    snapshots: dict[str, FilesystemSnapshot] = {}
    for step in STEPS:
        wanted = STATES[step]
        for path in [e.path for e in fs.glob("**") if e.is_file and e.path not in wanted]:
            fs.delete(path)
        for path, content in wanted.items():
            fs.write_bytes(path, content)
        snapshots[step] = fs.snapshot(tag=TAGS[step])
        if on_step is not None:
            on_step(step, fs, snapshots[step])
    return fs, snapshots


class ProtocolOnly:
    """Forwards the protocol to a workspace and hides its type, so the debug target
    reads it call by call as it reads a daemon's ``RemoteFilesystem``."""

    def __init__(self, inner: Filesystem) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def at(self, snapshot: FilesystemSnapshot) -> ProtocolOnly:
        assert isinstance(self._inner, InMemoryFilesystem)
        return ProtocolOnly(self._inner.at(snapshot))


@dataclass
class Case:
    """One kind of target over the history, and a client of its app."""

    name: str
    target: DebugTarget
    client: TestClient
    ids: dict[str, str]  # step -> snapshot id in this target
    live: bool = False

    def url(self, step: str, route: str) -> str:
        return f"/api/snapshots/{self.ids[step]}/{route}"


TOKEN = "a-token-for-the-tests-only"
"""The secret of the apps the tests make (a server makes its own)."""


def bearer(token: str) -> dict[str, str]:
    """The header that carries ``token``."""
    return {"authorization": f"Bearer {token}"}


def client_for(target: DebugTarget, **options: Any) -> TestClient:
    """A client of the app that sends its token; 127.0.0.1 is a Host the app accepts."""
    app = create_app(target, token=TOKEN, **options)
    return TestClient(app, base_url="http://127.0.0.1", headers=bearer(TOKEN))


KINDS = ("live", "protocol", "git", "archives", "dumps", "checkpoints")


@dataclass
class Stores:
    fs: InMemoryFilesystem
    snapshots: dict[str, FilesystemSnapshot]
    root: Path


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    root = tmp_path_factory.mktemp("debug-history")
    session = JsonSession({"messages": []})
    checkpoints: dict[str, SessionCheckpoints] = {}

    def keep(step: str, fs: InMemoryFilesystem, snapshot: FilesystemSnapshot) -> None:
        ArchiveSnapshots(fs.at(snapshot), root / "archives").snapshot(f"step-{step}")
        session.state["messages"].append(f"did {step}")
        dump_session(session, fs.at(snapshot), root / "dumps", f"session-{step}")
        if not checkpoints:
            checkpoints["m"] = SessionCheckpoints(session, {"workspace": fs}, root / "checkpoints")
        checkpoints["m"].checkpoint(f"cp-{step}")

    fs, snapshots = build_history(keep)
    for step in STEPS:
        git.persist(fs, snapshots[step], root / "repo.git")
    return Stores(fs, snapshots, root)


def make_case(kind: str, stores: Stores) -> Case:
    uuids = {step: str(s.snapshot_id) for step, s in stores.snapshots.items()}
    if kind == "live":
        target: DebugTarget = LiveTarget(stores.fs)
        return Case(kind, target, client_for(target), uuids, live=True)
    if kind == "protocol":
        target = LiveTarget(ProtocolOnly(stores.fs))
        return Case(kind, target, client_for(target), uuids, live=True)
    if kind == "git":
        target = open_target(stores.root / "repo.git")
        return Case(kind, target, client_for(target), uuids)
    names = {
        "archives": "step-{}",
        "dumps": "session-{}",
        "checkpoints": "cp-{}",
    }[kind]
    target = open_target(stores.root / kind)
    return Case(kind, target, client_for(target), {s: names.format(s) for s in STEPS})


@pytest.fixture(params=KINDS)
def case(request: pytest.FixtureRequest, stores: Stores) -> Iterator[Case]:
    found = make_case(request.param, stores)
    yield found
    found.client.close()
    found.target.close()


def json_of(response: Any) -> Any:
    """The body, after checking it is JSON."""
    assert response.headers["content-type"].startswith("application/json"), response.text
    return response.json()


def unknown_id() -> str:
    return str(uuid.uuid4())


def paths(entries: Sequence[dict[str, Any]]) -> list[str]:
    return [entry["path"] for entry in entries]
