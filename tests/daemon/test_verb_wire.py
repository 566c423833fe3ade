"""The control API binds each request against its verb's contract: a real daemon, raw HTTP.

Any client (not only ``RemoteFilesystem``, which sends just what its caller
passed) gets the protocol's defaults for what it leaves out, and a clear
refusal (InvalidArgumentError, 400) for an argument the verb does not take or
a value of the wrong type, with nothing changed and the daemon serving on.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemons
from workspacefs.daemon import API_VERSION, VERBS, MountRecord, connect


@pytest.fixture
def daemon(daemons: Daemons) -> MountRecord:
    return daemons.start()


@pytest.fixture
def http(daemon: MountRecord) -> Iterator[httpx.Client]:
    transport = httpx.HTTPTransport(uds=daemon.socket)
    with httpx.Client(transport=transport, base_url="http://workspacefs", timeout=60) as client:
        yield client


def call(http: httpx.Client, verb: str, **body: Any) -> tuple[int, Any]:
    answer = http.post(f"/v{API_VERSION}/{verb}", json=body)
    payload = answer.json()
    return answer.status_code, payload.get("result", payload.get("error"))


def test_left_out_arguments_get_the_protocols_defaults(http: httpx.Client) -> None:
    assert call(http, "mkdir", path="a/b/c") == (200, None)  # parents=True
    status, written = call(http, "write", path="d/x.txt", content="one\ntwo\n")  # create_parents
    assert (status, written["mode"]) == (200, "overwrite")
    status, page = call(http, "read", path="d/x.txt")  # offset 0, the default limit
    assert (status, page["content"], page["offset"], page["truncated"]) == (
        200,
        "one\ntwo\n",
        0,
        False,
    )
    status, error = call(http, "delete", path="d")  # recursive=False
    assert (status, error["type"], error["errno"]) == (400, "IsADirectoryFsError", errno.EISDIR)
    assert call(http, "exists", path="d/x.txt") == (200, True)


@pytest.mark.parametrize(
    ("verb", "body", "named"),
    [
        ("write", {"path": "x", "content": "y", "create_parent": False}, "create_parent"),
        ("read", {"path": "x", "at_line": 3}, "at_line"),
        ("snapshot", {"tag": "t", "at": None}, "at"),  # only a view verb takes ``at``
        ("prune", {"policy": {"max_count": 1, "keep": 2}}, "keep"),
    ],
)
def test_an_argument_the_verb_does_not_take_is_refused(
    http: httpx.Client, daemon: MountRecord, verb: str, body: dict[str, Any], named: str
) -> None:
    status, error = call(http, verb, **body)
    assert status == 400
    assert (error["type"], error["errno"]) == ("InvalidArgumentError", errno.EINVAL)
    assert named in error["message"]
    with connect(daemon.socket) as fs:
        assert not fs.exists("x")
        assert fs.snapshots() == []


@pytest.mark.parametrize(
    ("verb", "body"),
    [
        ("read", {"path": "x", "offset": "0"}),
        ("read", {}),
        ("write_bytes", {"path": "x", "content": "not base64!"}),
        ("write", {"path": ["x"], "content": "y"}),
        ("restore", {"snapshot": {"snapshot_id": "no"}}),
        ("read", {"path": "x", "at": 5}),
    ],
)
def test_a_value_of_the_wrong_type_is_refused(
    http: httpx.Client, daemon: MountRecord, verb: str, body: dict[str, Any]
) -> None:
    status, error = call(http, verb, **body)
    assert (status, error["type"]) == (400, "InvalidArgumentError"), error
    with connect(daemon.socket) as fs:
        assert not fs.exists("x")


def test_a_body_nested_too_deep_is_refused(http: httpx.Client, daemon: MountRecord) -> None:
    body = b'{"path": "x", "content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    answer = http.post(f"/v{API_VERSION}/write", content=body)
    assert answer.status_code == 400, answer.text
    with connect(daemon.socket) as fs:
        assert not fs.exists("x")


def test_verbs_by_name(http: httpx.Client) -> None:
    status = http.get(f"/v{API_VERSION}/status")
    assert status.status_code == 200
    assert status.json()["result"]["api_version"] == API_VERSION
    status_code, error = call(http, "chmod", path="x")
    assert status_code == 400
    assert "no verb 'chmod'" in error["message"]
    assert all(name in error["message"] for name in VERBS)
    old = http.post("/v2/fs/read", json={"path": "x"})
    assert old.status_code == 400
    assert f"this daemon speaks /v{API_VERSION}" in old.json()["error"]["message"]


def test_a_merge_travels_without_its_conflicts_sides(daemon: MountRecord) -> None:
    # The sides are whole file contents: they stay in the daemon, which merged.
    with connect(daemon.socket) as fs:
        fs.write("f.txt", "base\n")
        fork = fs.fork("f")
        fs.write("f.txt", "ours\n")
        with open(f"{fork.path}/f.txt", "w", encoding="utf-8") as theirs:
            theirs.write("theirs\n")
        report = fs.merge_fork("f", markers=True)
    assert not report.applied
    (conflict,) = report.conflicts
    assert (conflict.path, conflict.kind) == ("f.txt", "content")
    assert conflict.markers is not None
    assert b"ours" in conflict.markers
    assert not hasattr(conflict, "ours")
