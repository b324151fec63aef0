"""The generated Obsidian Bases dashboard, ``_dashboards/memory.base``."""

from __future__ import annotations

import re
from typing import Any

import yaml

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.dashboard import DASHBOARD_PATH, render_dashboard
from agent_mem_vault.vault.notes import parse_note

from .conftest import NS


def _filters(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [f for value in node.values() for f in _filters(value)]
    if isinstance(node, list):
        return [f for item in node for f in _filters(item)]
    return []


def test_init_writes_the_dashboard_and_it_parses_as_yaml(vault: Vault) -> None:
    base = yaml.safe_load((vault.path / DASHBOARD_PATH).read_text(encoding="utf-8"))
    assert isinstance(base, dict) and isinstance(base["views"], list)


def test_the_first_view_is_pending_handoffs_then_all_handoffs_then_memories(
    vault: Vault,
) -> None:
    base = yaml.safe_load(render_dashboard())
    names = [view["name"] for view in base["views"]]
    assert names == ["Pending handoffs", "All handoffs", "Memories"]
    assert "note.read != true" in _filters(base["views"][0]["filters"])
    assert all(view["type"] == "table" for view in base["views"])


def test_the_dashboard_filters_and_columns_name_real_properties(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    vault.ack_handoff(h.id)
    newer = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS)
    vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, supersedes=[newer.id])
    m = vault.save_memory(namespace=NS, title="t", content="c", agent="codex", tags=["x"])
    auto = vault.create_handoff(
        to="codex", summary="s", context="c", namespace=NS, properties={"origin": "auto"}
    )
    props: set[str] = set()
    for path in (h.path, newer.path, m.path, auto.path):
        note = parse_note((vault.path / path).read_text(encoding="utf-8"))
        assert note is not None
        props |= set(note.meta)
    base = yaml.safe_load(render_dashboard())
    named: set[str] = set()
    for expression in _filters(base):
        named |= set(re.findall(r"note\.([A-Za-z_]+)", expression))
    for view in base["views"]:
        named |= {c.split(".", 1)[1] for c in view["order"] if c.startswith("note.")}
        named |= {s["property"].split(".", 1)[1] for s in view.get("sort", [])}
    named |= {k.split(".", 1)[1] for k in base.get("properties", {}) if k.startswith("note.")}
    assert named, "the dashboard names no properties"
    assert named <= props, named - props


def test_the_dashboard_is_kept_current(vault: Vault) -> None:
    target = vault.path / DASHBOARD_PATH
    target.write_text("views: []\n", encoding="utf-8")
    vault.reindex()
    assert target.read_text(encoding="utf-8") == render_dashboard()
    target.unlink()
    vault.init()
    assert target.read_text(encoding="utf-8") == render_dashboard()
