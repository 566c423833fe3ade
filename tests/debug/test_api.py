"""The API answers the same about one history, whatever keeps it: live, through the
protocol only, git, archives, session dumps, checkpoints."""

from __future__ import annotations

import difflib
from typing import Any

from .conftest import APP_V1, APP_V2, LOGO, STATES, STEPS, TAGS, Case, json_of, paths


def files_of(step: str) -> dict[str, bytes]:
    return STATES[step]


def test_timeline_lists_every_step_in_order(case: Case) -> None:
    snapshots = json_of(case.client.get("/api/snapshots"))["snapshots"]
    steps = snapshots[:-1] if case.live else snapshots
    assert [s["id"] for s in steps] == [case.ids[step] for step in STEPS]
    assert [s["number"] for s in snapshots] == list(range(1, len(snapshots) + 1))
    for step, summary in zip(STEPS, steps, strict=True):
        assert summary["file_count"] == len(STATES[step])
        assert summary["total_bytes"] == sum(len(data) for data in STATES[step].values())
        assert summary["created_at"] is not None
    if case.live:
        assert snapshots[-1]["id"] == "live"
        assert snapshots[-1]["parent"] == case.ids["last"]


def test_tags_parents_and_origins_where_recorded(case: Case) -> None:
    snapshots = json_of(case.client.get("/api/snapshots"))["snapshots"]
    if case.name in ("archives", "dumps", "checkpoints"):
        assert all(s["tag"] is None and s["parent"] is None for s in snapshots)
        return
    by_id = {s["id"]: s for s in snapshots}
    middle, last = by_id[case.ids["middle"]], by_id[case.ids["last"]]
    assert middle["tag"] == TAGS["middle"]
    assert middle["parent"] == case.ids["start"]
    assert last["parent"] == case.ids["middle"]
    assert middle["origin"] == {
        "kind": "exec",
        "summary": "after exec #1",
        "details": {"exec": 1, "phase": "after"},
    }


def test_tree_lists_one_directory(case: Case) -> None:
    root = json_of(case.client.get(case.url("middle", "tree")))
    assert root["path"] == ""
    assert [(e["name"], e["kind"]) for e in root["entries"]] == [
        ("README.md", "file"),
        ("assets", "directory"),
        ("src", "directory"),
    ]
    src = json_of(case.client.get(case.url("start", "tree"), params={"path": "src"}))
    assert [(e["path"], e["size"]) for e in src["entries"]] == [("src/app.py", len(APP_V1))]
    # "./src/" names the same directory
    again = json_of(case.client.get(case.url("start", "tree"), params={"path": "./src/"}))
    assert again["entries"] == src["entries"]


def test_file_at_an_old_snapshot(case: Case) -> None:
    old = json_of(case.client.get(case.url("start", "file"), params={"path": "src/app.py"}))
    new = json_of(case.client.get(case.url("last", "file"), params={"path": "src/app.py"}))
    assert old["content"] == APP_V1
    assert new["content"] == APP_V2
    assert old["line_count"] == 5
    assert old["size"] == len(APP_V1)
    assert old["download"].endswith("/raw?path=src%2Fapp.py")


def test_changed_lines_against_another_snapshot(case: Case) -> None:
    body = json_of(
        case.client.get(
            case.url("middle", "file"), params={"path": "src/app.py", "against": case.ids["start"]}
        )
    )
    assert body["changed_lines"] == [5, 6]  # the print line changed, "return 0" is new
    added = json_of(
        case.client.get(
            case.url("middle", "file"), params={"path": "src/util.py", "against": case.ids["start"]}
        )
    )
    assert added["against_status"] == "absent"
    assert added["changed_lines"] == [1]


def test_raw_serves_bytes_as_a_download(case: Case) -> None:
    response = case.client.get(case.url("start", "raw"), params={"path": "assets/logo.bin"})
    assert response.status_code == 200
    assert response.content == LOGO
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["content-disposition"] == "attachment; filename*=UTF-8''logo.bin"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_diff_names_what_changed(case: Case) -> None:
    body = json_of(
        case.client.get("/api/diff", params={"from": case.ids["start"], "to": case.ids["last"]})
    )
    assert body["added"] == ["logs/big.log", "src/util.py"]
    assert body["modified"] == ["src/app.py"]
    assert body["deleted"] == ["README.md"]
    assert body["unchanged_count"] == 1  # assets/logo.bin
    back = json_of(
        case.client.get("/api/diff", params={"from": case.ids["last"], "to": case.ids["start"]})
    )
    assert (back["added"], back["deleted"]) == (body["deleted"], body["added"])


def test_diff_of_one_file_is_difflibs_unified_diff(case: Case) -> None:
    params = {"from": case.ids["start"], "to": case.ids["middle"], "path": "src/app.py"}
    body = json_of(case.client.get("/api/diff/file", params=params))
    assert body["status"] == "modified"
    assert not body["binary"]
    assert not body["too_large"]
    expected = difflib.unified_diff(
        APP_V1.splitlines(), APP_V2.splitlines(), "a/src/app.py", "b/src/app.py", lineterm=""
    )
    assert body["unified"] == "\n".join(["diff --git a/src/app.py b/src/app.py", *expected])
    [hunk] = body["hunks"]
    assert [(line["op"], line["old"], line["new"]) for line in hunk["lines"]][-3:] == [
        ("-", 5, None),
        ("+", None, 5),
        ("+", None, 6),
    ]


