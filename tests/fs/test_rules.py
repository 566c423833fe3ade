"""Access rules through the Python API: each door refused, nothing changed, the denial kept.

The table: rule (read-only, hidden, quota; on the workspace, on a fork, for a
tool) x door (the protocol's write, delete, rename and mkdir, and the tree's
own changing methods the mount calls: chmod, truncate, xattrs, links, special
files). Each refused change raises the rule's error naming it, leaves the tree
exactly as it was (every path's kind, mode, owner, content, times and xattrs),
and is recorded as a denial with its cause.
"""

from __future__ import annotations

import errno
import functools
import gc
import random
from collections.abc import Callable

import pytest

from support.rules import picture
from workspacefs import (
    AccessDeniedError,
    Cause,
    InMemoryFilesystem,
    InvalidArgumentError,
    NotFoundError,
    QuotaExceededError,
    Rule,
    attributed,
)
from workspacefs.fs import MAX_DENIALS
from workspacefs.fs._patterns import rule_matcher
from workspacefs.tree import ROOT_INO, Tree

CALL = Cause.call("write_file", "toolu_01")


def workspace(*rules: Rule) -> InMemoryFilesystem:
    fs = InMemoryFilesystem()
    fs.write(".git/config", "[core]\n")
    fs.write(".git/hooks/pre-commit", "#!/bin/sh\n")
    fs.write(".env", "TOKEN=hunter2\n")
    fs.write("src/app.py", "print(1)\n")
    fs.write("src/keys/server.pem", "KEY\n")
    fs.write("logs/a.log", "0123456789")
    fs.rules.set(rules)
    return fs


def node(fs: InMemoryFilesystem, path: str) -> int:
    ino = fs.tree.resolve_path(path)
    assert ino is not None
    return ino


def refused(
    fs: InMemoryFilesystem,
    change: Callable[[], object],
    error: type[OSError],
    code: int,
    rule: Rule,
    path: str,
    action: str,
) -> None:
    """``change`` is refused with ``error``/``code`` naming ``rule``, the tree is as it
    was, and the denial is recorded with its path, action and cause."""
    before = picture(fs)
    seen = len(fs.denials())
    with attributed(CALL), fs.tree.lock, pytest.raises(error) as caught:
        change()
    assert caught.value.errno == code
    assert rule.describe() in str(caught.value), caught.value
    assert picture(fs) == before
    denials = fs.denials()
    assert len(denials) == seen + 1
    denial = denials[-1]
    assert (denial.path, denial.action, denial.rule, denial.errno) == (path, action, rule, code)
    assert denial.cause == CALL
    assert denial.seq == seen + 1


READ_ONLY = Rule(".git")
PEM = Rule("**/*.pem")
HIDDEN = Rule(".env", "hidden")
QUOTA = Rule("logs/**", "quota", quota=16)


def _tree(fs: InMemoryFilesystem) -> Tree:
    return fs.tree


