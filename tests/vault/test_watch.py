"""A watched vault (as the MCP server runs it) learns of notes changed by hand from
the operating system, and falls back to checking by ``stat`` when it cannot watch."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import watchfiles._rust_notify

import agent_mem_vault.vault.index.watch as watch_module
from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.vault import Handoff, Vault
from agent_mem_vault.vault.folder.files import TEMP_FILE, temp_path, vault_lock
from agent_mem_vault.vault.index import inotify
from agent_mem_vault.vault.index.watch import NoteWatcher
from tests.by_hand import save_in_place, write_handoff

from .conftest import NS, eventually


@pytest.fixture(autouse=True, params=["inotify", "watchfiles"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every rule holds with either watch: inotify read directly (Linux) and
    ``watchfiles`` (what macOS uses)."""
    if request.param == "watchfiles":
        monkeypatch.setattr(watch_module, "USE_INOTIFY", False)
    elif not inotify.available():
        pytest.skip("inotify is Linux's")
    return str(request.param)


@contextmanager
def _watching(vault: Vault) -> Iterator[NoteWatcher]:
    """The vault watching its folder (in place within 10 s), stopped afterwards."""
    assert vault.watch(wait=10)
    watcher = vault._upkeep.watcher
    assert watcher is not None
    try:
        yield watcher
    finally:
        vault.stop_watching()


@contextmanager
def _watching_own_write(vault: Vault) -> Iterator[tuple[NoteWatcher, Handoff]]:
    """The vault watching while it writes handoff "abc": the watcher, which must not
    tell that write back, and the handoff."""
    vault.create_handoff(to="codex", summary="old", context="c", namespace=NS, from_="a")
    with _watching(vault) as watcher:
        vault.peek_handoff(agent="codex", namespace=NS)
        h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
        changes = watcher.take()
        assert changes is not None and h.path not in changes[0]
        yield watcher, h


def _restarted(vault: Vault, watcher: NoteWatcher, handovers: int, namespace: str) -> bool:
    """Whether a new watch took over since ``handovers`` and holds no folder back (a call
    takes the watcher's events, which is what restarts it and hands over)."""
    vault.peek_handoff(agent="codex", namespace=namespace)
    return watcher.active and watcher.settled and watcher.handovers > handovers


