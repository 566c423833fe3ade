"""``FilesystemProtocolTests``: the protocol-compliance suite every backend runs.

Mix it into a pytest test class and implement ``create_filesystem``, either as
the seeds write it, an empty filesystem that the suite fills through
``write_bytes``::

    class TestMyBackend(FilesystemProtocolTests):
        def create_filesystem(self):
            return MyBackend()

or taking the files to hold (a backend that cannot be written through the
protocol, such as a read-only one, must)::

    class TestMyBackend(FilesystemProtocolTests):
        def create_filesystem(self, files):
            return MyBackend.holding(files)

Set ``read_only = True`` for a read-only backend (a snapshot view, a
read-only mount): every write must then raise PermissionError and change
nothing, while every read behaves as on a writable backend.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

from .._errors import ContentChangedError
from ..fs import Filesystem, content_digest

Files = Mapping[str, str | bytes]

TREE: Files = {
    "README.md": "# project\nhello world\n",
    "src/app.py": "import os\n\ndef main():\n    print('hello')\n",
    "src/util/helpers.py": "def helper():\n    return 42\n",
    "src/util/data.bin": b"\x00\x01\x02binary\xff",
    "docs/guide.txt": "line one\nline two\nline three",
    "empty.txt": "",
}


def _state(fs: Filesystem) -> dict[str, bytes | None]:
    """Every path below the root with its content (None for directories)."""
    state: dict[str, bytes | None] = {}
    pending = ["."]
    while pending:
        for entry in fs.list(pending.pop()):
            if entry.is_directory:
                state[entry.path] = None
                pending.append(entry.path)
            else:
                state[entry.path] = fs.read_bytes(entry.path).content
    return state


class FilesystemProtocolTests:
    """The behaviour every ``Filesystem`` backend must show."""

    read_only: ClassVar[bool] = False

    def create_filesystem(self, files: Files) -> Filesystem:
        """Return the filesystem under test, holding exactly ``files``; or, defined
        without the argument, an empty one (the suite writes the files)."""
        raise NotImplementedError

    # -- helpers -------------------------------------------------------------

    def fs(self, files: Files = TREE) -> Filesystem:
        """The filesystem under test with ``files`` (the sample tree by default)."""
        if inspect.signature(self.create_filesystem).parameters:
            return self.create_filesystem(files)
        fs: Filesystem = self.create_filesystem()  # type: ignore[call-arg]
        for path, content in files.items():
            fs.write_bytes(path, content if isinstance(content, bytes) else content.encode())
        return fs

    def check_write(
        self, fs: Filesystem, action: Callable[[], Any], expected: type[BaseException] | None = None
    ) -> bool:
        """Run a write: on read-only backends expect PermissionError and no change.

        Returns True if the write ran (so the caller goes on to check it).
        """
        if self.read_only:
            # A write that would fail anyway may fail for that reason first, as
            # the kernel's checks on a read-only mount do (ENOENT before EROFS).
            refused = PermissionError if expected is None else (PermissionError, expected)
            before = _state(fs)
            with pytest.raises(refused):
                action()
            assert _state(fs) == before
            return False
        if expected is not None:
            before = _state(fs)
            with pytest.raises(expected):
                action()
            assert _state(fs) == before, "a failed write changed the filesystem"
            return False
        action()
        return True

    # -- properties ----------------------------------------------------------

    def test_properties(self) -> None:
        fs = self.fs()
        assert isinstance(fs, Filesystem)
        assert isinstance(fs.root, str)
        assert fs.read_only is self.read_only

    # -- read ----------------------------------------------------------------

    def test_read_text(self) -> None:
        result = self.fs().read("README.md")
        assert result.content == "# project\nhello world\n"
        assert result.path == "README.md"
        assert result.total_lines == 2
        assert (result.offset, result.truncated) == (0, False)

    def test_read_pagination(self) -> None:
        fs = self.fs()
        page = fs.read("docs/guide.txt", offset=1, limit=1)
        assert page.content == "line two\n"
        assert page.total_lines == 3
        assert page.truncated
        last = fs.read("docs/guide.txt", offset=2, limit=5)
        assert last.content == "line three"
        assert not last.truncated
        assert fs.read("docs/guide.txt", offset=10).content == ""

    def test_read_lines(self) -> None:
        fs = self.fs({**TREE, "crlf.txt": "a\r\n\r\nb"})
        assert fs.read("README.md").lines == ("# project", "hello world")
        assert fs.read("docs/guide.txt", offset=1).lines == ("line two", "line three")
        assert fs.read("crlf.txt").lines == ("a\r", "\r", "b")
        assert fs.read("empty.txt").lines == ()

    def test_read_default_limit_truncates(self) -> None:
        fs = self.fs({"big.txt": "".join(f"{i}\n" for i in range(2500))})
        result = fs.read("big.txt")
        assert result.limit == 2000
        assert result.truncated
        assert result.content.count("\n") == 2000
        assert result.total_lines == 2500

    def test_read_empty_file(self) -> None:
        result = self.fs().read("empty.txt")
        assert (result.content, result.total_lines, result.truncated) == ("", 0, False)

    def test_read_missing(self) -> None:
        with pytest.raises(FileNotFoundError):
            self.fs().read("nope.txt")

    def test_read_directory(self) -> None:
        with pytest.raises(IsADirectoryError):
            self.fs().read("src")

    def test_read_binary_as_text_is_value_error(self) -> None:
        with pytest.raises(ValueError, match="read_bytes"):
            self.fs().read("src/util/data.bin")

    def test_read_bad_arguments(self) -> None:
        fs = self.fs()
        with pytest.raises(ValueError):
            fs.read("README.md", offset=-1)
        with pytest.raises(ValueError):
            fs.read("README.md", limit=0)

    def test_read_bytes(self) -> None:
        fs = self.fs()
        whole = fs.read_bytes("src/util/data.bin")
        assert whole.content == b"\x00\x01\x02binary\xff"
        assert whole.size_bytes == 10
        assert not whole.truncated
        part = fs.read_bytes("src/util/data.bin", offset=3, limit=6)
        assert part.content == b"binary"
        assert part.truncated
        assert fs.read_bytes("src/util/data.bin", offset=100).content == b""

    def test_absolute_paths(self) -> None:
        fs = self.fs()
        if fs.mount_point is None:  # "/" is the root
            assert fs.read("/README.md").content.startswith("# project")
            return
        assert fs.read(f"{fs.mount_point}/README.md").content.startswith("# project")
        assert fs.read(f"{fs.mount_point}/src/../README.md").path == "README.md"
        with pytest.raises(PermissionError):
            fs.read("/etc/passwd")
        with pytest.raises(PermissionError):
            fs.read(f"{fs.mount_point}-other/README.md")

    # -- exists / stat / list --------------------------------------------------

    def test_exists(self) -> None:
        fs = self.fs()
        assert fs.exists("README.md")
        assert fs.exists("src/util")
        assert fs.exists(".")
        assert not fs.exists("missing")
        assert not fs.exists("README.md/child")

    def test_stat(self) -> None:
        fs = self.fs()
        info = fs.stat("src/app.py")
        assert info.is_file
        assert not info.is_directory
        assert info.size_bytes == len(TREE["src/app.py"])
        assert info.modified_at is not None
        folder = fs.stat("src")
        assert folder.is_directory
        assert not folder.is_file
        with pytest.raises(FileNotFoundError):
            fs.stat("missing")

    def test_readlink_of_what_is_no_link(self) -> None:
        fs = self.fs()
        for path in ("src/app.py", "src"):
            with pytest.raises(ValueError, match="not a symlink"):
                fs.readlink(path)
        with pytest.raises(FileNotFoundError):
            fs.readlink("missing")

    def test_list(self) -> None:
        fs = self.fs()
        entries = fs.list()
        assert [e.name for e in entries] == ["README.md", "docs", "empty.txt", "src"]
        src = {e.name: e for e in fs.list("src")}
        assert src["app.py"].is_file
        assert src["util"].is_directory
        assert src["util"].path == "src/util"

    def test_list_errors(self) -> None:
        fs = self.fs()
        with pytest.raises(FileNotFoundError):
            fs.list("missing")
        with pytest.raises(NotADirectoryError):
            fs.list("README.md")

    # -- glob / grep -----------------------------------------------------------

    def test_glob(self) -> None:
        fs = self.fs()
        assert [m.path for m in fs.glob("**/*.py")] == ["src/app.py", "src/util/helpers.py"]
        assert [m.path for m in fs.glob("*.md")] == ["README.md"]
        assert [m.path for m in fs.glob("*.py", path="src")] == ["src/app.py"]
        dirs = fs.glob("src/*")
        assert {(m.path, m.is_file) for m in dirs} == {("src/app.py", True), ("src/util", False)}
        assert fs.glob("*.nothing") == []

    def test_grep(self) -> None:
        fs = self.fs()
        matches = fs.grep("hello")
        assert [(m.path, m.line_number) for m in matches] == [("README.md", 2), ("src/app.py", 4)]
        first = matches[0]
        assert first.line_content == "hello world"
        assert (first.match_start, first.match_end) == (0, 5)

    def test_grep_filters(self) -> None:
        fs = self.fs()
        assert [m.path for m in fs.grep("def", glob="*.py")] == [
            "src/app.py",
            "src/util/helpers.py",
        ]
        assert [m.path for m in fs.grep("def", path="src/util")] == ["src/util/helpers.py"]
        assert [m.path for m in fs.grep("def", path="src/app.py")] == ["src/app.py"]
        assert len(fs.grep("line", max_matches=2)) == 2
        assert fs.grep("binary") == []  # binary files are skipped

    def test_grep_bad_pattern(self) -> None:
        fs = self.fs()
        with pytest.raises(ValueError):
            fs.grep("(unclosed")
        with pytest.raises(ValueError):
            fs.grep("x", max_matches=0)
        # Past the cap, a cap: as many as the limit allows, no error.
        assert len(fs.grep("line", max_matches=10**9)) == 3

    def test_grep_catastrophic_pattern_finishes(self) -> None:
        fs = self.fs({"evil.txt": "a" * 5000 + "!"})
        assert fs.grep(r"(a+)+$") == []  # exponential for a backtracking engine

    # -- write -----------------------------------------------------------------

    def test_write_and_read_back(self) -> None:
        fs = self.fs()
        if self.check_write(fs, lambda: fs.write("new/dir/file.txt", "content\n")):
            assert fs.read("new/dir/file.txt").content == "content\n"
            assert fs.stat("new/dir").is_directory

    def test_write_result(self) -> None:
        fs = self.fs()
        if self.read_only:
            self.check_write(fs, lambda: fs.write("x.txt", "é"))
            return
        result = fs.write("x.txt", "é", mode="create")
        assert (result.path, result.bytes_written, result.mode) == ("x.txt", 2, "create")

    def test_write_modes(self) -> None:
        fs = self.fs()
        if not self.check_write(fs, lambda: fs.write("README.md", "new", mode="overwrite")):
            return
        assert fs.read("README.md").content == "new"
        fs.write("README.md", "+more", mode="append")
        assert fs.read("README.md").content == "new+more"
        self.check_write(fs, lambda: fs.write("README.md", "x", mode="create"), FileExistsError)
        fs.write("fresh.txt", "a", mode="append")
        assert fs.read("fresh.txt").content == "a"

    def test_write_without_parents(self) -> None:
        fs = self.fs()
        self.check_write(
            fs, lambda: fs.write("no/such/dir.txt", "x", create_parents=False), FileNotFoundError
        )

    def test_write_onto_directory(self) -> None:
        fs = self.fs()
        self.check_write(fs, lambda: fs.write("src", "x"), IsADirectoryError)

    def test_write_under_a_file(self) -> None:
        fs = self.fs()
        self.check_write(fs, lambda: fs.write("README.md/child.txt", "x"), NotADirectoryError)

    def test_write_too_large(self) -> None:
        fs = self.fs()
        self.check_write(fs, lambda: fs.write("big.txt", "x" * 48_001), ValueError)

    def test_write_invalid_utf8(self) -> None:
        fs = self.fs()
        self.check_write(fs, lambda: fs.write("bad.txt", "\udcff"), ValueError)

    def test_write_bytes(self) -> None:
        fs = self.fs()
        data = bytes(range(256)) * 300
        if self.check_write(fs, lambda: fs.write_bytes("blob.bin", data)):
            assert fs.read_bytes("blob.bin").content == data
            fs.write_bytes("blob.bin", b"tail", mode="append")
            assert fs.read_bytes("blob.bin").content == data + b"tail"

    def test_conditional_write(self) -> None:
        fs = self.fs()
        seen = content_digest(fs.read_bytes("src/app.py").content)
        if not self.check_write(fs, lambda: fs.write("src/app.py", "v2\n", if_match=seen)):
            return
        assert fs.read("src/app.py").content == "v2\n"
        # The digest read before is stale now: refused, and nothing is written.
        for write in (
            lambda: fs.write("src/app.py", "v3\n", if_match=seen),
            lambda: fs.write_bytes("src/app.py", b"v3\n", if_match=seen),
            lambda: fs.write("src/app.py", "+v3\n", mode="append", if_match=seen),
            lambda: fs.write("gone.txt", "v3\n", if_match=seen),  # not there
            lambda: fs.write("no/dir/gone.txt", "v3\n", if_match=seen),  # nor its directory
            lambda: fs.write("src/util", "v3\n", if_match=seen),  # not a file
        ):
            self.check_write(fs, write, ContentChangedError)
        now = content_digest(b"v2\n")
        fs.write_bytes("src/app.py", b"+", mode="append", if_match=now)
        assert fs.read("src/app.py").content == "v2\n+"
        self.check_write(
            fs, lambda: fs.write("new.txt", "x", mode="create", if_match=now), ValueError
        )

    def test_conditional_change_with_no_token(self) -> None:
        fs = self.fs()
        digest = content_digest(fs.read_bytes("src/app.py").content).partition(":")[2]
        for token in ("", "not a token", digest):  # a bare SHA-256 is no token either
            write = functools.partial(fs.write, "src/app.py", "v2\n", if_match=token)
            delete = functools.partial(fs.delete, "src/app.py", if_match=token)
            self.check_write(fs, write, ValueError)
            self.check_write(fs, delete, ValueError)

    def test_conditional_delete(self) -> None:
        fs = self.fs()
        seen = content_digest(fs.read_bytes("README.md").content)
        stale = content_digest(b"what it held before")
        self.check_write(fs, lambda: fs.delete("README.md", if_match=stale), ContentChangedError)
        self.check_write(
            fs, lambda: fs.delete("src", recursive=True, if_match=seen), ContentChangedError
        )
        self.check_write(fs, lambda: fs.delete("gone.txt", if_match=seen), ContentChangedError)
        if self.check_write(fs, lambda: fs.delete("README.md", if_match=seen)):
            assert not fs.exists("README.md")

    # -- delete / mkdir --------------------------------------------------------

    def test_delete_file(self) -> None:
        fs = self.fs()
        if self.check_write(fs, lambda: fs.delete("README.md")):
            assert not fs.exists("README.md")

    def test_delete_directory(self) -> None:
        fs = self.fs()
        self.check_write(fs, lambda: fs.delete("src"), IsADirectoryError)
        if self.check_write(fs, lambda: fs.delete("src", recursive=True)):
            assert not fs.exists("src")
            assert not fs.exists("src/util/helpers.py")
            assert fs.exists("README.md")

    def test_delete_missing(self) -> None:
        fs = self.fs()
        self.check_write(fs, lambda: fs.delete("missing.txt"), FileNotFoundError)

    def test_delete_root_refused(self) -> None:
        fs = self.fs()
        self.check_write(fs, lambda: fs.delete(".", recursive=True), PermissionError)

    def test_mkdir(self) -> None:
        fs = self.fs()
        if not self.check_write(fs, lambda: fs.mkdir("a/b/c")):
            return
        assert fs.stat("a/b/c").is_directory
        fs.mkdir("a/b/c")  # exist_ok by default
        self.check_write(fs, lambda: fs.mkdir("a/b/c", exist_ok=False), FileExistsError)
        self.check_write(fs, lambda: fs.mkdir("x/y", parents=False), FileNotFoundError)
        self.check_write(fs, lambda: fs.mkdir("README.md"), FileExistsError)

    # -- rename ----------------------------------------------------------------

    def test_rename_file_and_directory(self) -> None:
        fs = self.fs()
        if not self.check_write(fs, lambda: fs.rename("README.md", "docs/README.md")):
            return
        assert not fs.exists("README.md")
        assert fs.read("docs/README.md").content == "# project\nhello world\n"
        fs.rename("src/util", "lib")
        assert fs.read("lib/helpers.py").content == "def helper():\n    return 42\n"
        assert fs.read_bytes("lib/data.bin").content == b"\x00\x01\x02binary\xff"
        assert [entry.name for entry in fs.list("src")] == ["app.py"]
        fs.rename("empty.txt", "empty.txt")  # to itself: nothing happens
        assert fs.exists("empty.txt")

    def test_rename_refusals_change_nothing(self) -> None:
        fs = self.fs()
        for source, target, error in (
            ("README.md", "src/app.py", FileExistsError),
            ("src", "docs", FileExistsError),
            ("missing.txt", "x.txt", FileNotFoundError),
            ("README.md", "missing/x.md", FileNotFoundError),
            ("src", "src/util/inner", ValueError),
            ("README.md", "../outside.md", PermissionError),
            (".", "elsewhere", PermissionError),
        ):
            rename = functools.partial(fs.rename, source, target)
            self.check_write(fs, rename, error)

    def test_rename_replace(self) -> None:
        fs = self.fs()
        replace = functools.partial(fs.rename, replace=True)
        self.check_write(fs, lambda: replace("README.md", "docs"), IsADirectoryError)
        self.check_write(fs, lambda: replace("docs", "README.md"), NotADirectoryError)
        self.check_write(fs, lambda: replace("src", "docs"), OSError)  # docs is not empty
        if self.check_write(fs, lambda: replace("README.md", "src/app.py")):
            assert not fs.exists("README.md")
            assert fs.read("src/app.py").content == "# project\nhello world\n"

    # -- bad paths -------------------------------------------------------------

    @pytest.mark.parametrize(
        "path", ["../outside.txt", "src/../../outside.txt", "/../etc/passwd", "a/../../b"]
    )
    def test_escaping_paths_refused(self, path: str) -> None:
        fs = self.fs()
        with pytest.raises(PermissionError):
            fs.read(path)
        self.check_write(fs, lambda: fs.write(path, "x"), PermissionError)

    def test_nul_byte_refused(self) -> None:
        fs = self.fs()
        with pytest.raises(ValueError):
            fs.read("README\0.md")
        self.check_write(fs, lambda: fs.write("a\0b", "x"), ValueError)

    def test_path_limits(self) -> None:
        fs = self.fs()
        deep = "/".join(["d"] * 17) + "/f.txt"
        self.check_write(fs, lambda: fs.write(deep, "x"), ValueError)
        self.check_write(fs, lambda: fs.write("n" * 81, "x"), ValueError)

    def test_dot_segments_normalised(self) -> None:
        fs = self.fs()
        assert fs.read("./src/../README.md").path == "README.md"
        assert fs.read("src//app.py").path == "src/app.py"
