"""Every line of the vault design's handoff lifecycle, through the real ``Vault`` on real files."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import (
    AgentMemVaultError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
)
from agent_mem_vault.vault import Handoff, Vault
from agent_mem_vault.vault.format import lifecycle
from agent_mem_vault.vault.format.notes import handoff_meta, parse_note, render_body, render_note

from .conftest import NS, a_handoff, snapshot


@contextmanager
def refused_writing_nothing(
    vault: Vault, error: type[AgentMemVaultError], code: str
) -> Iterator[pytest.ExceptionInfo[AgentMemVaultError]]:
    """The block must raise ``error`` with ``code`` and leave every file of the vault as it was."""
    before = snapshot(vault.path)
    with pytest.raises(error) as info:
        yield info
    assert info.value.code == code
    assert snapshot(vault.path) == before


def _create(vault: Vault, summary: str = "Batch the orders backfill", **kw: object) -> Handoff:
    args: dict[str, object] = {
        "to": "codex",
        "summary": summary,
        "context": "The backfill in migrations/0007 needs batching. Start with 1000 rows.",
        "namespace": NS,
        "from_": "claude-code",
    }
    args.update(kw)
    return vault.create_handoff(**args)  # type: ignore[arg-type]


def _meta(vault: Vault, handoff: Handoff) -> dict[str, object]:
    note = parse_note((vault.path / handoff.path).read_text(encoding="utf-8"))
    assert note is not None
    return note.meta


def test_create_handoff_is_pending_with_read_false(vault: Vault) -> None:
    h = _create(vault)
    assert h.status == "pending" and h.read is False and h.read_at is None
    meta = _meta(vault, h)
    assert meta["type"] == "handoff"
    assert meta["status"] == "pending" and meta["read"] is False
    assert meta["from"] == "claude-code" and meta["to"] == "codex"
    assert meta["namespace"] == NS and meta["id"] == h.id
    assert "read_at" not in meta
    assert h.path == f"{NS}/handoffs/{h.id}.md"


def test_read_handoff_returns_summary_and_full_context(vault: Vault) -> None:
    _create(vault)
    got = vault.read_handoff(agent="codex", namespace=NS)
    assert got is not None
    assert got.text == (
        "## Summary\nBatch the orders backfill\n\n## Full Context\n"
        "The backfill in migrations/0007 needs batching. Start with 1000 rows."
    )


def test_read_handoff_marks_it_read_with_read_true_and_read_at(vault: Vault) -> None:
    h = _create(vault)
    got = vault.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == h.id
    assert got.status == "read" and got.read_at is not None
    meta = _meta(vault, h)
    assert meta["read"] is True and meta["status"] == "read"
    assert meta["read_at"] == got.read_at
    assert vault.get_handoff(h.id).read_at == got.read_at


def test_read_handoff_returns_the_newest_pending_for_the_agent_in_that_namespace(
    vault: Vault,
) -> None:
    _create(vault, "older")
    newest = _create(vault, "newest")
    _create(vault, "for someone else", to="gemini")
    _create(vault, "other namespace", namespace="project/other")
    got = vault.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == newest.id
    then = vault.read_handoff(agent="codex", namespace=NS)
    assert then is not None and then.summary == "older"
    assert vault.read_handoff(agent="codex", namespace=NS) is None


def test_read_handoff_returns_none_when_nothing_is_pending(vault: Vault) -> None:
    assert vault.read_handoff(agent="codex", namespace=NS) is None


def test_the_handoff_is_now_read_and_is_not_returned_again(vault: Vault) -> None:
    _create(vault)
    assert vault.read_handoff(agent="codex", namespace=NS) is not None
    assert vault.read_handoff(agent="codex", namespace=NS) is None
    assert vault.peek_handoff(agent="codex", namespace=NS) is None


def test_peek_handoff_looks_without_consuming_it(vault: Vault) -> None:
    h = _create(vault)
    before = snapshot(vault.path)
    peeked = vault.peek_handoff(agent="codex", namespace=NS)
    assert peeked is not None and peeked.id == h.id and peeked.status == "pending"
    assert peeked.text == h.text
    assert snapshot(vault.path) == before
    taken = vault.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id


def test_list_handoffs_with_status_pending_read_and_all(vault: Vault) -> None:
    a = _create(vault, "a")
    b = _create(vault, "b")
    vault.ack_handoff(a.id)
    assert [h.id for h in vault.list_handoffs(namespace=NS, status="pending")] == [b.id]
    assert [h.id for h in vault.list_handoffs(namespace=NS, status="read")] == [a.id]
    assert [h.id for h in vault.list_handoffs(namespace=NS, status="all")] == [b.id, a.id]


def test_list_handoffs_by_agent_shows_what_is_waiting_and_by_sender_what_was_sent(
    vault: Vault,
) -> None:
    to_codex = _create(vault, "to codex")
    to_claude = _create(vault, "to claude", to="claude-code", from_="codex")
    assert [h.id for h in vault.list_handoffs(namespace=NS, agent="codex")] == [to_codex.id]
    assert [h.id for h in vault.list_handoffs(namespace=NS, sender="codex")] == [to_claude.id]
    assert len(vault.list_handoffs(status="all")) == 2
    assert len(vault.list_handoffs(namespace=NS, limit=1, status="all")) == 1


def test_ack_handoff_closes_one_handled_elsewhere(vault: Vault) -> None:
    h = _create(vault)
    acked = vault.ack_handoff(h.id)
    assert acked.status == "read" and acked.read_at is not None
    assert _meta(vault, h)["read"] is True
    assert vault.read_handoff(agent="codex", namespace=NS) is None


def test_ack_of_an_already_read_handoff_changes_nothing(vault: Vault) -> None:
    h = _create(vault)
    first = vault.read_handoff(agent="codex", namespace=NS)
    assert first is not None
    before = snapshot(vault.path)
    again = vault.ack_handoff(h.id)
    assert again.status == "read" and again.read_at == first.read_at
    assert snapshot(vault.path) == before


def test_reopen_handoff_makes_it_pending_again_and_removes_read_at(vault: Vault) -> None:
    h = _create(vault)
    vault.read_handoff(agent="codex", namespace=NS)
    reopened = vault.reopen_handoff(h.id)
    assert reopened.status == "pending" and reopened.read_at is None
    meta = _meta(vault, h)
    assert meta["read"] is False and meta["status"] == "pending" and "read_at" not in meta
    again = vault.read_handoff(agent="codex", namespace=NS)
    assert again is not None and again.id == h.id


def test_reopen_of_a_pending_handoff_changes_nothing(vault: Vault) -> None:
    h = _create(vault)
    before = snapshot(vault.path)
    assert vault.reopen_handoff(h.id).status == "pending"
    assert snapshot(vault.path) == before


def test_superseded_older_handoff_becomes_read_and_gets_superseded_by(vault: Vault) -> None:
    first = _create(vault, "first plan")
    second = _create(vault, "new plan", supersedes=[first.id])
    assert second.supersedes == (first.id,)
    older = vault.get_handoff(first.id)
    assert older.status == "read" and older.superseded_by == second.id
    assert older.read_at is not None
    # Wikilinks, so Obsidian's graph and backlinks show the thread.
    assert _meta(vault, first)["superseded_by"] == f"[[{second.id}]]"
    assert _meta(vault, second)["supersedes"] == [f"[[{first.id}]]"]
    # The queue holds one live thread instead of a pile.
    pending = vault.list_handoffs(namespace=NS, status="pending")
    assert [h.id for h in pending] == [second.id]
    got = vault.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == second.id


def test_reopen_of_a_superseded_handoff_is_refused_and_writes_nothing(vault: Vault) -> None:
    first = _create(vault, "first plan")
    second = _create(vault, "new plan", supersedes=[first.id])
    with refused_writing_nothing(vault, ConflictError, "handoff_superseded") as info:
        vault.reopen_handoff(first.id)
    assert second.id in info.value.message


def test_supersedes_naming_an_unknown_id_is_refused_and_writes_nothing(vault: Vault) -> None:
    _create(vault)
    with refused_writing_nothing(vault, NotFoundError, "handoff_not_found"):
        _create(vault, "new", supersedes=["3kzzzzzzzzzz2"])
    assert len(vault.list_handoffs(status="all")) == 1


def test_supersedes_naming_a_handoff_in_another_namespace_is_refused(vault: Vault) -> None:
    elsewhere = _create(vault, namespace="project/other")
    with refused_writing_nothing(vault, InvalidInputError, "supersedes_other_namespace"):
        _create(vault, "new", supersedes=[elsewhere.id])


def test_supersedes_naming_an_already_superseded_handoff_is_refused(vault: Vault) -> None:
    first = _create(vault, "first")
    _create(vault, "second", supersedes=[first.id])
    with refused_writing_nothing(vault, ConflictError, "handoff_superseded"):
        _create(vault, "third", supersedes=[first.id])


def test_superseding_an_already_read_handoff_keeps_its_read_at(vault: Vault) -> None:
    first = _create(vault, "first")
    read = vault.read_handoff(agent="codex", namespace=NS)
    assert read is not None
    second = _create(vault, "second", supersedes=[first.id])
    older = vault.get_handoff(first.id)
    assert older.read_at == read.read_at and older.superseded_by == second.id


def test_agent_names_are_matched_exactly(vault: Vault) -> None:
    _create(vault, to="Codex")
    assert vault.read_handoff(agent="codex", namespace=NS) is None
    assert vault.peek_handoff(agent="codex", namespace=NS) is None
    got = vault.read_handoff(agent="Codex", namespace=NS)
    assert got is not None and got.recipient == "Codex"


def test_unknown_id_for_ack_reopen_and_show_is_not_found(vault: Vault) -> None:
    for call in (vault.ack_handoff, vault.reopen_handoff, vault.get_handoff):
        with pytest.raises(NotFoundError) as info:
            call("3kzzzzzzzzzz2")
        assert info.value.code == "handoff_not_found"


def test_lifecycle_survives_a_new_vault_object_on_the_same_folder(
    vault: Vault, vault_path: Path
) -> None:
    h = _create(vault)
    other = Vault(vault_path)
    got = other.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == h.id
    assert vault.read_handoff(agent="codex", namespace=NS) is None


# -- the pure rules, on values --------------------------------------------------------

_PENDING = a_handoff(sender="a", recipient="b", summary="s", context="c")


def test_rule_mark_read_sets_read_at_once() -> None:
    read = lifecycle.mark_read(_PENDING, "2026-01-02T00:00:00.000Z")
    assert read.status == "read" and read.read_at == "2026-01-02T00:00:00.000Z"
    assert lifecycle.mark_read(read, "2026-01-03T00:00:00.000Z") is read


def test_rule_reopen_removes_read_at_and_refuses_superseded() -> None:
    read = lifecycle.mark_read(_PENDING, "2026-01-02T00:00:00.000Z")
    assert lifecycle.reopen(read).read_at is None
    assert lifecycle.reopen(_PENDING) is _PENDING
    with pytest.raises(ConflictError):
        lifecycle.reopen(lifecycle.supersede(_PENDING, "3kzzzzzzzzzz3", "t"))


def test_rule_supersede_marks_read_and_links() -> None:
    older = lifecycle.supersede(_PENDING, "3kzzzzzzzzzz3", "2026-01-02T00:00:00.000Z")
    assert older.status == "read" and older.superseded_by == "3kzzzzzzzzzz3"
    with pytest.raises(ConflictError):
        lifecycle.check_supersedable(older, NS)
    with pytest.raises(InvalidInputError):
        lifecycle.check_supersedable(_PENDING, "project/other")


def test_ack_handoff_marks_it_read_with_read_true_and_read_at(vault: Vault) -> None:
    h = _create(vault)
    acked = vault.ack_handoff(h.id)
    meta = _meta(vault, h)
    assert meta["read"] is True and meta["status"] == "read"
    assert meta["read_at"] == acked.read_at and acked.read_at is not None


def test_the_seeds_typical_exchange_through_the_python_api(vault: Vault) -> None:
    # Claude Code finishes for the day.
    first = vault.create_handoff(
        to="codex",
        summary="Batch the orders backfill",
        context="The backfill in migrations/0007 needs batching. "
        "Start with 1000 rows and measure lock time.",
        namespace="project/harbor-api",
        from_="claude-code",
    )
    # The plan changes before anyone reads it: a new one replaces it.
    second = vault.create_handoff(
        to="codex",
        summary="Batch the orders backfill in 500-row batches",
        context="1000 rows held the lock too long.",
        namespace="project/harbor-api",
        supersedes=[first.id],
        from_="claude-code",
    )
    # Next morning Codex loads the brief and checks for handoffs.
    assert [p.id for p in vault.get_project_brief(namespace="project/harbor-api").pending] == [
        second.id
    ]
    got = vault.read_handoff(agent="codex", namespace="project/harbor-api")
    assert got is not None and got.text == (
        "## Summary\nBatch the orders backfill in 500-row batches\n\n"
        "## Full Context\n1000 rows held the lock too long."
    )
    # The handoff is now read; the first one was closed by the second.
    assert vault.get_handoff(second.id).read is True
    older = vault.get_handoff(first.id)
    assert older.read is True and older.superseded_by == second.id
    assert vault.read_handoff(agent="codex", namespace="project/harbor-api") is None


def test_doctor_reports_a_half_done_supersede_and_says_how_to_finish_it(vault: Vault) -> None:
    older = _create(vault, "old plan")
    # What a writer killed between its two renames leaves: the newer note only.
    newer = replace(older, id="3zzzzzzzzzzz2", supersedes=(older.id,))
    path = vault.path / NS / "handoffs" / f"{newer.id}.md"
    path.write_text(render_note(handoff_meta(newer), render_body("new plan", "c")))
    (problem,) = vault.doctor().problems
    assert f"supersedes {older.id}" in problem
    assert f"'agent-mem-vault ack {older.id}'" in problem
    vault.ack_handoff(older.id)
    assert vault.get_handoff(older.id).read is True
    assert vault.doctor().ok


def test_supersedes_may_be_one_id_a_list_or_none(vault: Vault) -> None:
    first = _create(vault, "first")
    second = _create(vault, "second", supersedes=first.id)
    assert second.supersedes == (first.id,)
    assert _create(vault, "third", supersedes=None).supersedes == ()
    with pytest.raises(InvalidInputError) as info:
        _create(vault, "fourth", supersedes=7)
    assert info.value.code == "invalid_id" and "list of handoff ids" in info.value.message