# (name, rule, change, path the denial names, action)
DOORS: list[tuple[str, Rule, Callable[[InMemoryFilesystem], object], str, str]] = [
    ("write", READ_ONLY, lambda fs: fs.write(".git/config", "x"), ".git/config", "write"),
    (
        "append",
        READ_ONLY,
        lambda fs: fs.write(".git/config", "x", mode="append"),
        ".git/config",
        "write",
    ),
    ("create in", READ_ONLY, lambda fs: fs.write(".git/new", "x"), ".git/new", "create"),
    ("create deep", READ_ONLY, lambda fs: fs.write(".git/a/b/c", "x"), ".git/a/b/c", "create"),
    ("mkdir in", READ_ONLY, lambda fs: fs.mkdir(".git/refs/x"), ".git/refs/x", "mkdir"),
    ("delete", READ_ONLY, lambda fs: fs.delete(".git/config"), ".git/config", "unlink"),
    ("delete tree", READ_ONLY, lambda fs: fs.delete(".git", recursive=True), ".git", "delete"),
    (
        "rename from",
        READ_ONLY,
        lambda fs: fs.rename(".git/config", "config"),
        ".git/config",
        "rename",
    ),
    (
        "rename into",
        READ_ONLY,
        lambda fs: fs.rename("src/app.py", ".git/app.py"),
        ".git/app.py",
        "rename",
    ),
    (
        "rename over",
        READ_ONLY,
        lambda fs: fs.rename("src/app.py", ".git/config", replace=True),
        ".git/config",
        "rename",
    ),
    ("rename dir", READ_ONLY, lambda fs: fs.rename(".git", "git"), ".git", "rename"),
    ("rename holder", PEM, lambda fs: fs.rename("src", "lib"), "src/keys/server.pem", "rename"),
    (
        "delete holder",
        PEM,
        lambda fs: fs.delete("src", recursive=True),
        "src/keys/server.pem",
        "delete",
    ),
    (
        "chmod",
        READ_ONLY,
        lambda fs: _tree(fs).setattr(node(fs, ".git/config"), mode=0o600),
        ".git/config",
        "chmod",
    ),
    (
        "chown",
        READ_ONLY,
        lambda fs: _tree(fs).setattr(node(fs, ".git/config"), uid=7),
        ".git/config",
        "chown",
    ),
    (
        "utimes",
        READ_ONLY,
        lambda fs: _tree(fs).setattr(node(fs, ".git/config"), mtime_ns=1),
        ".git/config",
        "setattr",
    ),
    (
        "truncate",
        READ_ONLY,
        lambda fs: _tree(fs).setattr(node(fs, ".git/config"), size=0),
        ".git/config",
        "truncate",
    ),
    (
        "write at",
        READ_ONLY,
        lambda fs: _tree(fs).write(node(fs, ".git/config"), 2, b"zz"),
        ".git/config",
        "write",
    ),
    (
        "fallocate",
        READ_ONLY,
        lambda fs: _tree(fs).fallocate(node(fs, ".git/config"), 0, 0, 64),
        ".git/config",
        "fallocate",
    ),
    (
        "setxattr",
        READ_ONLY,
        lambda fs: _tree(fs).setxattr(node(fs, ".git/config"), b"user.x", b"1"),
        ".git/config",
        "setxattr",
    ),
    (
        "link from",
        READ_ONLY,
        lambda fs: _tree(fs).link(node(fs, ".git/config"), ROOT_INO, "cfg"),
        ".git/config",
        "link",
    ),
    (
        "link into",
        READ_ONLY,
        lambda fs: _tree(fs).link(node(fs, "src/app.py"), node(fs, ".git"), "app"),
        ".git/app",
        "link",
    ),
    (
        "symlink in",
        READ_ONLY,
        lambda fs: _tree(fs).symlink(node(fs, ".git"), "l", "/etc"),
        ".git/l",
        "symlink",
    ),
    (
        "mknod in",
        READ_ONLY,
        lambda fs: _tree(fs).mknod(node(fs, ".git"), "fifo", 0o10644),
        ".git/fifo",
        "mknod",
    ),
    ("rmdir", READ_ONLY, lambda fs: _tree(fs).rmdir(ROOT_INO, "empty"), "empty", "rmdir"),
    (
        "exchange",
        READ_ONLY,
        lambda fs: _tree(fs).rename(ROOT_INO, "src", ROOT_INO, ".git", 2),
        ".git",
        "rename",
    ),
    ("hidden write", HIDDEN, lambda fs: fs.write(".env", "x"), ".env", "create"),
    ("hidden unlink", HIDDEN, lambda fs: _tree(fs).unlink(ROOT_INO, ".env"), ".env", "unlink"),
    (
        "hidden rename into",
        HIDDEN,
        lambda fs: fs.rename("src/app.py", ".env", replace=True),
        ".env",
        "rename",
    ),
    # Not EEXIST: a hidden name is refused as a protected one, never revealed as taken.
    (
        "hidden rename no-replace",
        HIDDEN,
        lambda fs: fs.rename("src/app.py", ".env"),
        ".env",
        "rename",
    ),
    (
        "hidden exchange",
        HIDDEN,
        lambda fs: _tree(fs).rename(ROOT_INO, "src", ROOT_INO, ".env", 2),
        ".env",
        "rename",
    ),
    ("quota create", QUOTA, lambda fs: fs.write("logs/b.log", "x" * 7), "logs/b.log", "create"),
    (
        "quota append",
        QUOTA,
        lambda fs: fs.write("logs/a.log", "x" * 7, mode="append"),
        "logs/a.log",
        "write",
    ),
    ("quota overwrite", QUOTA, lambda fs: fs.write("logs/a.log", "x" * 17), "logs/a.log", "write"),
    (
        "quota truncate up",
        QUOTA,
        lambda fs: _tree(fs).truncate(node(fs, "logs/a.log"), 17),
        "logs/a.log",
        "truncate",
    ),
    ("quota rename into", QUOTA, lambda fs: fs.rename("src", "logs/src"), "logs/src", "rename"),
    (
        "quota link into",
        QUOTA,
        lambda fs: _tree(fs).link(node(fs, "src/app.py"), node(fs, "logs"), "x"),
        "logs/x",
        "link",
    ),
    (
        "quota fallocate",
        QUOTA,
        lambda fs: _tree(fs).fallocate(node(fs, "logs/a.log"), 0, 0, 17),
        "logs/a.log",
        "fallocate",
    ),
]


