"""Every machine's entries folded into the same notes, whatever order they arrive in."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from agent_mem_vault.vault import Handoff
from agent_mem_vault.vault.format.brief import brief_template
from agent_mem_vault.vault.format.notes import (
    apply_handoff,
    handoff_meta,
    parse_note,
    render_body,
    render_note,
)
from agent_mem_vault.vault.sync.fold import Change, Folded, FoldStore, Tip

from ..conftest import NS, a_handoff

H = a_handoff()
BODY = render_body(H.summary, H.context)
HANDOFF = f"{NS}/handoffs/{H.id}.md"
MEMORY = f"{NS}/memories/orders-table.md"
BRIEF = f"{NS}/_brief.md"
LAPTOP, DESKTOP, CI = "laptop-3f2a", "desktop-9c1e", "ci-77d0"


def blob_id(text: str) -> str:
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Blobs:
    """Note texts by blob id, named as git names them: the fold's ``NoteTexts``, in memory."""

    def __init__(self, known: Mapping[str, str] = {}) -> None:
        self.by_id = dict(known)
        self.calls = 0

    def texts(self, blobs: Sequence[str]) -> dict[str, str]:
        self.calls += 1
        return {b: self.by_id[b] for b in blobs}

    def write(self, text: str) -> str:
        blob = blob_id(text)
        self.by_id[blob] = text
        return blob


class Reader:
    """A machine that reads the logs: its fold store and its ``fetched`` notes."""

    def __init__(self, path: Path, known: Mapping[str, str]) -> None:
        self.store = FoldStore(path)
        self.notes = Blobs(known)
        self.fetched: dict[str, str] = {}
        self.asked: list[list[str]] = []

    def current(self, paths: Sequence[str]) -> dict[str, str | None]:
        self.asked.append(list(paths))
        return {p: self.fetched.get(p) for p in paths}

    def take(self, changes: Sequence[Change], tips: Mapping[str, Tip] = {}) -> Folded:
        folded = self.store.fold(changes, tips, self.current, self.notes)
        for path, blob in folded.blobs.items():
            if blob is None:
                self.fetched.pop(path, None)
            else:
                self.fetched[path] = blob
        return folded

    def text(self, path: str) -> str:
        return self.notes.by_id[self.fetched[path]]


