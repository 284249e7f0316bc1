"""Confined access below a tier root: no path, symlink or special file leads outside."""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from sidecar.disk.tiers import (
    UnsafePath,
    is_indexable_name,
    open_confined,
    read_confined,
    split_relative,
    walk_markdown,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A tier with plain files, and symlinks into and out of it."""
    r = tmp_path / "tier"
    (r / "daily").mkdir(parents=True)
    (r / "topics" / "deep").mkdir(parents=True)
    (r / "AGENT.md").write_text("agent\n", encoding="utf-8")
    (r / "daily" / "today.md").write_text("today\n", encoding="utf-8")
    (r / "topics" / "deep" / "nested.md").write_text("nested\n", encoding="utf-8")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.md").write_text("secret\n", encoding="utf-8")
    (outside / "sub" / "secret2.md").write_text("secret2\n", encoding="utf-8")
    os.symlink("AGENT.md", r / "leaf_link.md")  # symlinked file, inside
    os.symlink(outside / "secret.md", r / "escape.md")  # symlinked file, outside
    os.symlink("daily", r / "dir_link")  # symlinked directory, inside
    os.symlink(outside, r / "escape_dir")  # symlinked directory, outside
    os.symlink("missing.md", r / "dangling.md")
    return r


def read_fd(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


# -- split_relative ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "parts"),
    [
        ("AGENT.md", ["AGENT.md"]),
        ("daily/2026-11-21.md", ["daily", "2026-11-21.md"]),
        ("a/b/c/d.md", ["a", "b", "c", "d.md"]),
        ("..hidden/x.md", ["..hidden", "x.md"]),
        ("a.../b", ["a...", "b"]),
        ("ünïcode/日本.md", ["ünïcode", "日本.md"]),
    ],
)
def test_split_relative_accepts_plain_relative_paths(rel: str, parts: list[str]) -> None:
    assert split_relative(rel) == parts


@pytest.mark.parametrize(
    "rel",
    [
        "",
        "/",
        "/etc/passwd",
        "//x.md",
        "..",
        "../x.md",
        "a/../b.md",
        "a/..",
        ".",
        "./a.md",
        "a/./b.md",
        "a/.",
        "a//b.md",
        "a/",
        "a\\b.md",
        "..\\x.md",
        "\\",
        "a\x00b.md",
        "\x00",
    ],
)
def test_split_relative_rejects_unsafe_paths(rel: str) -> None:
    with pytest.raises(UnsafePath):
        split_relative(rel)
    assert issubclass(UnsafePath, ValueError)


def test_indexable_names() -> None:
    assert is_indexable_name("AGENT.md")
    assert not is_indexable_name(".draft.md")
    assert not is_indexable_name("notes.txt")
    assert not is_indexable_name("x.md.swp")


# -- open_confined ----------------------------------------------------------------------


def test_open_confined_opens_plain_files(root: Path) -> None:
    assert read_fd(open_confined(root, "AGENT.md")) == b"agent\n"
    assert read_fd(open_confined(root, "topics/deep/nested.md")) == b"nested\n"


def test_open_confined_can_create_inside(root: Path) -> None:
    fd = open_confined(root, "daily/new.md", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"created\n")
    assert (root / "daily" / "new.md").read_bytes() == b"created\n"


@pytest.mark.parametrize("rel", ["leaf_link.md", "escape.md", "dangling.md"])
def test_open_confined_refuses_a_symlinked_leaf(root: Path, rel: str) -> None:
    with pytest.raises(OSError) as exc:
        open_confined(root, rel)
    assert exc.value.errno in (errno.ELOOP, errno.ENOTDIR)


@pytest.mark.parametrize("rel", ["dir_link/today.md", "escape_dir/secret.md"])
def test_open_confined_refuses_a_symlinked_parent(root: Path, rel: str) -> None:
    with pytest.raises(OSError) as exc:
        open_confined(root, rel)
    assert exc.value.errno in (errno.ELOOP, errno.ENOTDIR)


def test_open_confined_refuses_a_symlinked_grandparent(root: Path) -> None:
    with pytest.raises(OSError):
        open_confined(root, "escape_dir/sub/secret2.md")


def test_open_confined_never_writes_through_a_symlink(root: Path, tmp_path: Path) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    with pytest.raises(OSError):
        open_confined(root, "escape.md", flags)
    with pytest.raises(OSError):
        open_confined(root, "escape_dir/planted.md", flags)
    with pytest.raises(OSError):
        open_confined(root, "dangling.md", flags)
    assert (tmp_path / "outside" / "secret.md").read_bytes() == b"secret\n"
    assert not (tmp_path / "outside" / "planted.md").exists()
    assert not (root / "missing.md").exists()


def test_open_confined_missing_file(root: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_confined(root, "nope.md")
    with pytest.raises(FileNotFoundError):
        open_confined(root, "nodir/nope.md")


def test_open_confined_through_a_file_is_not_a_directory(root: Path) -> None:
    with pytest.raises(NotADirectoryError):
        open_confined(root, "AGENT.md/x.md")


@pytest.mark.parametrize("rel", ["../outside/secret.md", "/etc/hostname", "a\\b", ""])
def test_open_confined_rejects_unsafe_paths(root: Path, rel: str) -> None:
    with pytest.raises(UnsafePath):
        open_confined(root, rel)


# -- read_confined -----------------------------------------------------------------------


def test_read_confined_returns_bytes_and_stat(root: Path) -> None:
    got = read_confined(root, "daily/today.md")
    assert got is not None
    data, st = got
    assert data == b"today\n"
    assert stat.S_ISREG(st.st_mode)
    assert st.st_size == 6
    assert st.st_ino == (root / "daily" / "today.md").stat().st_ino


@pytest.mark.parametrize(
    "rel",
    [
        "leaf_link.md",
        "escape.md",
        "dangling.md",
        "dir_link/today.md",
        "escape_dir/secret.md",
        "escape_dir/sub/secret2.md",
        "missing.md",
        "nodir/missing.md",
        "AGENT.md/x.md",
        "daily",
    ],
)
def test_read_confined_returns_none_for_what_is_not_a_plain_file_inside(
    root: Path, rel: str
) -> None:
    assert read_confined(root, rel) is None


def test_read_confined_does_not_block_on_a_fifo(root: Path) -> None:
    fifo = root / "pipe.md"
    os.mkfifo(fifo)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(read_confined(root, "pipe.md")))
    reader.daemon = True
    reader.start()
    reader.join(timeout=2)
    blocked = reader.is_alive()
    if blocked:
        # Release the reader stuck in open(): a writer appearing lets it continue.
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as exc:
            assert exc.errno == errno.ENXIO  # it finished meanwhile
        reader.join()
    assert not blocked, "read_confined blocked in open() on a FIFO waiting for a writer"
    assert got == [None]


# -- walk_markdown --------------------------------------------------------------------------


def walked(root: Path, sub: str = "") -> list[str]:
    return sorted(rel for rel, _ in walk_markdown(root, sub))


def assert_inside(root: Path, rels: list[str]) -> None:
    real_root = root.resolve()
    for rel in rels:
        split_relative(rel)
        assert (root / rel).resolve().is_relative_to(real_root), rel
        path = root
        for part in rel.split("/"):
            path = path / part
            assert not path.is_symlink(), rel


def test_walk_markdown_yields_plain_files_only(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "x.md").write_text("x", encoding="utf-8")
    (root / ".draft.md").write_text("x", encoding="utf-8")
    (root / "notes.txt").write_text("x", encoding="utf-8")
    os.mkfifo(root / "pipe.md")
    got = list(walk_markdown(root))
    assert sorted(rel for rel, _ in got) == [
        "AGENT.md",
        "daily/today.md",
        "topics/deep/nested.md",
    ]
    for rel, st in got:
        assert stat.S_ISREG(st.st_mode)
        assert st.st_ino == (root / rel).lstat().st_ino
    assert_inside(root, [rel for rel, _ in got])


def test_walk_markdown_of_a_subdirectory(root: Path) -> None:
    assert walked(root, "topics") == ["topics/deep/nested.md"]
    assert walked(root, "topics/deep") == ["topics/deep/nested.md"]


@pytest.mark.parametrize(
    "sub", ["dir_link", "escape_dir", "escape_dir/sub", "missing", "AGENT.md", "leaf_link.md"]
)
def test_walk_markdown_never_follows_links_or_non_directories(root: Path, sub: str) -> None:
    assert walked(root, sub) == []


@pytest.mark.parametrize("sub", ["../outside", "../outside/sub", "/", "/tmp"])
def test_walk_markdown_never_leaves_the_root(root: Path, sub: str) -> None:
    try:
        got = walked(root, sub)
    except ValueError:
        got = []  # refusing the path outright is fine too
    assert got == []


def test_walk_markdown_with_a_link_to_the_root_itself(root: Path) -> None:
    os.symlink(root, root / "loop")
    os.symlink("..", root / "daily" / "up")
    assert walked(root) == ["AGENT.md", "daily/today.md", "topics/deep/nested.md"]


def test_walk_markdown_of_a_missing_root(tmp_path: Path) -> None:
    assert walked(tmp_path / "nope") == []
