"""Bad input gets a clear JSON error with the right status, on every target, and nothing
outside the target is ever served."""

from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile
from pathlib import Path
from typing import Any

import pygit2
import pytest

from workspacefs import InMemoryFilesystem
from workspacefs.archive import ArchiveError, export_archive
from workspacefs.debug import LiveTarget, open_target

from .conftest import BIG, Case, Stores, client_for, json_of, unknown_id

SECRET = "top secret, outside every target"

# (route, query) -> (status, error code); "{s}" is the newest step's snapshot id.
TABLE: list[tuple[str, dict[str, str], int, str]] = [
    ("file", {"path": "../README.md"}, 400, "path_escape"),
    ("file", {"path": "src/../../secret.txt"}, 400, "path_escape"),
    ("file", {"path": "/etc/passwd"}, 400, "path_escape"),
    ("file", {"path": "//etc/passwd"}, 400, "path_escape"),
    ("raw", {"path": "../../secret.txt"}, 400, "path_escape"),
    ("tree", {"path": ".."}, 400, "path_escape"),
    ("tree", {"path": "src/.."}, 400, "path_escape"),
    ("file", {"path": "src/app.py\0.txt"}, 400, "bad_request"),
    ("file", {"path": "a" * 5000}, 400, "bad_request"),
    ("file", {}, 400, "bad_request"),
    ("file", {"path": "no/such/file.txt"}, 404, "not_found"),
    ("raw", {"path": "missing.bin"}, 404, "not_found"),
    ("tree", {"path": "nowhere"}, 404, "not_found"),
    ("tree", {"path": "src/app.py"}, 400, "not_directory"),
    ("file", {"path": "src/app.py/deeper"}, 404, "not_found"),
    ("file", {"path": "src"}, 400, "is_directory"),
    ("raw", {"path": "src"}, 400, "is_directory"),
    ("file", {"path": "assets/logo.bin"}, 415, "binary"),
    ("file", {"path": "logs/big.log"}, 413, "too_large"),
]


def error_of(response: Any, status: int, code: str) -> dict[str, Any]:
    body: dict[str, Any] = json_of(response)
    assert (response.status_code, body["error"]) == (status, code), body
    assert body["status"] == status
    assert isinstance(body["message"], str)
    assert body["message"]
    return body


@pytest.mark.parametrize(("route", "params", "status", "code"), TABLE)
def test_bad_input_table(
    case: Case, route: str, params: dict[str, str], status: int, code: str
) -> None:
    response = case.client.get(case.url("last", route), params=params)
    body = error_of(response, status, code)
    assert SECRET not in response.text
    if code in ("binary", "too_large"):
        assert (
            body["download"]
            == f"/api/snapshots/{case.ids['last']}/raw?path={params['path'].replace('/', '%2F')}"
        )
        download = case.client.get(body["download"])
        assert download.status_code == 200
        assert len(download.content) == body["size"]
    if code == "too_large":
        assert body["size"] > BIG == body["limit"]


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/filesystem/file", {"path": "../../secret.txt"}),
        ("/api/filesystem/file", {"path": "%2e%2e/secret.txt"}),
        ("/api/diff/file", {"from": "{start}", "to": "{last}", "path": "../secret.txt"}),
    ],
)
def test_traversal_on_other_routes(case: Case, path: str, params: dict[str, str]) -> None:
    query = {k: v.format(start=case.ids["start"], last=case.ids["last"]) for k, v in params.items()}
    response = case.client.get(path, params=query)
    assert response.status_code in (400, 404)  # "%2e%2e" is just an odd name once decoded once
    assert SECRET not in response.text


def test_unknown_snapshots(case: Case) -> None:
    other = unknown_id()
    for response in (
        case.client.get(f"/api/snapshots/{other}"),
        case.client.get(f"/api/snapshots/{other}/tree"),
        case.client.get(f"/api/snapshots/{other}/file", params={"path": "src/app.py"}),
        case.client.get(f"/api/snapshots/{other}/raw", params={"path": "src/app.py"}),
        case.client.get("/api/diff", params={"from": other, "to": case.ids["last"]}),
        case.client.get("/api/diff", params={"from": case.ids["last"], "to": other}),
        case.client.get(
            "/api/diff/file", params={"from": other, "to": case.ids["last"], "path": "nope"}
        ),
        case.client.get(case.url("last", "file"), params={"path": "src/app.py", "against": other}),
        case.client.get("/api/filesystem/tree", params={"snapshot": other}),
        case.client.get("/api/filesystem/meta", params={"snapshot": other}),
    ):
        error_of(response, 404, "unknown_snapshot")


