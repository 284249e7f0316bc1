"""Reconciling an index with the markdown files of a tier, on real files."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.index.indexer import SyncResult, load_tree, sync_file, sync_tree
from sidecar.stores.sqlite import SQLiteStore

OLD_NS = 1_600_000_000 * 10**9  # September 2020: far outside the racy window


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "tier"
    r.mkdir()
    return r


@pytest.fixture
def store(root: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(root / "index.sqlite")
    try:
        yield s
    finally:
        s.close()


def write(root: Path, rel: str, content: str | bytes, mtime_ns: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def found(store: SQLiteStore, word: str) -> list[str]:
    return sorted({h.path for h in store.search(f'"{word}"', 50)})


def counts(r: SyncResult) -> tuple[int, int, int]:
    return r.indexed, r.removed, r.unchanged


TREE = {
    "AGENT.md": "# Agent\nalpha notes\n",
    "daily/2026-11-21.md": "# Day\nbravo notes\n",
    "topics/deep/nested/place.md": "# Deep\ncharlie notes\n",
    "dir.md/inner.md": "# Inner\ndelta notes\n",
}


def make_tree(root: Path, mtime_ns: int | None = None) -> None:
    for rel, text in TREE.items():
        write(root, rel, text, mtime_ns)


# -- what gets indexed ----------------------------------------------------------


def test_sync_tree_indexes_every_markdown_file(store: SQLiteStore, root: Path) -> None:
    make_tree(root)
    assert counts(sync_tree(store, root)) == (4, 0, 0)
    assert sorted(store.file_states()) == sorted(TREE)
    for rel, word in zip(TREE, ["alpha", "bravo", "charlie", "delta"], strict=True):
        assert found(store, word) == [rel]
    data = (root / "daily/2026-11-21.md").read_bytes()
    state = store.file_state("daily/2026-11-21.md")
    assert state is not None
    assert state.sha256 == hashlib.sha256(data).hexdigest()
    assert state.size == len(data)


def test_sync_tree_skips_what_is_not_plain_visible_markdown(
    store: SQLiteStore, root: Path, tmp_path: Path
) -> None:
    make_tree(root)
    write(root, ".git/hidden_dir.md", "hiddendir words\n")
    write(root, "daily/.obsidian/settings.md", "obsidian words\n")
    write(root, ".draft.md", "hiddenfile words\n")
    write(root, "notes.txt", "textfile words\n")
    write(root, "readme.markdown", "otherext words\n")
    write(root, "AGENT.md.swp", "swapfile words\n")
    os.symlink("AGENT.md", root / "linked_file.md")
    os.symlink(root / "daily", root / "linked_dir")
    outside = tmp_path / "elsewhere"
    write(outside, "secret.md", "outsider words\n")
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret.md", root / "escape_file.md")
    os.mkfifo(root / "pipe.md")

    result = sync_tree(store, root)

    assert counts(result) == (4, 0, 0)
    assert sorted(store.file_states()) == sorted(TREE)
    for word in ["hiddendir", "obsidian", "hiddenfile", "textfile", "otherext", "swapfile"]:
        assert found(store, word) == [], word
    assert found(store, "outsider") == []
    assert found(store, "alpha") == ["AGENT.md"]  # once, not again through linked_file.md
    assert found(store, "bravo") == ["daily/2026-11-21.md"]


def test_sync_tree_of_a_symlinked_subdirectory_indexes_nothing(
    store: SQLiteStore, root: Path, tmp_path: Path
) -> None:
    write(tmp_path / "elsewhere", "secret.md", "outsider words\n")
    os.symlink(tmp_path / "elsewhere", root / "escape")
    write(root, "real/a.md", "inside words\n")
    os.symlink("real", root / "alias")
    assert counts(sync_tree(store, root, "escape")) == (0, 0, 0)
    assert counts(sync_tree(store, root, "alias")) == (0, 0, 0)
    assert store.file_states() == {}


def test_sync_tree_of_a_subdirectory_only_touches_it(store: SQLiteStore, root: Path) -> None:
    make_tree(root)
    write(root, "daily/2026-11-22.md", "echo notes\n")
    assert counts(sync_tree(store, root, "daily")) == (2, 0, 0)
    assert sorted(store.file_states()) == ["daily/2026-11-21.md", "daily/2026-11-22.md"]


# -- change detection -------------------------------------------------------------


@pytest.mark.parametrize("mtime_ns", [None, OLD_NS], ids=["fresh_mtime", "old_mtime"])
def test_second_sync_with_no_change_rewrites_nothing(
    store: SQLiteStore, root: Path, mtime_ns: int | None
) -> None:
    make_tree(root, mtime_ns)
    assert counts(sync_tree(store, root)) == (4, 0, 0)
    states = store.file_states()
    indexed_at = store.stats().indexed_at
    result = sync_tree(store, root)
    assert counts(result) == (0, 0, 4)
    assert result.changed == 0
    assert store.file_states() == states
    assert store.stats().indexed_at == indexed_at


def test_changed_content_is_reindexed(store: SQLiteStore, root: Path) -> None:
    make_tree(root, OLD_NS)
    sync_tree(store, root)
    write(root, "daily/2026-11-21.md", "# Day\nfoxtrot notes, much longer than before\n")
    result = sync_tree(store, root)
    assert counts(result) == (1, 0, 3)
    assert found(store, "bravo") == []
    assert found(store, "foxtrot") == ["daily/2026-11-21.md"]


def test_same_size_change_within_the_racy_window_is_reindexed(
    store: SQLiteStore, root: Path
) -> None:
    path = write(root, "AGENT.md", "# Agent\nalpha notes\n")
    sync_tree(store, root)
    st = path.stat()
    path.write_bytes(b"# Agent\ngamma notes\n")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime too
    assert counts(sync_tree(store, root)) == (1, 0, 0)
    assert found(store, "gamma") == ["AGENT.md"]


def test_identical_content_with_new_mtime_is_unchanged(store: SQLiteStore, root: Path) -> None:
    make_tree(root, OLD_NS)
    sync_tree(store, root)
    indexed_at = store.stats().indexed_at
    path = write(root, "AGENT.md", TREE["AGENT.md"])  # rewritten: mtime is now
    result = sync_tree(store, root)
    assert counts(result) == (0, 0, 4)
    state = store.file_state("AGENT.md")
    assert state is not None
    assert state.mtime_ns == path.stat().st_mtime_ns != OLD_NS
    assert store.stats().indexed_at == indexed_at
    assert found(store, "alpha") == ["AGENT.md"]


def test_deleted_file_is_removed(store: SQLiteStore, root: Path) -> None:
    make_tree(root)
    sync_tree(store, root)
    (root / "AGENT.md").unlink()
    assert counts(sync_tree(store, root)) == (0, 1, 3)
    assert store.file_state("AGENT.md") is None
    assert found(store, "alpha") == []


def test_deleted_directory_is_removed_by_a_subtree_sync(store: SQLiteStore, root: Path) -> None:
    write(root, "projects/a.md", "kilo notes\n")
    write(root, "projects/sub/b.md", "lima notes\n")
    write(root, "projects2/c.md", "mike notes\n")
    write(root, "other/d.md", "november notes\n")
    sync_tree(store, root)
    shutil.rmtree(root / "projects")
    assert counts(sync_tree(store, root, "projects")) == (0, 2, 0)
    assert sorted(store.file_states()) == ["other/d.md", "projects2/c.md"]
    assert found(store, "kilo") == found(store, "lima") == []
    assert found(store, "mike") == ["projects2/c.md"]


def test_directory_replaced_by_a_symlink_is_removed(
    store: SQLiteStore, root: Path, tmp_path: Path
) -> None:
    write(root, "projects/a.md", "kilo notes\n")
    sync_tree(store, root)
    write(tmp_path / "elsewhere", "a.md", "kilo from outside\n")
    shutil.rmtree(root / "projects")
    os.symlink(tmp_path / "elsewhere", root / "projects")
    assert counts(sync_tree(store, root, "projects")) == (0, 1, 0)
    assert store.file_states() == {}


# -- single files -------------------------------------------------------------------


def test_sync_file_lifecycle(store: SQLiteStore, root: Path) -> None:
    path = write(root, "daily/note.md", "# Note\noscar words\n")
    assert counts(sync_file(store, root, "daily/note.md")) == (1, 0, 0)
    assert found(store, "oscar") == ["daily/note.md"]
    assert counts(sync_file(store, root, "daily/note.md")) == (0, 0, 1)
    path.write_text("# Note\npapa words\n", encoding="utf-8")
    assert counts(sync_file(store, root, "daily/note.md")) == (1, 0, 0)
    assert found(store, "oscar") == []
    assert found(store, "papa") == ["daily/note.md"]
    path.unlink()
    assert counts(sync_file(store, root, "daily/note.md")) == (0, 1, 0)
    assert counts(sync_file(store, root, "daily/note.md")) == (0, 0, 0)
    assert store.file_states() == {}


def test_sync_file_does_not_parse_a_file_whose_content_is_unchanged(
    store: SQLiteStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(root, "daily/note.md", "# Note\nvictor words\n")
    assert counts(sync_file(store, root, "daily/note.md")) == (1, 0, 0)

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("an unchanged file was parsed")

    monkeypatch.setattr("sidecar.index.indexer.chunk_markdown", no_parsing)
    os.utime(path, ns=(OLD_NS, OLD_NS))  # the watcher's event after the write's own reindex
    assert counts(sync_file(store, root, "daily/note.md")) == (0, 0, 1)
    assert store.file_state("daily/note.md").mtime_ns == OLD_NS


def test_an_append_rewrites_only_the_last_chunks_of_a_long_file(
    store: SQLiteStore, root: Path
) -> None:
    entry = "- {:03d} durable append entry, some words about what happened in this step"
    text = "# Day\n" + "".join(entry.format(i) + "\n" for i in range(60))
    path = write(root, "daily/2026-11-21.md", text)
    sync_file(store, root, "daily/2026-11-21.md")
    query = "SELECT id, start_line, end_line, body FROM chunks WHERE path = ?"
    before = set(store.db.reader().execute(query, ("daily/2026-11-21.md",)))
    assert len(before) > 8
    for i in range(60, 70):
        with path.open("a", encoding="utf-8") as f:
            f.write(entry.format(i) + "\n")
        assert counts(sync_file(store, root, "daily/2026-11-21.md")) == (1, 0, 0)
        after = set(store.db.reader().execute(query, ("daily/2026-11-21.md",)))
        # Only chunks starting within two caps of the old end may move: three at most.
        assert len(before - after) <= 3, f"append {i} rewrote {len(before - after)} chunks"
        before = after
    assert found(store, "069") == ["daily/2026-11-21.md"]


@pytest.mark.parametrize("target", ["inside", "outside"])
def test_sync_file_on_a_path_that_became_a_symlink_removes_it(
    store: SQLiteStore, root: Path, tmp_path: Path, target: str
) -> None:
    write(root, "other.md", "quebec words\n")
    path = write(root, "note.md", "romeo words\n")
    sync_tree(store, root)
    path.unlink()
    if target == "inside":
        os.symlink("other.md", path)
    else:
        os.symlink(write(tmp_path / "elsewhere", "x.md", "romeo words\n"), path)
    assert counts(sync_file(store, root, "note.md")) == (0, 1, 0)
    assert store.file_state("note.md") is None
    assert found(store, "romeo") == []
    assert found(store, "quebec") == ["other.md"]


def test_sync_file_below_a_symlinked_directory_removes_it(
    store: SQLiteStore, root: Path, tmp_path: Path
) -> None:
    write(root, "dir/note.md", "sierra words\n")
    sync_tree(store, root)
    shutil.rmtree(root / "dir")
    write(tmp_path / "elsewhere", "note.md", "sierra words\n")
    os.symlink(tmp_path / "elsewhere", root / "dir")
    assert counts(sync_file(store, root, "dir/note.md")) == (0, 1, 0)
    assert store.file_states() == {}


def test_sync_file_on_a_path_that_became_a_directory_removes_it(
    store: SQLiteStore, root: Path
) -> None:
    path = write(root, "note.md", "sierra words\n")
    sync_tree(store, root)
    path.unlink()
    path.mkdir()
    assert counts(sync_file(store, root, "note.md")) == (0, 1, 0)
    assert store.file_states() == {}


@pytest.mark.parametrize("rel", ["../escape.md", "/etc/passwd.md", "a//b.md", "", "a\\b.md"])
def test_sync_file_ignores_unsafe_paths(
    store: SQLiteStore, root: Path, tmp_path: Path, rel: str
) -> None:
    write(tmp_path, "escape.md", "tango words\n")
    assert counts(sync_file(store, root, rel)) == (0, 0, 0)
    assert store.file_states() == {}


def test_sync_file_ignores_non_markdown_and_hidden_names(store: SQLiteStore, root: Path) -> None:
    write(root, "notes.txt", "uniform words\n")
    write(root, ".draft.md", "uniform words\n")
    assert counts(sync_file(store, root, "notes.txt")) == (0, 0, 0)
    assert counts(sync_file(store, root, ".draft.md")) == (0, 0, 0)
    assert store.file_states() == {}


# -- full rebuild ---------------------------------------------------------------------


def test_load_tree_yields_every_file(store: SQLiteStore, root: Path) -> None:
    make_tree(root)
    write(root, ".hidden.md", "hidden\n")
    os.symlink("AGENT.md", root / "link.md")
    items = list(load_tree(root))
    assert sorted(i.path for i in items) == sorted(TREE)
    for i in items:
        data = (root / i.path).read_bytes()
        assert i.state.sha256 == hashlib.sha256(data).hexdigest()
        assert i.state.size == len(data)
        assert i.chunks and i.chunks[0].start_line == 1
    store.replace_all(load_tree(root))
    assert sorted(store.file_states()) == sorted(TREE)
    assert found(store, "charlie") == ["topics/deep/nested/place.md"]


def test_load_tree_of_an_empty_tier(root: Path) -> None:
    assert list(load_tree(root)) == []


# -- content ----------------------------------------------------------------------------


def test_invalid_utf8_does_not_crash_indexing(store: SQLiteStore, root: Path) -> None:
    data = b"# Title\nvictor before \xff\xfe\xc3 whiskey after\n\x80\x80\n"
    write(root, "broken.md", data)
    write(root, "fine.md", "xray words\n")
    assert counts(sync_tree(store, root)) == (2, 0, 0)
    assert found(store, "whiskey") == ["broken.md"]
    assert found(store, "victor") == ["broken.md"]
    state = store.file_state("broken.md")
    assert state is not None and state.sha256 == hashlib.sha256(data).hexdigest()
    assert [i.path for i in load_tree(root)] == ["broken.md", "fine.md"]


def test_front_matter_is_not_searchable(store: SQLiteStore, root: Path) -> None:
    write(
        root,
        "note.md",
        "---\ntitle: zanzibar\ntags: [quokka, ocelot]\n---\n# Body\nvisible yankee text\n",
    )
    assert counts(sync_tree(store, root)) == (1, 0, 0)
    assert found(store, "yankee") == ["note.md"]
    assert found(store, "zanzibar") == []
    assert found(store, "quokka") == []
    assert found(store, "title") == []
    (hit,) = store.search('"yankee"', 10)
    assert (hit.start_line, hit.end_line) == (1, 6)  # front matter lines belong to chunk 1
    assert "---" not in hit.text


def test_front_matter_with_a_date_key_does_not_crash_indexing(
    store: SQLiteStore, root: Path
) -> None:
    # YAML turns the key into a datetime.date; metadata must still be storable.
    write(root, "log.md", "---\n2026-01-01: shipped billing\n---\nzulu body words\n")
    write(root, "other.md", "plain alpha words\n")
    assert counts(sync_tree(store, root)) == (2, 0, 0)
    assert found(store, "zulu") == ["log.md"]
