"""One rule for an agent's name, shared by the vault (handoff notes) and runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_mem_vault import runs
from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.core.names import validate_agent
from agent_mem_vault.runs.service import RunsHome
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.format import namespaces

NS = "project/harbor-api"
# Every kind of name either face accepted, where it is safe in a folder name, a
# store key, YAML and a command line.
NAMES = ["codex", "claude-code", "bot@eu", "bot~2", "claude-code:2", "a.b_c", "7", "x" * 128]
# Unsafe somewhere: hidden folder, option, home folder/YAML null, the vault's own
# prefix, path separators, spaces, too long, not ASCII.
REFUSED = [".hidden", "..", "-x", "~x", "_x", ":x", "@x", "a/b", "a b", "x" * 129, "é", ""]


def test_the_vault_and_runs_share_one_definition_of_an_agent_name() -> None:
    assert namespaces.validate_agent is validate_agent
    assert runs.validate_agent is validate_agent


@pytest.mark.parametrize("name", NAMES)
def test_a_name_either_face_accepted_is_accepted_by_both(name: str, tmp_path: Path) -> None:
    vault = Vault(tmp_path / "v", durable=False)
    vault.init()
    handoff = vault.create_handoff(to=name, summary="s", context="c", namespace=NS, from_=name)
    assert vault.peek_handoff(agent=name, namespace=NS) == handoff
    home = RunsHome.at(tmp_path / "v")
    first = asyncio.run(home.start(name, lease_seconds=0))
    second = asyncio.run(home.start(name))
    [entry] = asyncio.run(home.handoffs(name))
    assert (entry.record["fromRun"], entry.record["toRun"]) == (first, second)
    assert (tmp_path / "v" / "agents" / name / "runs" / f"{second}.md").is_file()


@pytest.mark.parametrize("name", REFUSED)
def test_an_unsafe_name_is_refused_by_both_with_the_rule(name: str, tmp_path: Path) -> None:
    vault = Vault(tmp_path / "v", durable=False)
    vault.init()
    with pytest.raises(InvalidInputError) as by_vault:
        vault.create_handoff(to=name, summary="s", context="c", namespace=NS)
    with pytest.raises(InvalidInputError) as by_runs:
        asyncio.run(RunsHome.at(tmp_path / "v").start(name))
    assert by_vault.value.code == by_runs.value.code == "invalid_agent"
    if name:
        assert "starting with a letter or digit" in by_runs.value.message
    assert not (tmp_path / "v" / ".runs").exists()