def test_diff_needs_both_ends(case: Case) -> None:
    error_of(case.client.get("/api/diff", params={"from": case.ids["last"]}), 400, "bad_request")
    params = {"from": case.ids["start"], "to": case.ids["last"], "patch": "1", "max_lines": "-3"}
    error_of(case.client.get("/api/diff", params=params), 400, "bad_request")
    both_missing = {"from": case.ids["start"], "to": case.ids["last"], "path": "nope.txt"}
    error_of(case.client.get("/api/diff/file", params=both_missing), 404, "not_found")


def test_routes_and_methods(case: Case) -> None:
    error_of(case.client.get("/api/nope"), 404, "not_found")
    error_of(case.client.post("/api/snapshots"), 405, "method_not_allowed")
    error_of(
        case.client.delete(case.url("last", "raw"), params={"path": "src"}),
        405,
        "method_not_allowed",
    )
    assert case.client.get("/static/../../secret.txt").status_code == 404


def test_foreign_host_names_are_refused(case: Case) -> None:
    # A page on another site that resolves its name to 127.0.0.1 (DNS rebinding)
    # must not read the workspace.
    response = case.client.get("/api/snapshots", headers={"host": "evil.example"})
    assert response.status_code == 400
    assert case.ids["start"] not in response.text
    assert case.client.get("/api/snapshots", headers={"host": "localhost:8765"}).status_code == 200


# -- nothing outside the target ---------------------------------------------------------


def test_a_symlink_is_shown_never_followed(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text(SECRET)
    fs = InMemoryFilesystem()
    fs.write("a.txt", "a\n")
    with fs.transaction() as tree:
        root = tree.resolve_path("")
        assert root is not None
        tree.symlink(root, "escape", str(tmp_path / "secret.txt"))
        tree.symlink(root, "up", "../../secret.txt")
    snapshot = fs.snapshot()
    client = client_for(LiveTarget(fs))
    url = f"/api/snapshots/{snapshot.snapshot_id}"
    shown = json_of(client.get(f"{url}/file", params={"path": "escape"}))
    assert (shown["kind"], shown["target"], shown["content"]) == (
        "symlink",
        str(tmp_path / "secret.txt"),
        None,
    )
    for path in ("escape", "up"):
        error_of(client.get(f"{url}/raw", params={"path": path}), 404, "not_found")
    for route in ("file", "raw"):
        assert SECRET not in client.get(f"{url}/{route}", params={"path": "up"}).text
    tree = json_of(client.get(f"{url}/tree"))
    assert {e["name"]: e.get("target") for e in tree["entries"]} == {
        "a.txt": None,
        "escape": str(tmp_path / "secret.txt"),
        "up": "../../secret.txt",
    }


def plant_secret(stores: Stores) -> None:
    (stores.root / "secret.txt").write_text(SECRET)


def test_paths_never_reach_files_beside_the_target(stores: Stores, case: Case) -> None:
    plant_secret(stores)
    for path in (
        "../secret.txt",
        "../../secret.txt",
        str(stores.root / "secret.txt"),
        "secret.txt",
    ):
        for route in ("file", "raw", "tree"):
            response = case.client.get(case.url("last", route), params={"path": path})
            assert response.status_code in (400, 404), (route, path)
            assert SECRET not in response.text


# -- malformed archives and damaged repositories -----------------------------------------


def good_archive(path: Path) -> Path:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "a\n")
    export_archive(fs, path)
    return path