@pytest.mark.parametrize(
    ("rule", "change", "path", "action"), [d[1:] for d in DOORS], ids=[d[0] for d in DOORS]
)
def test_every_door_refuses(
    rule: Rule, change: Callable[[InMemoryFilesystem], object], path: str, action: str
) -> None:
    fs = workspace()
    fs.mkdir("empty")
    if action == "rmdir":
        rule = Rule("empty")
    fs.rules.set([rule])
    error: type[OSError] = QuotaExceededError if rule.mode == "quota" else AccessDeniedError
    code = errno.EDQUOT if rule.mode == "quota" else errno.EACCES
    refused(fs, lambda: change(fs), error, code, rule, path, action)


def test_refused_write_makes_no_parent_directories() -> None:
    fs = workspace(Rule("deploy/*.yml"), Rule("out/**", "quota", quota=4))
    before = picture(fs)
    with pytest.raises(AccessDeniedError):
        fs.write("deploy/prod.yml", "x")
    with pytest.raises(AccessDeniedError):
        fs.mkdir("deploy/prod.yml/sub")
    with pytest.raises(QuotaExceededError):
        fs.write("out/a/b/c.bin", "12345")
    assert picture(fs) == before
    fs.write("deploy/notes.txt", "ok")  # the directory itself is not covered
    fs.write("out/a/b/c.bin", "1234")


def test_whole_tree_read_only_is_erofs() -> None:
    fs = workspace(Rule("**"))
    for change in (
        lambda: fs.write("new.txt", "x"),
        lambda: fs.tree.setattr(ROOT_INO, mode=0o777),
        lambda: fs.delete("src/app.py"),
    ):
        before = picture(fs)
        with fs.tree.lock, pytest.raises(AccessDeniedError) as caught:
            change()
        assert caught.value.errno == errno.EROFS
        assert picture(fs) == before
    assert fs.read("src/app.py").content == "print(1)\n"  # reads go on


def test_hidden_is_not_there_for_readers() -> None:
    fs = workspace(Rule(".env", "hidden"), Rule("src/keys", "hidden"))
    snapshot = fs.snapshot()
    for view in (fs, fs.at(snapshot)):
        for read in (
            functools.partial(view.read, ".env"),
            functools.partial(view.read_bytes, ".env"),
            functools.partial(view.stat, ".env"),
            functools.partial(view.list, "src/keys"),
            functools.partial(view.read, "src/keys/server.pem"),
            functools.partial(view.entries, "src/keys"),
        ):
            with pytest.raises(NotFoundError):
                read()
        assert not view.exists(".env")
        assert not view.exists("src/keys/server.pem")
        assert ".env" not in {e.name for e in view.list(".")}
        assert {e.name for e in view.list("src")} == {"app.py"}
        everything = {m.path for m in view.glob("**/*")} | {m.path for m in view.glob(".*")}
        assert not everything & {".env", "src/keys", "src/keys/server.pem"}
        assert ".git" in everything
        assert not view.grep("TOKEN|KEY")
        assert [m.path for m in view.grep("print")] == ["src/app.py"]
        assert {e.path for e in view.entries(".")}.isdisjoint({".env", "src/keys"})
    # A link to a hidden path leads nowhere.
    fs.tree.symlink(ROOT_INO, "env-link", ".env")
    with pytest.raises(FileNotFoundError):
        fs.read("env-link")
    fs.rules.clear()
    assert fs.read(".env").content == "TOKEN=hunter2\n"


def test_tool_rules_bind_that_tool_alone() -> None:
    fs = workspace(Rule("src/**", tool="shell"), Rule(".env", "hidden", tool="read_file"))
    with attributed(Cause.call("shell", "toolu_02")), pytest.raises(AccessDeniedError):
        fs.write("src/app.py", "x")
    with attributed(Cause.call("edit_file", "toolu_03")):
        fs.write("src/app.py", "print(2)\n")
    with attributed(Cause.call("read_file", "toolu_04")):
        assert not fs.exists(".env")
    assert fs.exists(".env")  # the owner, no tool
    assert [d.cause for d in fs.denials()] == [Cause.call("shell", "toolu_02")]


