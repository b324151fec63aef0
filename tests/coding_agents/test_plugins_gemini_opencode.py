"""The vault design's exchange with the Gemini CLI extension and the opencode plugin alone.

Gemini CLI installs the extension with ``gemini extensions install DIR --consent``
and opencode the plugin with ``opencode plugin DIR``, each from the folder
``agent-mem-vault plugin path CLIENT`` prints, offline; no ``agent-mem-vault
install`` runs. Gemini CLI leaves ``create_handoff(to="opencode")``; opencode's
session sees it in what the plugin adds to its system prompt and takes it with
``read_handoff``, as in ``test_gemini_opencode.py``. Then each client's own
update and uninstall.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import BRIEF, CLI, NAMESPACE, World, client
from .model_server import Reply, ScriptedModel, Seen
from .test_gemini_opencode import (
    EXPECTED,
    SUMMARY,
    _chat_results,
    _chat_tools,
    _gemini_tools,
    _ours,
    _run_gemini,
    _run_opencode,
    _said,
    _system_text,
    gemini_hands_off,
)

pytestmark = pytest.mark.slow

TRUSTED = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}


def ok(proc: Any) -> str:
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout}\n{proc.stderr}"
    return str(proc.stdout) + str(proc.stderr)


def folder(world: World, name: str) -> str:
    return world.amv("plugin", "path", name).stdout.strip()


def test_the_gemini_extension_leaves_a_handoff_that_the_opencode_plugin_takes(
    world: World,
) -> None:
    world.amv("init")  # the vault $AGENT_MEM_VAULT names (the default one is made at first use)
    gemini, opencode = client("gemini"), client("opencode")
    install = ("extensions", "install", folder(world, "gemini"), "--consent")
    ok(world.run(gemini, *install, env=TRUSTED))

    first: list[Seen] = []
    results: list[str] = []

    with ScriptedModel("gemini", gemini_hands_off(first, results)) as model:
        proc = _run_gemini(
            world, model, "Hand the orders backfill to opencode.", "mcp_agent-mem-vault_*"
        )
        transcript = model.transcript()
    assert proc.returncode == 0, _said(proc, transcript)
    offered = [_gemini_tools(s.body) for s in model.model_requests()]
    assert first, f"Gemini CLI never offered the extension's create_handoff: {offered}"
    assert BRIEF.strip() in first[0].text, transcript
    assert "Pending handoffs for gemini" in first[0].text, transcript
    # The extension's context file: the instruction line, in every session.
    assert "At the start of work call get_project_brief" in first[0].text, transcript
    assert results, transcript
    sent = world.handoffs()
    assert [(h["to"], h["from"], h["status"]) for h in sent] == [
        ("opencode", "gemini", "pending")
    ], sent

    ok(world.run(opencode, "plugin", folder(world, "opencode"), timeout=120))
    # opencode installs its SDK with npm into .opencode at each start until that
    # succeeds; offline, one attempt instead of npm's minute of retries (docs/agents.md).
    world.env["npm_config_fetch_retries"] = "0"
    opencode_first: list[Seen] = []
    outputs: list[str] = []

    def opencode_takes(seen: Seen) -> Reply:
        read = _ours(_chat_tools(seen.body), "read_handoff")
        if read is None:
            return Reply(text="Orders backfill")  # the session title: no tools
        done = _chat_results(seen.body)
        if done:
            outputs.extend(done)
            return Reply(text="Took the handoff.")
        opencode_first.append(seen)
        return Reply(tool=read, args={"agent": "opencode", "namespace": NAMESPACE})

    with ScriptedModel("chat", opencode_takes) as model:
        proc = _run_opencode(world, model, "Continue the work.")
        transcript = model.transcript()
    assert proc.returncode == 0, _said(proc, transcript)
    assert opencode_first, f"opencode never offered the plugin's read_handoff\n{transcript}"
    system = _system_text(opencode_first[0].body)
    assert BRIEF.strip() in system and SUMMARY in system, transcript
    assert "Pending handoffs for opencode" in system, transcript
    assert outputs and json.dumps(EXPECTED)[1:-1] in outputs[0], transcript
    assert [(h["to"], h["status"]) for h in world.handoffs()] == [("opencode", "read")]
    # The plugins alone: no settings of install's in either client.
    assert not (world.repo / "opencode.json").exists()
    assert not (world.repo / ".gemini").exists()
    assert "agent-mem-vault" not in (world.home / ".gemini" / "settings.json").read_text()

    # Gemini CLI's own update and uninstall: one version, then nothing left of ours.
    said = ok(world.run(gemini, "extensions", "update", "agent-mem-vault", env=TRUSTED))
    assert "agent-mem-vault" in said, said
    listed = ok(world.run(gemini, "extensions", "list", env=TRUSTED))
    assert listed.count("agent-mem-vault (") == 1, listed
    ok(world.run(gemini, "extensions", "uninstall", "agent-mem-vault", env=TRUSTED))
    assert not (world.home / ".gemini" / "extensions" / "agent-mem-vault").exists()
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert "Gemini CLI has the agent-mem-vault plugin" not in doctor.stdout, doctor.stdout
    assert "opencode has the agent-mem-vault plugin" in doctor.stdout, doctor.stdout


def test_the_extension_and_the_plugin_beside_install_give_one_brief_and_one_server(
    world: World,
) -> None:
    """``install`` first, then each client's plugin: one server's tools, one brief, and
    the line that names the two registrations; ``doctor`` reports the pair."""
    gemini, opencode = client("gemini"), client("opencode")
    world.amv("install", "gemini")
    install = ("extensions", "install", folder(world, "gemini"), "--consent")
    ok(world.run(gemini, *install, env=TRUSTED))
    seen: list[Seen] = []

    def first_only(request: Seen) -> Reply:
        if _ours(_gemini_tools(request.body), "read_handoff"):
            seen.append(request)
        return Reply(text="ok")

    with ScriptedModel("gemini", first_only) as model:
        proc = _run_gemini(world, model, "Continue the work.", "mcp_agent-mem-vault_*")
        transcript = model.transcript()
    assert proc.returncode == 0, _said(proc, transcript)
    assert seen, transcript
    tools = _gemini_tools(seen[0].body)
    assert len([t for t in tools if t.endswith("read_handoff")]) == 1, tools
    assert seen[0].text.count("Pending handoffs for gemini") == 1, transcript
    assert "registered twice in Gemini CLI" in seen[0].text, transcript

    world.amv("install", "opencode")
    ok(world.run(opencode, "plugin", folder(world, "opencode"), timeout=120))
    world.env["npm_config_fetch_retries"] = "0"
    chats: list[Seen] = []

    def first_chat(request: Seen) -> Reply:
        if _ours(_chat_tools(request.body), "read_handoff"):
            chats.append(request)
        return Reply(text="ok")

    with ScriptedModel("chat", first_chat) as model:
        proc = _run_opencode(world, model, "Continue the work.")
        transcript = model.transcript()
    assert proc.returncode == 0, _said(proc, transcript)
    assert chats, transcript
    tools = _chat_tools(chats[0].body)
    assert len([t for t in tools if t.endswith("read_handoff")]) == 1, tools
    system = _system_text(chats[0].body)
    assert system.count("Pending handoffs for opencode") == 1, transcript
    assert "registered twice in opencode" in system, transcript
    said = world.run(*CLI, "doctor", timeout=120).stdout
    assert "registered twice in Gemini CLI" in said and "registered twice in opencode" in said