def rewrite(source: Path, target: Path, edit: Any) -> Path:
    """Copy an archive entry by entry, letting ``edit(name, data)`` change each."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            found = edit(info, old.read(info))
            if found is not None:
                new.writestr(*found)
    return target


def hostile_entry(info: zipfile.ZipInfo, data: bytes) -> tuple[zipfile.ZipInfo, bytes]:
    if info.filename == "files/a.txt":
        info.filename = "files/../escape.txt"
    return info, data


def escaping_symlink(info: zipfile.ZipInfo, data: bytes) -> tuple[zipfile.ZipInfo, bytes]:
    if info.filename == "files/a.txt":
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        return info, b"../../secret.txt"
    return info, data


def lying_manifest(info: zipfile.ZipInfo, data: bytes) -> tuple[zipfile.ZipInfo, bytes]:
    if info.filename == "manifest.json":
        manifest = json.loads(data)
        manifest["file_count"] = 7
        return info, json.dumps(manifest).encode()
    return info, data


def no_manifest(info: zipfile.ZipInfo, data: bytes) -> tuple[zipfile.ZipInfo, bytes] | None:
    return None if info.filename == "manifest.json" else (info, data)


@pytest.mark.parametrize(
    "damage",
    [
        "not_a_zip",
        "truncated",
        "hostile_entry",
        "escaping_symlink",
        "lying_manifest",
        "no_manifest",
    ],
)
def test_malformed_archive(tmp_path: Path, damage: str) -> None:
    good = good_archive(tmp_path / "good.zip")
    bad = tmp_path / "bad.fs.zip"
    if damage == "not_a_zip":
        bad.write_bytes(b"PK\3\4 this is no zip file at all")
    elif damage == "truncated":
        bad.write_bytes(good.read_bytes()[:-40])
    else:
        edits = {
            "hostile_entry": hostile_entry,
            "escaping_symlink": escaping_symlink,
            "lying_manifest": lying_manifest,
            "no_manifest": no_manifest,
        }
        rewrite(good, bad, edits[damage])
    (tmp_path / "secret.txt").write_text(SECRET)
    client = client_for(open_target(bad))
    listed = json_of(client.get("/api/snapshots"))["snapshots"]
    assert [s["id"] for s in listed] == ["bad"]  # listed, so the UI can say what is wrong
    for response in (
        client.get("/api/filesystem/meta"),
        client.get("/api/filesystem/tree"),
        client.get("/api/filesystem/file", params={"path": "a.txt"}),
        client.get("/api/snapshots/bad/tree"),
        client.get("/api/snapshots/bad/raw", params={"path": "escape.txt"}),
    ):
        body = error_of(response, 500, "malformed_archive")
        assert body["path"] == str(bad)
        assert SECRET not in response.text


def test_one_malformed_archive_among_good_ones(tmp_path: Path) -> None:
    good_archive(tmp_path / "one.zip")
    (tmp_path / "two.zip").write_bytes(b"garbage")
    client = client_for(open_target(tmp_path))
    listed = {s["id"]: s for s in json_of(client.get("/api/snapshots"))["snapshots"]}
    assert listed["two"]["source"] == "two.zip (unreadable)"
    assert listed["one"]["file_count"] == 1
    assert (
        json_of(client.get("/api/snapshots/one/file", params={"path": "a.txt"}))["content"] == "a\n"
    )
    error_of(client.get("/api/snapshots/two/tree"), 500, "malformed_archive")
    error_of(client.get("/api/diff", params={"from": "one", "to": "two"}), 500, "malformed_archive")


def test_malformed_session_dump(tmp_path: Path) -> None:
    good_archive(tmp_path / "s.fs.zip")
    (tmp_path / "s.jsonl").write_text("{not json\n")
    with pytest.raises(ArchiveError, match="malformed session record"):
        open_target(tmp_path / "s.jsonl")
    # Opened as part of a directory, the archive is served and the record is the error.
    client = client_for(open_target(tmp_path))
    assert json_of(client.get("/api/snapshots/s/tree"))["entries"][0]["path"] == "a.txt"
    error_of(client.get("/api/snapshots/s"), 500, "malformed_archive")


def test_archive_removed_while_served(tmp_path: Path) -> None:
    archive = good_archive(tmp_path / "gone.zip")
    client = client_for(open_target(archive))
    os.unlink(archive)
    error_of(client.get("/api/snapshots/gone/tree"), 503, "unavailable")


def test_damaged_git_object(stores: Stores, tmp_path: Path) -> None:
    repo = shutil.copytree(stores.root / "repo.git", tmp_path / "repo.git")
    client = client_for(open_target(repo))
    last = str(stores.snapshots["last"].snapshot_id)
    commit = json_of(client.get(f"/api/snapshots/{last}"))["commit"]
    oid = str(pygit2.Repository(str(repo)).revparse_single(f"{commit}:src/util.py").id)
    loose = repo / "objects" / oid[:2] / oid[2:]
    assert loose.exists(), "a persist this small writes loose objects"
    loose.unlink()
    response = client.get(f"/api/snapshots/{last}/file", params={"path": "src/util.py"})
    error_of(response, 500, "damaged_snapshot")
    # The rest of the snapshot is still served.
    assets = json_of(client.get(f"/api/snapshots/{last}/tree", params={"path": "assets"}))
    assert [e["path"] for e in assets["entries"]] == ["assets/logo.bin"]
