"""Notes as text: frontmatter and body, written by us or edited in Obsidian."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agent_mem_vault.vault.format.notes import (
    NoteError,
    apply_handoff,
    handoff_from_note,
    handoff_meta,
    needs_repair,
    parse_note,
    render_body,
    render_note,
    split_body,
)

from .conftest import a_handoff

H = a_handoff(
    context="Start with 1000 rows.\n\nThen measure: `lock time`.", supersedes=("3kzzzzzzzzzz3",)
)


def test_a_handoff_note_round_trips() -> None:
    text = render_note(handoff_meta(H), render_body(H.summary, H.context))
    note = parse_note(text)
    assert note is not None
    back = handoff_from_note(note, "p.md")
    assert back.summary == H.summary and back.context == H.context
    assert back.supersedes == H.supersedes and back.status == "pending"
    assert back.id == H.id and back.created_at == H.created_at


def test_frontmatter_we_write_is_flat_yaml_that_yaml_reads_the_same() -> None:
    text = render_note(handoff_meta(H), render_body(H.summary, H.context))
    block = text.split("---\n")[1]
    loaded = yaml.safe_load(block)
    note = parse_note(text)
    assert note is not None
    assert loaded == note.meta
    assert all(not isinstance(v, dict) for v in loaded.values())


def test_body_is_exactly_the_handoff_text_plus_a_newline() -> None:
    assert render_body(H.summary, H.context) == H.text + "\n"
    assert split_body(render_body(H.summary, H.context)) == (H.summary, H.context)


def test_frontmatter_as_obsidian_writes_it_is_read() -> None:
    text = (
        "---\n"
        "type: handoff\n"
        "id: 3kzzzzzzzzzz2\n"
        "namespace: project/harbor-api\n"
        "from: claude-code\n"
        "to: codex\n"
        "status: pending\n"
        "read: false\n"
        "created_at: 2026-01-01T00:00:00.000Z\n"
        "supersedes: [3kzzzzzzzzzz3]\n"
        "aliases: [Backfill]\n"
        "---\n"
        "## Summary\nBatch it\n\n## Full Context\nctx\n"
    )
    note = parse_note(text)
    assert note is not None
    h = handoff_from_note(note, "x.md")
    assert h.created_at == "2026-01-01T00:00:00.000Z"
    assert h.supersedes == ("3kzzzzzzzzzz3",)
    assert (h.summary, h.context) == ("Batch it", "ctx")


def test_properties_a_person_added_survive_a_lifecycle_rewrite() -> None:
    meta = {**handoff_meta(H), "aliases": ["Backfill"], "priority": 2}
    updated = apply_handoff(meta, replace(H, status="read", read_at="t"))
    assert updated["aliases"] == ["Backfill"] and updated["priority"] == 2
    assert updated["read"] is True and updated["read_at"] == "t"
    reopened = apply_handoff(updated, H)
    assert "read_at" not in reopened and reopened["read"] is False


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\ntype: handoff\nid: [unclosed\n---\nbody", "not valid YAML"),
        ("---\ntype: handoff\n", "no closing"),
        ("---\n- a\n- b\n---\n", "not a set of properties"),
    ],
)
def test_broken_frontmatter_is_a_note_error(text: str, problem: str) -> None:
    with pytest.raises(NoteError, match=problem):
        parse_note(text)


def test_a_note_without_frontmatter_is_not_ours() -> None:
    assert parse_note("# Just a note\n") is None


@pytest.mark.parametrize(
    ("meta_change", "problem"),
    [
        ({"status": "done", "read": None}, "status"),
        ({"status": None, "read": "yes"}, "status"),
        ({"id": "not-a-tid"}, "TID"),
        ({"namespace": "../escape"}, "namespace"),
        ({"from": None}, "'from' is missing"),
    ],
)
def test_a_handoff_note_with_bad_properties_says_which(
    meta_change: dict[str, object], problem: str
) -> None:
    meta = {**handoff_meta(H), **meta_change}
    note = parse_note(render_note(meta, render_body("s", "c")))
    assert note is not None
    with pytest.raises(NoteError, match=problem):
        handoff_from_note(note, "x.md")


@pytest.mark.parametrize(
    ("meta_change", "status", "read_at"),
    [
        ({"read": True}, "read", "2026-02-02T00:00:00.000Z"),  # ticked in Obsidian
        ({"status": "read", "read": False}, "pending", None),  # unticked
        ({"status": "Pending", "read": False}, "pending", None),
        ({"read_at": "2026-01-05T00:00:00.000Z"}, "pending", None),  # stray read_at
        ({"status": "read", "read": None}, "read", "2026-02-02T00:00:00.000Z"),
        ({"status": None, "read": True}, "read", "2026-02-02T00:00:00.000Z"),
    ],
)
def test_disagreeing_lifecycle_properties_are_read_as_a_person_meant_them(
    meta_change: dict[str, object], status: str, read_at: str | None
) -> None:
    meta = {k: v for k, v in {**handoff_meta(H), **meta_change}.items() if v is not None}
    note = parse_note(render_note(meta, render_body("s", "c")))
    assert note is not None
    got = handoff_from_note(note, "x.md", read_hint="2026-02-02T00:00:00.000Z")
    assert (got.status, got.read_at) == (status, read_at)
    assert needs_repair(note.meta, got)
    fixed = parse_note(render_note(apply_handoff(note.meta, got), note.body))
    assert fixed is not None and not needs_repair(fixed.meta, got)


def test_a_consistent_note_needs_no_repair() -> None:
    note = parse_note(render_note(handoff_meta(H), render_body("s", "c")))
    assert note is not None
    assert not needs_repair(note.meta, handoff_from_note(note, "x.md"))


def test_split_body_is_lenient_with_hand_written_bodies() -> None:
    assert split_body("just text\n") == ("", "just text")
    assert split_body("## Summary\nonly summary\n") == ("only summary", "")
    assert split_body("intro\n## Summary\ns\n\n## Full Context\nc\n## More\nx\n") == (
        "s",
        "c\n## More\nx",
    )


_text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="\r")
    | st.sampled_from(["\n", "\t"]),
    min_size=1,
    max_size=200,
).map(str.strip)


@given(
    summary=_text.filter(
        lambda s: s and not any(line.startswith("## ") for line in s.splitlines())
    ),
    context=_text.filter(bool),
)
def test_any_summary_and_context_round_trip(summary: str, context: str) -> None:
    note = parse_note(render_note(handoff_meta(H), render_body(summary, context)))
    assert note is not None
    h = handoff_from_note(note, "x.md")
    assert (h.summary, h.context) == (summary, context)


@given(value=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=50))
def test_any_text_property_round_trips(value: str) -> None:
    note = parse_note(render_note({"type": "x", "title": value}, ""))
    assert note is not None
    assert note.meta["title"] == value
    assert yaml.safe_load(render_note({"title": value}, "").split("---\n")[1])["title"] == value