def test_diff_of_added_deleted_binary_and_large_files(case: Case) -> None:
    def diff_file(path: str, base: str = "start", target: str = "last") -> dict[str, Any]:
        params = {"from": case.ids[base], "to": case.ids[target], "path": path}
        found: dict[str, Any] = json_of(case.client.get("/api/diff/file", params=params))
        return found

    added = diff_file("src/util.py")
    assert (added["status"], added["old"]) == ("added", None)
    assert added["unified"].splitlines() == [
        "diff --git a/src/util.py b/src/util.py",
        "new file mode 100644",
        "--- /dev/null",
        "+++ b/src/util.py",
        "@@ -0,0 +1 @@",
        "+X = 1",
    ]
    deleted = diff_file("README.md")
    assert (deleted["status"], deleted["new"]) == ("deleted", None)
    logo = diff_file("assets/logo.bin")
    assert (logo["status"], logo["binary"], logo["hunks"], logo["unified"]) == (
        "unchanged",
        True,
        [],
        "",
    )
    big = diff_file("logs/big.log")
    assert (big["status"], big["too_large"]) == ("added", True)
    size = len(STATES["last"]["logs/big.log"])
    assert big["unified"].splitlines()[-1] == (
        f"Binary files /dev/null and b/logs/big.log differ (0 -> {size:,} bytes, "
        "over the 1,048,576-byte limit)"
    )


def test_diff_with_a_patch(case: Case) -> None:
    params = {"from": case.ids["start"], "to": case.ids["middle"], "patch": "1"}
    body = json_of(case.client.get("/api/diff", params=params))
    assert "+    return 0" in body["patch"].splitlines()
    assert "+++ b/src/util.py" in body["patch"].splitlines()
    assert (body["patch_truncated"], body["patch_stopped"], body["patch_files_left_out"]) == (
        False,
        None,
        0,
    )
    cut = json_of(case.client.get("/api/diff", params={**params, "max_lines": "3"}))
    assert cut["patch"].splitlines() == body["patch"].splitlines()[:3]
    assert (cut["patch_truncated"], cut["patch_stopped"], cut["patch_files_left_out"]) == (
        True,
        "max_lines",
        2,
    )


def test_seed_routes_default_to_the_newest_snapshot(case: Case) -> None:
    newest = "live" if case.live else case.ids["last"]
    meta = json_of(case.client.get("/api/filesystem/meta"))
    assert meta["snapshot"]["id"] == newest
    tree = json_of(case.client.get("/api/filesystem/tree"))
    assert tree == [
        {"path": path, "size_bytes": len(data), "kind": "file"}
        for path, data in sorted(STATES["last"].items())
    ]
    file = json_of(case.client.get("/api/filesystem/file", params={"path": "src/util.py"}))
    assert (file["content"], file["size_bytes"]) == ("X = 1\n", 6)
    old = json_of(
        case.client.get(
            "/api/filesystem/file", params={"path": "README.md", "snapshot": case.ids["start"]}
        )
    )
    assert old["content"] == "# demo\n"
    start_tree = json_of(
        case.client.get("/api/filesystem/tree", params={"snapshot": case.ids["start"]})
    )
    assert paths(start_tree) == sorted(STATES["start"])


def test_archive_meta_carries_the_manifest_and_the_session(case: Case) -> None:
    meta = json_of(case.client.get("/api/filesystem/meta"))
    if case.name not in ("archives", "dumps", "checkpoints"):
        assert "manifest" not in meta
        return
    manifest = meta["manifest"]
    assert manifest["format"] == "workspacefs-archive"
    assert manifest["file_count"] == len(STATES["last"])
    assert "mtimes" not in manifest  # one entry per file: not for a summary
    if case.name == "archives":
        assert "session" not in meta
    else:
        assert meta["session"]["state"] == {"messages": ["did start", "did middle", "did last"]}


def test_snapshot_details(case: Case) -> None:
    body = json_of(case.client.get(f"/api/snapshots/{case.ids['middle']}"))
    assert body["snapshot"]["id"] == case.ids["middle"]
    if case.name == "git":
        assert body["record"]["tag"] == TAGS["middle"]
        assert len(body["commit"]) == 40
    elif case.live:
        assert body["record"]["snapshot_id"] == case.ids["middle"]
    else:
        assert body["archive"].endswith(".zip")


def test_live_state_is_browsable(case: Case) -> None:
    if not case.live:
        return
    tree = json_of(case.client.get("/api/snapshots/live/tree", params={"path": "src"}))
    assert paths(tree["entries"]) == ["src/app.py", "src/util.py"]
    diff = json_of(case.client.get("/api/diff", params={"from": case.ids["middle"], "to": "live"}))
    assert (diff["added"], diff["deleted"]) == (["logs/big.log"], ["README.md"])
    back = json_of(case.client.get("/api/diff", params={"from": "live", "to": case.ids["middle"]}))
    assert (back["added"], back["deleted"]) == (["README.md"], ["logs/big.log"])


def test_the_page_and_its_assets(case: Case) -> None:
    page = case.client.get("/")
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert '<script src="/app.js" defer></script>' in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    script = case.client.get("/app.js")
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "textContent" in script.text
    assert "innerHTML" not in script.text
    assert case.client.get("/app.css").headers["content-type"] == "text/css; charset=utf-8"


def test_every_step_reads_back_exactly(case: Case) -> None:
    for step in STEPS:
        for path, data in files_of(step).items():
            response = case.client.get(case.url(step, "raw"), params={"path": path})
            assert response.content == data, (step, path)