class Logs:
    """Entries as machines write them, with every text they name."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def change(
        self, machine: str, seq: int, lamport: int, path: str, base: str | None, new: str | None
    ) -> Change:
        for text in (base, new):
            if text is not None:
                self.texts[blob_id(text)] = text
        commit = hashlib.sha1(f"{machine} {seq}".encode()).hexdigest()
        return Change(
            lamport,
            machine,
            seq,
            commit,
            path,
            None if base is None else blob_id(base),
            None if new is None else blob_id(new),
        )


def handoff(h: Handoff = H, body: str = BODY, **extra: object) -> str:
    meta = apply_handoff(handoff_meta(h), h)
    meta.update(extra)
    return render_note(meta, body)


def read(at: str, on: str, body: str = BODY, **extra: object) -> str:
    return handoff(replace(H, status="read", read_at=at), body, read_on=on, **extra)


def memory(body: str) -> str:
    return render_note({"type": "memory", "namespace": NS, "title": "Orders table"}, body)


def brief(body: str) -> str:
    return render_note({"type": "brief", "namespace": NS}, body)


def meta_of(text: str) -> dict[str, object]:
    note = parse_note(text)
    assert note is not None
    return note.meta


def body_of(text: str) -> str:
    note = parse_note(text)
    assert note is not None
    return note.body


def three_machines(logs: Logs) -> list[Change]:
    """A handoff read on two machines, edited and tagged; a memory removed on one machine
    and edited on another; a brief each of two machines made on its own."""
    sent = handoff()
    edited_body = BODY.replace("1000 rows", "500 rows")
    edited = handoff(body=edited_body, tags=["orders"])
    tagged = handoff(tags=["db"])
    m0 = memory("The orders table has 2 indexes.\n")
    m1 = memory("The orders table has 3 indexes.\n")
    template = brief_template(NS)
    ours = brief(template.replace(f"# {NS}\n", "# Harbor API\n"))
    theirs = brief(template + "Run the tests with make test.\n")
    ci_read = read("2026-01-02T00:01:00.000Z", CI, edited_body, tags=["orders"])
    later = tagged.replace("Then measure lock time.", "Then measure lock time twice.")
    c = logs.change
    return [
        c(LAPTOP, 1, 1, HANDOFF, None, sent),
        c(LAPTOP, 1, 1, MEMORY, None, m0),
        c(DESKTOP, 1, 2, HANDOFF, sent, read("2026-01-02T00:05:00.000Z", DESKTOP)),
        c(DESKTOP, 1, 2, MEMORY, m0, None),
        c(CI, 1, 2, HANDOFF, sent, edited),
        c(CI, 1, 2, MEMORY, m0, m1),
        c(LAPTOP, 2, 2, HANDOFF, sent, tagged),
        c(LAPTOP, 2, 2, BRIEF, None, ours),
        c(CI, 2, 3, HANDOFF, edited, ci_read),
        c(DESKTOP, 2, 3, BRIEF, None, theirs),
        c(LAPTOP, 3, 3, HANDOFF, tagged, later),
    ]


def test_the_same_entries_give_the_same_notes_whatever_order_they_arrive_in(
    tmp_path: Path,
) -> None:
    logs = Logs()
    changes = three_machines(logs)
    in_order = Reader(tmp_path / "in-order.sqlite", logs.texts)
    in_order.take(changes)
    expected = in_order.fetched
    note = in_order.text(HANDOFF)
    meta = meta_of(note)
    assert meta["status"] == "read" and meta["read_on"] == CI
    assert meta["also_read"] == [f"2026-01-02T00:05:00.000Z on {DESKTOP}"]
    assert meta["tags"] == ["db", "orders"]
    assert "500 rows" in note and "lock time twice" in note
    assert "3 indexes" in in_order.text(MEMORY)
    assert body_of(in_order.text(BRIEF)).startswith("# Harbor API\n")
    assert in_order.text(BRIEF).endswith("Run the tests with make test.\n")

    rng = random.Random(20260102)
    refolded = 0
    for trial in range(40):
        arriving = changes[:]
        rng.shuffle(arriving)
        cuts = sorted(rng.sample(range(1, len(arriving)), rng.randint(0, 5)))
        batches = [arriving[i:j] for i, j in zip([0, *cuts], [*cuts, len(arriving)], strict=True)]
        reader = Reader(tmp_path / f"{trial}.sqlite", logs.texts)
        for n, batch in enumerate(batches):
            again = batches[rng.randrange(n)] if n and rng.random() < 0.3 else []
            refolded += len(reader.take([*again, *batch]).refolded)
        assert reader.fetched == expected, arriving
    assert refolded  # some entries came late and made their paths fold again


def test_an_entry_made_on_the_current_version_is_taken_as_it_is(tmp_path: Path) -> None:
    logs = Logs()
    sent = handoff()
    taken = read("2026-01-02T00:05:00.000Z", DESKTOP)
    reader = Reader(tmp_path / "fold.sqlite", logs.texts)
    reader.take([logs.change(LAPTOP, 1, 1, HANDOFF, None, sent)])
    folded = reader.take([logs.change(DESKTOP, 1, 2, HANDOFF, sent, taken)])
    assert folded.blobs == {HANDOFF: blob_id(taken)}
    assert folded.refolded == [] and folded.kept == {} and folded.twice == []
    assert reader.notes.calls == 0  # no text read: nothing to merge
    assert reader.asked == [[HANDOFF], [HANDOFF]]


def test_a_late_entry_is_folded_in_its_place(tmp_path: Path) -> None:
    logs = Logs()
    sent = handoff()
    edited_body = BODY.replace("1000 rows", "500 rows")
    create = logs.change(LAPTOP, 1, 1, HANDOFF, None, sent)
    edit = logs.change(CI, 1, 2, HANDOFF, sent, handoff(body=edited_body))
    taken = logs.change(DESKTOP, 1, 3, HANDOFF, sent, read("2026-01-02T00:05:00.000Z", DESKTOP))
    late = Reader(tmp_path / "late.sqlite", logs.texts)
    late.take([create, taken])
    folded = late.take([edit])  # the CI machine was offline: a lower Lamport, after
    assert folded.refolded == [HANDOFF]
    in_order = Reader(tmp_path / "in-order.sqlite", logs.texts)
    for change in (create, edit, taken):
        assert in_order.take([change]).refolded == []
    assert late.fetched == in_order.fetched
    meta = meta_of(late.text(HANDOFF))
    assert meta["status"] == "read" and "500 rows" in late.text(HANDOFF)


@pytest.mark.parametrize("removed_first", [True, False])
def test_a_removal_against_a_change_keeps_the_change(tmp_path: Path, removed_first: bool) -> None:
    logs = Logs()
    m0 = memory("The orders table has 2 indexes.\n")
    m1 = memory("The orders table has 3 indexes.\n")
    create = logs.change(LAPTOP, 1, 1, MEMORY, None, m0)
    removal = logs.change(DESKTOP, 1, 2 if removed_first else 3, MEMORY, m0, None)
    edit = logs.change(CI, 1, 3 if removed_first else 2, MEMORY, m0, m1)
    reader = Reader(tmp_path / "fold.sqlite", logs.texts)
    assert reader.take([create, removal, edit]).blobs == {MEMORY: blob_id(m1)}
    assert reader.notes.calls == 0
    alone = Reader(tmp_path / "alone.sqlite", logs.texts)
    assert alone.take([create, removal]).blobs == {MEMORY: None}  # removed, nothing against


def test_a_change_seen_twice_is_folded_once(tmp_path: Path) -> None:
    logs = Logs()
    changes = three_machines(logs)
    reader = Reader(tmp_path / "fold.sqlite", logs.texts)
    first = reader.take(changes[:6])
    after = dict(reader.fetched)
    again = reader.take(changes[:6])
    assert again.blobs == {} and again.refolded == [] and reader.fetched == after
    assert again == Folded()
    rest = reader.take([*changes, *changes[6:]])  # old ones and new ones, some twice
    assert set(rest.blobs) == {c.path for c in changes[6:]}
    once = Reader(tmp_path / "once.sqlite", logs.texts)
    once.take(changes)
    assert reader.fetched == once.fetched
    assert first.blobs.keys() == {HANDOFF, MEMORY}


def test_two_reads_of_one_handoff_are_reported_as_a_second_delivery(tmp_path: Path) -> None:
    logs = Logs()
    sent = handoff()
    changes = [
        logs.change(LAPTOP, 1, 1, HANDOFF, None, sent),
        logs.change(DESKTOP, 1, 2, HANDOFF, sent, read("2026-01-02T00:05:00.000Z", DESKTOP)),
        logs.change(CI, 1, 2, HANDOFF, sent, read("2026-01-02T00:01:00.000Z", CI)),
    ]
    reader = Reader(tmp_path / "fold.sqlite", logs.texts)
    folded = reader.take(changes)
    assert folded.twice == [HANDOFF]
    meta = meta_of(reader.text(HANDOFF))
    assert meta["read_on"] == CI
    assert meta["also_read"] == [f"2026-01-02T00:05:00.000Z on {DESKTOP}"]
    assert folded.kept == {}


def test_tips_are_kept_with_the_entries(tmp_path: Path) -> None:
    logs = Logs()
    changes = three_machines(logs)
    path = tmp_path / "fold.sqlite"
    reader = Reader(path, logs.texts)
    assert reader.store.tips() == {} and reader.store.max_lamport() == 0
    first = {LAPTOP: Tip(changes[0].commit, 1, 1)}
    reader.take(changes[:2], first)
    assert reader.store.tips() == first and reader.store.max_lamport() == 1
    reader.store.close()

    class Broken(Blobs):
        def write(self, text: str) -> str:
            raise OSError("disk full")

    reader.store = FoldStore(path)  # kept in the file
    assert reader.store.tips() == first
    reader.notes = Broken(logs.texts)
    tips = {DESKTOP: Tip(changes[2].commit, 1, 2), CI: Tip(changes[4].commit, 1, 2)}
    with pytest.raises(OSError, match="disk full"):
        reader.take(changes[2:6], tips)  # the CI edit must be merged: the fold fails
    assert reader.store.tips() == first and reader.store.max_lamport() == 1  # nothing of it
    reader.notes = Blobs(logs.texts)
    folded = reader.take(changes[2:6], tips)
    assert folded.blobs.keys() == {HANDOFF, MEMORY}  # the entries were not stored either
    assert reader.store.tips() == {**first, **tips} and reader.store.max_lamport() == 2
    reader.store.reset()
    assert reader.store.tips() == {} and reader.store.max_lamport() == 0
    reader.fetched = {}
    reader.take(changes)  # folded again from the start, after a log went back
    once = Reader(tmp_path / "once.sqlite", logs.texts)
    once.take(changes)
    assert reader.fetched == once.fetched


def test_a_fold_of_many_paths_reads_texts_a_few_times_not_once_per_note(
    tmp_path: Path,
) -> None:
    logs = Logs()
    changes = []
    for n in range(1000):
        path = f"{NS}/memories/m{n}.md"
        lines = "".join(f"line {i} of note {n}\n" for i in range(5))
        base = memory(lines)
        changes += [
            logs.change(LAPTOP, 1, 1, path, None, base),
            logs.change(CI, 1, 2, path, base, memory(lines.replace("line 0", "first"))),
            logs.change(DESKTOP, 1, 2, path, base, memory(lines.replace("line 4", "last"))),
            logs.change(LAPTOP, 2, 2, path, base, memory(lines.replace("line 2", "middle"))),
        ]
    reader = Reader(tmp_path / "fold.sqlite", logs.texts)
    folded = reader.take(changes)
    assert len(folded.blobs) == 1000 and folded.kept == {}
    assert reader.notes.calls == 2  # two merges a note: two rounds, each one call
    assert len(reader.asked) == 1
    text = reader.text(f"{NS}/memories/m7.md")
    assert body_of(text) == "first of note 7\nline 1 of note 7\nmiddle of note 7\n" + (
        "line 3 of note 7\nlast of note 7\n"
    )