def test_workspace_rules_bind_forks_fork_rules_bind_the_fork() -> None:
    fs = workspace()
    early = fs.fork()  # made before the rule: bound all the same
    fs.rules.add(READ_ONLY)
    late = fs.fork()
    for fork in (early, late):
        assert fork.rules.in_force == (READ_ONLY,)
        assert fork.rules.inherited == (READ_ONLY,)
        before = picture(fork)
        with pytest.raises(AccessDeniedError):
            fork.write(".git/config", "x")
        assert picture(fork) == before
        assert fork.denials()[-1].scope == "workspace"
    late.rules.add(Rule("src"))
    with pytest.raises(AccessDeniedError):
        late.write("src/app.py", "x")
    assert late.denials()[-1].scope == "fork"
    fs.write("src/app.py", "print(2)\n")  # the fork's rule binds the fork alone
    early.write("src/app.py", "print(3)\n")
    grandchild = late.fork()
    assert grandchild.rules.in_force == (READ_ONLY, Rule("src"))
    fs.rules.remove(".git")
    assert late.rules.inherited == ()
    for fork in (early, late, grandchild):
        fork.write(".git/config", "ok")
    assert grandchild.rules.in_force == (Rule("src"),)  # type: ignore[comparison-overlap]
    assert not fs.denials()  # each tree keeps its own


def test_a_fork_of_a_dropped_fork_keeps_the_rules_it_inherits() -> None:
    fs = workspace()
    fork = fs.fork()
    fork.rules.add(Rule("src"))
    grandchild = fork.fork()
    del fork
    gc.collect()  # the dropped fork's tree is freed (tests/fs/test_space.py), its rules are not
    assert grandchild.rules.in_force == (Rule("src"),)
    with pytest.raises(AccessDeniedError):
        grandchild.write("src/app.py", "x")
    fs.rules.add(READ_ONLY)  # the workspace's later rules still reach it, through the fork
    assert grandchild.rules.in_force == (READ_ONLY, Rule("src"))  # type: ignore[comparison-overlap]
    with pytest.raises(AccessDeniedError):
        grandchild.write(".git/config", "x")
    fs.rules.clear()
    assert grandchild.rules.in_force == (Rule("src"),)


def test_read_only_fork() -> None:
    fs = workspace()
    fork = fs.fork()
    fork.rules.add(Rule("**"))
    before = picture(fork)
    with pytest.raises(AccessDeniedError) as caught:
        fork.write("src/app.py", "x")
    assert caught.value.errno == errno.EROFS
    assert picture(fork) == before
    fs.write("src/app.py", "print(2)\n")


def test_owner_bulk_changes_are_not_bound() -> None:
    fs = workspace()
    before = fs.snapshot()
    fs.rules.add(READ_ONLY, Rule("logs/**", "quota", quota=1))
    with fs.transaction() as tree:
        tree.unlink(node(fs, ".git"), "config")
    assert not fs.exists(".git/config")
    fs.restore(before)
    assert fs.exists(".git/config")
    assert fs.rules.usage() == {"logs/**": 10}  # recounted after the restore
    with pytest.raises(AccessDeniedError):
        fs.delete(".git/config")


def test_quota_counts_what_its_files_hold() -> None:
    fs = workspace()
    fs.write("logs/sub/b.log", "12345")
    fs.rules.set([Rule("logs/**", "quota", quota=20)])
    assert fs.rules.usage() == {"logs/**": 15}
    fs.write("logs/a.log", "1", mode="append")  # 16
    fs.delete("logs/sub/b.log")  # 11
    fs.rename("src/app.py", "logs/app.py")  # 20
    with pytest.raises(QuotaExceededError) as caught:
        fs.write("logs/c", "x")
    assert "20 B held there" in str(caught.value)
    fs.rename("logs/app.py", "app.py")  # 11: shrinking is always allowed
    fs.write("logs/a.log", "")  # 0
    fs.write("logs/c", "x" * 20)
    assert fs.rules.usage() == {"logs/**": 20}


def test_quota_accounting_matches_a_recount() -> None:
    """Random changes through every counted path; after each, the running count is
    what a walk of the tree finds."""
    rng = random.Random(7)
    fs = InMemoryFilesystem()
    fs.rules.set([Rule("q/**", "quota", quota=1 << 30), Rule("**/*.bin", "quota", quota=1 << 30)])
    tree = fs.tree
    names = ["q/a", "q/b.bin", "x.bin", "q/d/e", "f", "q/d/g.bin"]
    for _ in range(400):
        path = rng.choice(names)
        step = rng.randrange(7)
        try:
            if step == 0:
                fs.write(path, "x" * rng.randrange(50))
            elif step == 1:
                fs.write(path, "y" * rng.randrange(50), mode="append")
            elif step == 2:
                fs.delete(path, recursive=True)
            elif step == 3:
                fs.rename(path, rng.choice(names), replace=True)
            elif step == 4:
                with tree.lock:
                    tree.truncate(node(fs, path), rng.randrange(80))
            elif step == 5:
                with tree.lock:
                    parent = tree.resolve_path(rng.choice(["q", "q/d", ""]))
                    assert parent is not None
                    tree.link(node(fs, path), parent, f"l{rng.randrange(5)}")
            else:
                fs.rename(rng.choice(["q/d", "q", "d"]), rng.choice(["q/d", "d", "q"]))
        except (OSError, AssertionError):
            continue
        counted = fs.rules.usage()
        with tree.lock:
            fs.rules.reset()
        assert fs.rules.usage() == counted