def _same_stamp_edit(note: Path, old: str, new: str) -> None:
    """An in-place edit that keeps the size and mtime: invisible to a check by stat."""
    assert len(old) == len(new)
    st = note.stat()
    with open(note, "r+", encoding="utf-8") as fh:
        text = fh.read().replace(old, new)
        fh.seek(0)
        fh.write(text)
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (note.stat().st_size, note.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_a_watched_vault_sees_an_edit_that_a_stat_cannot(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    with _watching(vault):
        assert vault.peek_handoff(agent="codex", namespace=NS) is not None
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")

        def seen() -> bool:
            got = vault.get_handoff(h.id)
            return got.summary == "xyz"

        assert eventually(seen)


def test_an_unwatched_vault_does_not_see_that_edit(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
    time.sleep(0.3)
    assert vault.get_handoff(h.id).summary == "abc"  # what the watch adds, shown by its absence


def test_a_watched_vault_sees_notes_added_edited_and_deleted_by_hand(vault: Vault) -> None:
    first = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    with _watching(vault):
        vault.peek_handoff(agent="codex", namespace=NS)
        other = Vault(vault.path)  # another process's writes arrive as events too
        second = other.create_handoff(to="codex", summary="t", context="c", namespace=NS)
        assert eventually(lambda: vault.peek_handoff(agent="codex", namespace=NS) == second)
        (vault.path / second.path).unlink()
        assert eventually(lambda: [x.id for x in vault.list_handoffs(namespace=NS)] == [first.id])
        note = vault.path / first.path
        note.write_text(note.read_text().replace("read: false", "read: true"))
        assert eventually(lambda: vault.peek_handoff(agent="codex", namespace=NS) is None)
        folder = vault.path / "team" / "new" / "handoffs"
        folder.mkdir(parents=True)
        (folder / "x.md").write_text(note.read_text().replace(first.id, "3zzzzzzzzzzz2"))
        assert eventually(
            lambda: vault.list_handoffs(status="read", limit=10)[0].path == "team/new/handoffs/x.md"
        )


def test_a_vault_that_stops_watching_checks_by_stat_again(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    assert vault.watch(wait=10)
    vault.peek_handoff(agent="codex", namespace=NS)
    vault.stop_watching()
    note = vault.path / h.path
    save_in_place(note, note.read_text().replace("## Summary\ns\n", "## Summary\nedited\n"))
    got = vault.peek_handoff(agent="codex", namespace=NS)
    assert got is not None and got.summary == "edited"


def test_a_folder_made_after_the_watch_began_is_watched_too(vault: Vault) -> None:
    vault.create_handoff(to="codex", summary="first", context="c", namespace=NS, from_="a")
    with _watching(vault) as watcher:
        started, handovers = watcher.generation, watcher.handovers
        vault.peek_handoff(agent="codex", namespace=NS)
        # A new namespace: its folders are made after the watch began.
        h = vault.create_handoff(
            to="codex", summary="abc", context="c", namespace="team/new", from_="a"
        )

        assert eventually(lambda: _restarted(vault, watcher, handovers, "team/new"))
        assert watcher.generation == started  # no gap: nothing to check again by stat
        vault.peek_handoff(agent="codex", namespace="team/new")
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        assert eventually(lambda: vault.get_handoff(h.id).summary == "xyz")


def _after_first_listing(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None]) -> None:
    """Run ``act`` once, right after the watcher lists the folders and before it watches
    them: the moment a folder made or removed by another process falls in between."""
    listing = NoteWatcher._folders
    done: list[bool] = []

    def folders(self: NoteWatcher) -> list[str]:
        out = listing(self)
        if not done:
            done.append(True)
            act()
        return out

    monkeypatch.setattr(NoteWatcher, "_folders", folders)


def _hand_written_handoff(source: Path, namespace: str, new_id: str) -> Path:
    """A copy of ``source`` in another namespace, as a sync tool would bring it."""
    folder = source.parents[3] / namespace / "handoffs"
    folder.mkdir(parents=True)
    note = folder / f"{new_id}.md"
    text = source.read_text().replace(source.stem, new_id)
    note.write_text(text.replace(f"namespace: {NS}", f"namespace: {namespace}"))
    return note


def test_a_folder_made_while_the_watch_restarts_is_watched(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    source = vault.path / first.path
    with _watching(vault) as watcher:
        handovers = watcher.handovers
        vault.peek_handoff(agent="codex", namespace=NS)
        hand: list[Path] = []
        _after_first_listing(
            monkeypatch,
            lambda: hand.append(_hand_written_handoff(source, "team/late", "3latezzzzzzz2")),
        )
        (vault.path / "project" / "other").mkdir()  # a new folder: the watch restarts

        assert eventually(lambda: _restarted(vault, watcher, handovers, NS))
        assert hand, "the folder was made during the restart's listing"
        assert [h.id for h in vault.list_handoffs(namespace="team/late")] == ["3latezzzzzzz2"]
        _same_stamp_edit(hand[0], "## Summary\nabc", "## Summary\nxyz")
        assert eventually(lambda: vault.get_handoff("3latezzzzzzz2").summary == "xyz")


def test_a_folder_removed_while_the_watch_is_set_up_does_not_switch_it_off(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    gone = vault.path / "project" / "gone" / "handoffs"
    gone.mkdir(parents=True)
    _after_first_listing(monkeypatch, lambda: shutil.rmtree(gone.parent))
    with _watching(vault):
        vault.peek_handoff(agent="codex", namespace=NS)
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        assert eventually(lambda: vault.get_handoff(h.id).summary == "xyz")


@pytest.mark.parametrize("backend", ["watchfiles"], indirect=True)
def test_a_watchfiles_that_raises_for_a_removed_folder_is_retried(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """watchfiles before 1.x raised ``FileNotFoundError`` for a folder gone before it
    was watched (1.3 skips it); the setup then lists the folders afresh."""
    real = watchfiles._rust_notify.RustNotify
    refused: list[str] = []

    def strict(paths: list[str], *args: Any) -> Any:
        missing = [p for p in paths if not os.path.isdir(p)]
        if missing:
            refused.extend(missing)
            raise FileNotFoundError(2, "No such file or directory", missing[0])
        return real(paths, *args)

    monkeypatch.setattr(watchfiles._rust_notify, "RustNotify", strict)
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    gone = vault.path / "project" / "gone"
    gone.mkdir()
    _after_first_listing(monkeypatch, gone.rmdir)
    with _watching(vault):
        assert refused == [str(gone)]
        vault.peek_handoff(agent="codex", namespace=NS)
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        assert eventually(lambda: vault.get_handoff(h.id).summary == "xyz")


def test_touching_a_watched_folder_does_not_restart_the_watch(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    with _watching(vault) as watcher:
        started = watcher.generation
        vault.peek_handoff(agent="codex", namespace=NS)
        note = vault.path / h.path
        folder = note.parent
        os.chmod(folder, 0o700)  # what a sync tool does to folders it brings over
        os.utime(folder)
        os.utime(folder.parent)
        # Reported after the touches, so seen only once they were taken too.
        _same_stamp_edit(note, "## Summary\nabc", "## Summary\nxyz")
        assert eventually(lambda: vault.get_handoff(h.id).summary == "xyz")
        assert watcher.active and watcher.generation == started


def test_a_watched_folder_removed_and_made_again_is_watched_again(vault: Vault) -> None:
    """The old watch went with the removed folder: one of the same name is new to it."""
    first = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    source = vault.path / first.path
    text = source.read_text()
    with _watching(vault) as watcher:
        handovers = watcher.handovers
        vault.peek_handoff(agent="codex", namespace=NS)
        shutil.rmtree(source.parent)
        source.parent.mkdir()
        source.write_text(text)

        assert eventually(lambda: _restarted(vault, watcher, handovers, NS))
        vault.peek_handoff(agent="codex", namespace=NS)
        _same_stamp_edit(source, "## Summary\nabc", "## Summary\nxyz")
        assert eventually(lambda: vault.get_handoff(first.id).summary == "xyz")


def test_a_new_namespace_made_by_hand_is_watched_without_a_check_by_stat(vault: Vault) -> None:
    vault.create_handoff(to="codex", summary="first", context="c", namespace=NS, from_="a")
    with _watching(vault) as watcher:
        started, handovers = watcher.generation, watcher.handovers
        vault.peek_handoff(agent="codex", namespace=NS)
        other = "team/by-hand"
        note = write_handoff(
            vault.path / other / "handoffs", "3zzzzzzzzzzz2", "abc", namespace=other
        )

        assert eventually(lambda: _restarted(vault, watcher, handovers, other))
        assert [h.id for h in vault.list_handoffs(namespace=other)] == ["3zzzzzzzzzzz2"]
        assert watcher.generation == started
        _same_stamp_edit(note, "## Summary\nabc", "## Summary\nxyz")
        assert eventually(lambda: vault.get_handoff("3zzzzzzzzzzz2").summary == "xyz")


def test_an_edit_in_an_old_folder_while_the_watch_restarts_is_seen(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old watch reports until the new one is in place: an edit made while the new
    one is set up (only the old one can see it) is not lost, and nothing is checked
    by stat again (the edit keeps size and mtime: only a watch sees it)."""
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    note = vault.path / h.path
    with _watching(vault) as watcher:
        started, handovers = watcher.generation, watcher.handovers
        vault.peek_handoff(agent="codex", namespace=NS)
        edited: list[bool] = []

        def edit() -> None:
            assert not watcher.settled  # the new folder is held back meanwhile
            _same_stamp_edit(note, "## Summary\nabc", "## Summary\nxyz")
            edited.append(True)

        _after_first_listing(monkeypatch, edit)
        other = "team/new"
        write_handoff(vault.path / other / "handoffs", "3zzzzzzzzzzz2", "new", namespace=other)

        assert eventually(lambda: _restarted(vault, watcher, handovers, NS))
        assert edited, "the edit was made during the restart's listing"
        assert watcher.generation == started
        assert vault.get_handoff(h.id).summary == "xyz"
        assert [x.id for x in vault.list_handoffs(namespace=other)] == ["3zzzzzzzzzzz2"]


def test_a_folder_renamed_by_hand_is_watched_under_its_new_name(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    with _watching(vault) as watcher:
        started, handovers = watcher.generation, watcher.handovers
        vault.peek_handoff(agent="codex", namespace=NS)
        moved = "project/moved"
        (vault.path / NS).rename(vault.path / moved)

        assert eventually(lambda: _restarted(vault, watcher, handovers, moved))
        assert watcher.generation == started
        assert [x.path for x in vault.list_handoffs(limit=10)] == [h.path.replace(NS, moved, 1)]
        note = vault.path / h.path.replace(NS, moved, 1)
        _same_stamp_edit(note, "## Summary\nabc", "## Summary\nxyz")
        assert eventually(lambda: vault.get_handoff(h.id).summary == "xyz")


@pytest.mark.parametrize("backend", ["watchfiles"], indirect=True)
def test_each_watcher_has_its_own_marks_folder_removed_when_it_stops(vault: Vault) -> None:
    import fcntl

    marks = vault.path / ".agent-mem-vault" / "marks"
    left = marks / "123-deadbeef"  # a watcher gone: its folder's lock is free
    left.mkdir(parents=True)
    (left / "held").touch()
    (left / "7").touch()
    alive = marks / "456-cafebabe"  # a watcher alive (in another container, say)
    alive.mkdir()
    fd = os.open(alive / "held", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with _watching(vault) as watcher:
            vault.peek_handoff(agent="codex", namespace=NS)
            own = watcher._marks_dir
            assert own.parent == marks and own.is_dir()
            assert not left.exists()  # cleared away
            assert alive.is_dir()  # its lock is held: left alone
            # Each mark is removed once its event is read; only the lock file stays.
            assert [p.name for p in own.iterdir()] == ["held"]
        assert not own.exists()
    finally:
        os.close(fd)


def test_every_look_at_the_watch_reads_all_that_came_before_it(vault: Vault) -> None:
    # No pause between the edit and the call: the mark made by the call is read
    # only after every event queued before it.
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    with _watching(vault):
        vault.peek_handoff(agent="codex", namespace=NS)
        for i in range(20):
            summary = f"x{i:02d}"
            _same_stamp_edit(
                vault.path / h.path, f"## Summary\n{h.summary}", f"## Summary\n{summary}"
            )
            h = vault.get_handoff(h.id)
            assert h.summary == summary


def test_a_folder_named_like_a_note_is_a_folder_to_the_watch(vault: Vault) -> None:
    vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    with _watching(vault) as watcher:
        vault.peek_handoff(agent="codex", namespace=NS)
        odd = vault.path / NS / "handoffs" / "odd.md"
        odd.mkdir()
        write_handoff(odd, "3zzzzzzzzzzz2", "inside a folder named odd.md", namespace=NS)
        assert eventually(lambda: _restarted(vault, watcher, 0, NS) and watcher.settled)
        found = vault.get_handoff("3zzzzzzzzzzz2")
        assert found.path == f"{NS}/handoffs/odd.md/3zzzzzzzzzzz2.md"


def test_a_vault_reached_through_a_symbolic_link_is_watched(vault: Vault, tmp_path: Path) -> None:
    link = tmp_path / "link-to-vault"
    link.symlink_to(vault.path)
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    through = Vault(link, durable=False)
    try:
        with _watching(through):
            through.peek_handoff(agent="codex", namespace=NS)
            _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
            assert through.get_handoff(h.id).summary == "xyz"
    finally:
        through.close()


def test_a_folder_swapped_in_by_hand_is_read_with_its_subfolders(vault: Vault) -> None:
    # The old namespace folder is moved aside and another, with a handoffs folder
    # the index knows by name, takes its place: that subfolder sends no event.
    vault.create_handoff(to="codex", summary="old", context="c", namespace=NS, from_="a")
    stage = vault.path / "stage"
    write_handoff(stage / "handoffs", "3zzzzzzzzzzz2", "swapped in", namespace=NS)
    with _watching(vault) as watcher:
        vault.peek_handoff(agent="codex", namespace=NS)
        ns_folder = vault.path / NS
        ns_folder.rename(vault.path / "project" / "old")
        stage.rename(ns_folder)
        assert eventually(lambda: _restarted(vault, watcher, 0, NS))
        ids = [h.id for h in vault.list_handoffs(namespace=NS, status="all")]
        assert "3zzzzzzzzzzz2" in ids


def test_a_broken_watch_is_set_up_again(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    monkeypatch.setattr(watch_module, "RETRY_AFTER", 0.0)
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    with _watching(vault) as watcher:
        vault.peek_handoff(agent="codex", namespace=NS)
        generation = watcher.generation
        if backend == "watchfiles":
            shutil.rmtree(watcher._marks_dir)  # its next look finds no mark: the watch breaks
        else:
            watcher._notify.close()  # its next look cannot read: the watch breaks
        vault.peek_handoff(agent="codex", namespace=NS)

        def again() -> bool:
            vault.peek_handoff(agent="codex", namespace=NS)
            return watcher.active and watcher.generation > generation

        assert eventually(again)
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        assert vault.get_handoff(h.id).summary == "xyz"


def _tid(i: int) -> str:
    """The ``i``-th of a run of valid TIDs, in order (newer than any the tests make)."""
    digits = "234567abcdefghijklmnopqrstuvwxyz"
    return "3zzzzzzzz" + "".join(digits[(i >> (5 * k)) & 31] for k in (3, 2, 1, 0))


@pytest.mark.parametrize("backend", ["inotify"], indirect=True)
def test_a_watch_read_directly_makes_no_marks(vault: Vault) -> None:
    """Reading inotify's queue is the barrier itself: no mark file, no marks folder."""
    with _watching(vault):
        for _ in range(3):
            vault.peek_handoff(agent="codex", namespace=NS)
        assert not (vault.path / ".agent-mem-vault" / "marks").exists()


@pytest.mark.parametrize("backend", ["inotify"], indirect=True)
def test_an_overflowed_queue_breaks_the_watch_and_nothing_is_missed(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More events than the kernel queues, with nobody reading them: the kernel drops
    events and says so; the watch is then taken as broken, the call checks by stat
    (so it still sees the last note), and the watch is set up again."""
    monkeypatch.setattr(watch_module, "RETRY_AFTER", 0.0)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 40_000:
        pytest.skip(f"the kernel queues {limit} events: too many to overflow here")
    vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    folder = vault.path / NS / "handoffs"
    with _watching(vault) as watcher:
        vault.peek_handoff(agent="codex", namespace=NS)
        generation = watcher.generation
        notify = watcher._notify
        assert isinstance(notify, inotify.Inotify)
        with notify._lock:  # its reading thread waits: the queue fills up
            for i in range(limit // 2 + 100):  # each a create and a close: two events
                write_handoff(folder, _tid(i), f"burst {i}", namespace=NS)
        peeked = vault.peek_handoff(agent="codex", namespace=NS)
        assert not watcher.active or watcher.generation > generation
        assert peeked is not None and peeked.summary == f"burst {limit // 2 + 99}"

        def again() -> bool:
            vault.peek_handoff(agent="codex", namespace=NS)
            return watcher.active and watcher.generation > generation

        assert eventually(again)
        h = vault.peek_handoff(agent="codex", namespace=NS)
        assert h is not None
        _same_stamp_edit(vault.path / h.path, f"## Summary\n{h.summary}", "## Summary\nxyzxyzxyzx")
        assert vault.get_handoff(h.id).summary == "xyzxyzxyzx"


@pytest.mark.parametrize("backend", ["inotify"], indirect=True)
def test_a_note_this_process_wrote_is_not_read_back(vault: Vault) -> None:
    """What a call wrote and indexed is not told to the next call: the last event about
    the note is the rename of this process's own temp file onto it."""
    with _watching_own_write(vault) as (watcher, h):
        read = vault.read_handoff(agent="codex", namespace=NS)
        assert read is not None and read.id == h.id
        changes = watcher.take()
        assert changes is not None and h.path not in changes[0]


@contextmanager
def _reader_beside(vault: Vault) -> Iterator[Vault]:
    """A second server on ``vault`` (its own ``Vault``, a lock timeout of 0.3 s),
    watching, after one look at the namespace; ``vault`` is the other writer."""
    vault.create_handoff(to="codex", summary="old", context="c", namespace=NS, from_="a")
    vault.save_memory(title="old", content="before", namespace=NS, agent="a")
    reader = Vault(vault.path, lock_timeout=0.3)
    try:
        with _watching(reader):
            assert reader.peek_handoff(agent="codex", namespace=NS) is not None
            yield reader
    finally:
        reader.close()


def test_a_note_another_writer_wrote_and_indexed_is_read_without_waiting_for_the_lock(
    vault: Vault,
) -> None:
    """Every server watching a vault is told of every other server's write. The writer
    indexed its note before it let go of the lock, so a reader finds the note in the
    index as it is on disk and answers without queueing for the lock behind the
    writers (held here by a third writer, for longer than the reader would wait).
    The folders are there before: a folder made is synced whole, under the lock."""
    with _reader_beside(vault) as reader:
        h = vault.create_handoff(to="codex", summary="new", context="c", namespace=NS, from_="b")
        memory = vault.save_memory(title="t", content="lock order", namespace=NS, agent="b")
        with vault_lock(vault.path):
            newest = reader.peek_handoff(agent="codex", namespace=NS)
            found = reader.search_memory(query="lock order", namespace=NS)
    assert newest is not None and newest.id == h.id
    assert [hit.memory.id for hit in found] == [memory.id]


def test_a_note_edited_after_another_writers_write_is_never_answered_stale(
    vault: Vault,
) -> None:
    """An edit within the mtime clock's tick, same size, after another writer's write:
    the note's content differs from the index, so the reader takes the lock to read
    it. With the lock held elsewhere it says so (``lock_timeout``) rather than answer
    from what the index held; the next call, with the lock free, reads the edit."""
    with _reader_beside(vault) as reader:
        h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="b")
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        with vault_lock(vault.path), pytest.raises(UnavailableError) as refused:
            reader.peek_handoff(agent="codex", namespace=NS)
        assert refused.value.code == "lock_timeout"
        newest = reader.peek_handoff(agent="codex", namespace=NS)
    assert newest is not None and (newest.id, newest.summary) == (h.id, "xyz")


@pytest.mark.parametrize("backend", ["inotify"], indirect=True)
def test_only_the_vaults_own_temp_file_renamed_onto_a_note_is_not_read_back(
    vault: Vault,
) -> None:
    """The write names its temp file and the watcher matches the rename from it by one
    function (``temp_path``): the note renamed from the vault's own temp file is not
    told, while a file of the same pattern but not the one written (another's
    editor, another token) renamed over it is."""
    with _watching_own_write(vault) as (_, h):
        vault.ack_handoff(h.id)  # the vault writes the note again (its own temp file)
        note = vault.path / h.path
        theirs = Path(temp_path(str(note), "89abcdef"))
        assert TEMP_FILE.fullmatch(theirs.name)
        theirs.write_text(note.read_text().replace("## Summary\nabc", "## Summary\nxyz"))
        os.replace(theirs, note)
        assert vault.get_handoff(h.id).summary == "xyz"


def test_an_edit_right_after_this_process_wrote_a_note_is_seen(vault: Vault) -> None:
    """An edit to a note this process just wrote (same size and mtime, or a rename of
    another file over it) comes after the write's own events: the next call reads it."""
    vault.create_handoff(to="codex", summary="old", context="c", namespace=NS, from_="a")
    with _watching(vault):
        vault.peek_handoff(agent="codex", namespace=NS)
        h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        assert vault.get_handoff(h.id).summary == "xyz"
        vault.ack_handoff(h.id)
        note = vault.path / h.path
        other = note.with_name("elsewhere.txt")
        other.write_text(note.read_text().replace("## Summary\nxyz", "## Summary\nuvw"))
        os.replace(other, note)
        assert vault.get_handoff(h.id).summary == "uvw"


def test_a_settled_watch_answers_for_listed_notes_without_a_stat_each(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the namespace was checked and the watch is settled, a listing or a peek
    looks at no note by ``stat``: the watch told every change, and an edit just
    before the call is still in the answer."""
    made = [
        vault.create_handoff(to="codex", summary=f"s{i}", context="c", namespace=NS, from_="a")
        for i in range(3)
    ]
    elsewhere = vault.create_handoff(
        to="codex", summary="t", context="c", namespace="team/other", from_="a"
    )
    stats: list[str] = []
    stamp_matches = vault._upkeep.stamp_matches

    def counted(idx: Any, path: str) -> bool:
        stats.append(path)
        return stamp_matches(idx, path)

    monkeypatch.setattr(vault._upkeep, "stamp_matches", counted)
    vault.list_handoffs(namespace=NS)
    assert len(stats) == 3  # without a watch, each listed note is checked
    with _watching(vault) as watcher:
        assert eventually(lambda: vault.peek_handoff(agent="codex", namespace=NS) is not None)
        assert watcher.settled
        stats.clear()
        note = vault.path / made[0].path
        save_in_place(note, note.read_text().replace("## Summary\ns0\n", "## Summary\ned\n"))
        listed = vault.list_handoffs(namespace=NS)
        assert {h.summary for h in listed} == {"ed", "s1", "s2"}
        assert vault.peek_handoff(agent="codex", namespace=NS) is not None
        assert stats == []
        assert len(vault.list_handoffs()) == 4
        assert stats == [elsewhere.path]  # a namespace not checked since the watch began
