"""Two versions of one note merged by fields: nothing lost, read stays read, same everywhere."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from agent_mem_vault.vault import Handoff
from agent_mem_vault.vault.folder.records import twice_delivered
from agent_mem_vault.vault.format.merge import conflict_note, merge_notes, merge_text
from agent_mem_vault.vault.format.notes import (
    apply_handoff,
    handoff_from_note,
    handoff_meta,
    parse_note,
    render_body,
    render_note,
)

from .conftest import a_handoff

H = a_handoff()
BODY = render_body(H.summary, H.context)


def note(h: Handoff = H, body: str = BODY, **extra: object) -> str:
    meta = apply_handoff(handoff_meta(h), h)
    meta.update(extra)
    return render_note(meta, body)


def read(h: Handoff = H, at: str = "2026-01-02T00:00:00.000Z") -> Handoff:
    return replace(h, status="read", read_at=at)


def parsed(text: str) -> Handoff:
    found = parse_note(text)
    assert found is not None
    return handoff_from_note(found, "x.md")


def test_a_change_on_one_side_only_is_taken_whole() -> None:
    base = note()
    acked = note(read(H))
    assert merge_notes(base, base, acked).text == acked
    assert merge_notes(base, acked, base).text == acked


def test_an_ack_on_one_machine_and_an_edit_by_hand_on_the_other_both_stay() -> None:
    base = note()
    acked = note(read(H))
    edited = note(body=BODY.replace("1000 rows", "500 rows"))
    merged = merge_notes(base, acked, edited)
    result = parsed(merged.text)
    assert result.status == "read"
    assert "500 rows" in result.context
    assert merged.kept is None


def test_a_read_on_one_side_wins_over_a_reopen_on_the_other() -> None:
    base = note(read(H, "2026-01-02T00:00:00.000Z"))
    reopened = note(H)
    read_again = note(read(H, "2026-01-03T00:00:00.000Z"))
    merged = merge_notes(base, reopened, read_again)
    assert parsed(merged.text).status == "read"
    assert parsed(merged.text).read_at == "2026-01-03T00:00:00.000Z"


def test_a_reopen_on_one_side_stands_when_the_other_did_not_touch_the_lifecycle() -> None:
    base = note(read(H))
    reopened = note(H)
    edited = note(read(H), body=BODY + "More.\n")
    result = parsed(merge_notes(base, reopened, edited).text)
    assert result.status == "pending"
    assert result.context.endswith("More.")


def test_two_deliveries_of_one_handoff_are_recorded_in_also_read() -> None:
    base = note()
    one = note(read(H, "2026-01-02T00:00:00.000Z"), read_on="laptop-1")
    two = note(read(H, "2026-01-02T00:05:00.000Z"), read_on="desktop-2")
    merged = merge_notes(base, one, two)
    meta = parse_note(merged.text).meta  # type: ignore[union-attr]
    assert meta["read_at"] == "2026-01-02T00:00:00.000Z"
    assert meta["read_on"] == "laptop-1"
    assert meta["also_read"] == ["2026-01-02T00:05:00.000Z on desktop-2"]
    assert merged.twice == ("2026-01-02T00:05:00.000Z on desktop-2",)
    assert twice_delivered(meta) is not None


def test_an_ack_and_a_read_on_two_machines_are_not_a_double_delivery() -> None:
    base = note()
    acked = note(read(H, "2026-01-02T00:00:00.000Z"))
    taken = note(read(H, "2026-01-02T00:05:00.000Z"), read_on="desktop-2")
    merged = merge_notes(base, acked, taken)
    assert merged.twice == ()
    assert "also_read" not in parse_note(merged.text).meta  # type: ignore[union-attr]


def test_superseding_on_two_machines_at_once_names_the_newer_handoff() -> None:
    base = note()
    one = note(replace(read(H), superseded_by="3kzzzzzzzzzz5"))
    two = note(replace(read(H), superseded_by="3kzzzzzzzzzz7"))
    merged = merge_notes(base, one, two)
    assert parsed(merged.text).superseded_by == "3kzzzzzzzzzz7"
    assert merged.superseded == ("3kzzzzzzzzzz7", "3kzzzzzzzzzz5")


def test_two_bodies_edited_apart_are_merged_by_lines() -> None:
    base = note(body="a\nb\nc\nd\ne\n")
    ours = note(body="A\nb\nc\nd\ne\n")
    theirs = note(body="a\nb\nc\nd\nE\n")
    merged = merge_notes(base, ours, theirs)
    assert merged.kept is None
    assert parse_note(merged.text).body == "A\nb\nc\nd\nE\n"  # type: ignore[union-attr]


def test_two_bodies_edited_in_the_same_place_keep_the_loser_as_its_own_note() -> None:
    base = note(body="one line\n")
    ours = note(body="our line\n")
    theirs = note(body="their line\n")
    merged = merge_notes(base, ours, theirs)
    assert "<<<<<<<" not in merged.text and ">>>>>>>" not in merged.text
    assert merged.kept is not None
    kept_body = parse_note(merged.kept).body  # type: ignore[union-attr]
    stays = parse_note(merged.text).body  # type: ignore[union-attr]
    assert {kept_body, stays} == {"our line\n", "their line\n"}
    name, text = conflict_note(merged.kept, f"{H.id}.md")
    assert name.startswith(f"{H.id}.conflict-") and name.endswith(".md")
    meta = parse_note(text).meta  # type: ignore[union-attr]
    assert meta["type"] == "conflict" and meta["conflict_of"] == f"{H.id}.md"


def test_tags_added_on_both_sides_are_all_kept() -> None:
    base = note(tags=["handoff"])
    ours = note(tags=["handoff", "db"])
    theirs = note(tags=["handoff", "ops"])
    meta = parse_note(merge_notes(base, ours, theirs).text).meta  # type: ignore[union-attr]
    assert meta["tags"] == ["handoff", "db", "ops"]


def test_two_copies_without_a_common_version_keep_every_reading() -> None:
    one = note(read(H, "2026-01-02T00:00:00.000Z"))
    two = note(H, origin="auto")
    merged = merge_notes(None, one, two)
    meta = parse_note(merged.text).meta  # type: ignore[union-attr]
    assert meta["status"] == "read" and meta["origin"] == "auto"
    assert merged.kept is None


def test_a_plain_text_without_frontmatter_merges_by_lines() -> None:
    assert merge_text("1\n2\n3\n", "x\n2\n3\n", "1\n2\ny\n") == "x\n2\ny\n"
    assert merge_text("1\n", "x\n", "y\n") is None
    assert merge_notes(None, "# Brief\nmine\n", "# Brief\nmine\n").text == "# Brief\nmine\n"


LIFE = st.sampled_from(
    [
        H,
        read(H, "2026-01-02T00:00:00.000Z"),
        read(H, "2026-01-03T00:00:00.000Z"),
        replace(read(H), superseded_by="3kzzzzzzzzzz5"),
        replace(read(H), superseded_by="3kzzzzzzzzzz7"),
    ]
)
BODIES = st.sampled_from([BODY, BODY + "More.\n", "## Summary\nOther\n\n## Full Context\nx\n"])
READ_ON = st.sampled_from([None, "laptop-1", "desktop-2"])


def _version(h: Handoff, body: str, read_on: str | None) -> str:
    extra = {"read_on": read_on} if read_on and h.read else {}
    return note(h, body, **extra)


@given(LIFE, BODIES, LIFE, BODIES, READ_ON, LIFE, BODIES, READ_ON, st.booleans())
def test_a_merge_is_the_same_whichever_side_merges_and_read_stays_read(
    hb: Handoff,
    bb: str,
    h1: Handoff,
    b1: str,
    r1: str | None,
    h2: Handoff,
    b2: str,
    r2: str | None,
    with_base: bool,
) -> None:
    base = note(hb, bb) if with_base else None
    one, two = _version(h1, b1, r1), _version(h2, b2, r2)
    forward, backward = merge_notes(base, one, two), merge_notes(base, two, one)
    assert forward.text == backward.text
    assert forward.kept == backward.kept
    result = parsed(forward.text)
    changed = [h for h in (h1, h2) if base is None or h != hb]
    if any(h.read for h in changed) or (not changed and hb.read):
        assert result.status == "read"
    assert "<<<<<<<" not in forward.text