def test_denials_read_after_and_by_path() -> None:
    fs = workspace(READ_ONLY)
    for _ in range(3):
        with pytest.raises(AccessDeniedError):
            fs.write(".git/config", "x")
    with pytest.raises(AccessDeniedError):
        fs.write(".git/hooks/pre-commit", "x")
    assert [d.seq for d in fs.denials(after=2)] == [3, 4]
    assert [d.path for d in fs.denials(".git/hooks")] == [".git/hooks/pre-commit"]
    assert len(fs.denials(".git")) == 4
    assert not fs.denials("src")
    for _ in range(MAX_DENIALS + 5):
        with pytest.raises(AccessDeniedError):
            fs.delete(".git/config")
    kept = fs.denials()
    assert len(kept) == MAX_DENIALS
    assert kept[-1].seq == MAX_DENIALS + 9


def test_denial_causes_keep_no_secrets() -> None:
    fs = workspace(READ_ONLY)
    cause = Cause(pid=4242, command=("curl", "-H", "Authorization: Bearer s3cr3t-token", "x"))
    with attributed(cause), pytest.raises(AccessDeniedError):
        fs.write(".git/config", "x")
    recorded = fs.denials()[-1].cause
    assert recorded is not None
    assert "s3cr3t-token" not in " ".join(recorded.command)


@pytest.mark.parametrize(
    ("pattern", "path", "covered"),
    [
        (".git", "/.git", True),
        (".git", "/.git/objects/ab/cd", True),
        (".git", "/a/.git", False),
        (".git/**", "/.git", True),
        ("**/*.pem", "/a.pem", True),
        ("**/*.pem", "/x/y/.hidden.pem", True),
        ("**/*.pem", "/x.pem.txt", False),
        ("secrets/**", "/secrets/.env", True),
        ("*.env", "/x/.env", False),
        ("*.env", "/.env", True),
        ("/.github/workflows", "/.github/workflows/ci.yml", True),
        ("src/[ab].py", "/src/a.py", True),
        ("src/?.py", "/src/ab.py", False),
        ("**", "", True),
        (".git", "", False),
    ],
)
def test_rule_globs(pattern: str, path: str, covered: bool) -> None:
    assert rule_matcher(pattern)(path) is covered


@pytest.mark.parametrize(
    "make",
    [
        lambda: Rule("a", "forbidden"),  # type: ignore[arg-type]
        lambda: Rule("a", "quota"),
        lambda: Rule("a", quota=3),
        lambda: Rule("a", "quota", quota=-1),
        lambda: Rule("../a"),
        lambda: Rule(""),
        lambda: Rule("/"),
        lambda: Rule("a", tool=""),
    ],
)
def test_bad_rules_are_refused(make: Callable[[], Rule]) -> None:
    with pytest.raises(ValueError) as caught:
        make()
    assert isinstance(caught.value, OSError)
    assert caught.value.errno == errno.EINVAL


def test_rules_set_refuses_what_is_no_rule() -> None:
    fs = workspace(READ_ONLY)
    with pytest.raises(InvalidArgumentError):
        fs.rules.set([READ_ONLY, ".env"])  # type: ignore[list-item]
    assert fs.rules.own == (READ_ONLY,)


def test_patterns_under_the_mount_point_are_taken_as_the_tools_take_paths() -> None:
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.write("/workspace/.git/config", "x")
    assert fs.rules.add(Rule("/workspace/.git"), Rule("/.env", "hidden")) == (
        Rule(".git"),
        Rule("/.env", "hidden"),
    )
    with pytest.raises(AccessDeniedError):
        fs.write("/workspace/.git/config", "y")


def test_no_rules_no_guard() -> None:
    fs = workspace()
    assert fs.tree.guard is None
    fs.rules.add(READ_ONLY)
    assert fs.tree.guard is fs.rules
    fs.rules.clear()
    assert fs.tree.guard is None
