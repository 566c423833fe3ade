"""Shell tools on the mount, as an agent runs them, compared with a kernel filesystem."""

from __future__ import annotations

import hashlib
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from .conftest import Mounted
from .treestate import tree_state

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Agent",
    "GIT_AUTHOR_EMAIL": "agent@example.invalid",
    "GIT_COMMITTER_NAME": "Agent",
    "GIT_COMMITTER_EMAIL": "agent@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}

SCRIPTS = {
    "redirections": """
        printf 'hello\\n' > a.txt
        echo more >> a.txt
        cat a.txt a.txt > b.txt
        : > empty.txt
        echo err 2> errors.txt 1>&2
        wc -l < b.txt
        ls -la | wc -l
    """,
    "cp_mv_links": """
        mkdir -p src/pkg
        for i in $(seq 1 30); do printf 'def f%s():\\n    return %s\\n' $i $i > src/pkg/m$i.py; done
        chmod 755 src/pkg/m1.py
        ln -s m2.py src/pkg/alias.py
        ln src/pkg/m3.py src/pkg/hard.py
        cp -a src copy
        mv copy moved
        mv moved/pkg/m4.py moved/m4.py
        cp -r src/pkg moved/pkg2
        rm -rf moved/pkg2
        stat -c '%h %a %F' src/pkg/m3.py src/pkg/m1.py moved/pkg/alias.py
    """,
    "tar_find_grep_sed": """
        mkdir -p proj/a/b proj/c
        for i in $(seq 1 40); do echo "line $i needle$((i % 7))" > proj/a/b/f$i.txt; done
        echo 'needle3 at top' > proj/c/top.txt
        tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf archive.tar proj
        mkdir out && tar -xf archive.tar -C out
        tar -tf archive.tar | sort | head -5
        find . -name '*.txt' | sort | wc -l
        find out -type d | sort
        grep -rn needle3 proj | sort
        sed -i 's/needle/pin/' proj/a/b/f1.txt out/proj/c/top.txt
        cat proj/a/b/f1.txt out/proj/c/top.txt
        rm -rf proj
        find . -maxdepth 1 | sort
    """,
    "git": """
        git init -q -b main repo
        cd repo
        printf 'one\\n' > file.txt
        mkdir -p dir && printf 'x\\n' > dir/x.txt
        git add -A
        git commit -qm first
        printf 'two\\n' >> file.txt
        git status --porcelain
        git commit -qam second
        git log --oneline | wc -l
        git checkout -q HEAD~1
        cat file.txt
        git checkout -q main
        cat file.txt
        git rm -q dir/x.txt
        git commit -qm third
        git status --porcelain
        git gc -q
        git fsck --strict 2>&1 | grep -v '^Checking' || true
        git log --format=%H%n%s
    """,
    "python": """
        mkdir -p lib/pkg
        printf 'VALUE = 42\\n' > lib/pkg/__init__.py
        printf 'from pkg import VALUE\\nprint(VALUE)\\n' > lib/main.py
        python3 -m compileall -q --invalidation-mode checked-hash lib
        find lib -name '*.pyc' | sort
        PYTHONPATH=lib python3 lib/main.py
    """,
    "sqlite": """
        python3 - <<'PY'
import sqlite3
db = sqlite3.connect("app.db")
db.execute("create table t (id integer primary key, name text)")
with db:
    db.executemany("insert into t (name) values (?)", [(f"n{i}",) for i in range(500)])
try:
    with db:
        db.execute("insert into t (name) values ('rolled back')")
        raise RuntimeError
except RuntimeError:
    pass
db.execute("pragma journal_mode=wal")
with db:
    db.execute("update t set name = 'changed' where id < 10")
db.execute("vacuum")
print(db.execute("select count(*), sum(name = 'changed') from t").fetchone())
db.close()
PY
        sqlite3 app.db 'pragma integrity_check; select count(*) from t;'
        printf 'begin; delete from t; rollback;\n' | sqlite3 app.db
        sqlite3 app.db 'select count(*) from t'
        rm -f app.db-wal app.db-shm
    """,
}

# Files whose bytes record inode numbers, device ids or times of the host filesystem.
IGNORED = ("repo/.git/index",)


def run(script: str, cwd: Path) -> str:
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", textwrap.dedent(script)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        timeout=120,
    )
    assert result.returncode == 0, f"{cwd}: {result.stderr}"
    return (result.stdout + result.stderr).replace(str(cwd), "<root>")


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_tool_behaves_as_on_a_kernel_filesystem(
    name: str, mounted: Mounted, plain_dir: Path
) -> None:
    expected = run(SCRIPTS[name], plain_dir)
    got = run(SCRIPTS[name], mounted.root)
    assert got == expected
    assert tree_state(mounted.root, ignore=IGNORED) == tree_state(plain_dir, ignore=IGNORED)
    # The API sees exactly what the tools left behind.
    kernel = {p: e[3] for p, e in tree_state(mounted.root).items() if e[0] == "file"}
    assert api_files(mounted) == kernel


def api_files(mounted: Mounted) -> dict[str, str]:
    """Path -> sha256 of every regular file, read through the Python API."""
    files: dict[str, str] = {}
    pending = ["."]
    while pending:
        for entry in mounted.fs.list(pending.pop()):
            if entry.is_symlink:
                continue
            if entry.is_directory:
                pending.append(entry.path)
            elif entry.is_file:
                content = mounted.fs.read_bytes(entry.path).content
                files[entry.path] = hashlib.sha256(content).hexdigest()
    return files
