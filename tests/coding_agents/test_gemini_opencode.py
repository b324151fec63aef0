"""The vault design's exchange performed by the real Gemini CLI and opencode.

Gemini CLI (``gemini -p``) leaves ``create_handoff(to="opencode", …)``; opencode's
next session (``opencode run``) sees it in what its session-start plugin adds to
the system prompt, takes it with ``read_handoff`` and gets the design's text, then
hands a review back; Gemini CLI's next session takes that one. So each client
leaves a handoff and takes one, through the tools it offered the model.

Setup is ``agent-mem-vault install <client>`` and what a person using a model of
their own would also have:

- Gemini CLI: ``security.auth.selectedType = "gemini-api-key"`` in
  ~/.gemini/settings.json (what the CLI records when one picks an API key),
  ``GEMINI_API_KEY`` and ``GOOGLE_GEMINI_BASE_URL`` (the Gemini API at our address;
  the CLI then sends ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``),
  ``-m`` (else a routing classifier asks the model first), and the folder trusted
  (``GEMINI_CLI_TRUST_WORKSPACE=true``, the CLI's own switch for headless runs:
  Gemini CLI starts no MCP server and runs no project hook in an untrusted folder,
  and ``gemini -p`` refuses to run in one).
  In headless mode Gemini CLI offers the model only tools that need no approval:
  ``--allowed-tools`` approves ours, as ``--allowedTools`` does for ``claude -p``.
- opencode: an OpenAI-compatible provider with ``baseURL`` in
  ~/.config/opencode/opencode.json; it sends ``POST /v1/chat/completions``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from .conftest import BRIEF, NAMESPACE, World, client
from .model_server import Reply, ScriptedModel, Seen
from .no_registry import NoRegistry

pytestmark = pytest.mark.slow

SUMMARY = "Batch the orders backfill"
CONTEXT = (
    "The backfill in migrations/0007 needs batching. Start with 1000 rows and measure lock time."
)
EXPECTED = f"## Summary\n{SUMMARY}\n\n## Full Context\n{CONTEXT}"
GEMINI_MODEL = "gemini-2.5-flash"
OPENCODE_QUIET = {
    # No models.dev catalogue, default npm plugins or self-update: nothing but
    # the scripted model on 127.0.0.1.
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}


# -- Gemini CLI ---------------------------------------------------------------


def _gemini_tools(body: Any) -> list[str]:
    """The function names Gemini CLI offered in a generateContent request."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return [
        str(decl.get("name"))
        for tool in (tools if isinstance(tools, list) else [])
        if isinstance(tool, dict)
        for decl in tool.get("functionDeclarations") or []
        if isinstance(decl, dict)
    ]


def _gemini_results(body: Any) -> list[str]:
    """The functionResponse parts Gemini CLI sent back, as JSON text."""
    contents = body.get("contents") if isinstance(body, dict) else None
    return [
        json.dumps(part["functionResponse"], ensure_ascii=False)
        for content in (contents if isinstance(contents, list) else [])
        if isinstance(content, dict)
        for part in content.get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    ]


def _ours(names: list[str], suffix: str) -> str | None:
    """The name under which the client offers our tool (each prefixes MCP tools)."""
    return next((n for n in names if "agent-mem-vault" in n and n.endswith(suffix)), None)


def gemini_signs_in_with_a_key(world: World) -> None:
    """Gemini CLI in ``world``'s HOME set to sign in with an API key (unless set up already)."""
    settings = world.home / ".gemini" / "settings.json"
    if not settings.exists():
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))


def gemini_env(model: ScriptedModel) -> dict[str, str]:
    """What points Gemini CLI at the scripted ``model`` and has it trust the workspace."""
    return {
        "GOOGLE_GEMINI_BASE_URL": model.url,
        "GEMINI_API_KEY": "scripted",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


def gemini_hands_off(first: list[Seen], results: list[str]) -> Callable[[Seen], Reply]:
    """The scripted model of a Gemini CLI session that hands the backfill to opencode
    with create_handoff: the first request that offers the tool is kept in ``first``,
    the tool's results in ``results``."""

    def gemini_model(seen: Seen) -> Reply:
        tool = _ours(_gemini_tools(seen.body), "create_handoff")
        if tool is None:
            return Reply(text="ok")  # a side request (a summary, a check): not the session
        done = _gemini_results(seen.body)
        if done:
            results.extend(done)
            return Reply(text="Handed off to opencode.")
        first.append(seen)
        return Reply(
            tool=tool,
            args={"to": "opencode", "summary": SUMMARY, "context": CONTEXT, "namespace": NAMESPACE},
        )

    return gemini_model


def _run_gemini(world: World, model: ScriptedModel, prompt: str, tool: str) -> Any:
    gemini_signs_in_with_a_key(world)
    return world.run(
        client("gemini"),
        "-p",
        prompt,
        "-m",
        GEMINI_MODEL,
        "--allowed-tools",
        tool,
        timeout=120,
        env=gemini_env(model),
    )


# -- opencode -----------------------------------------------------------------


def _chat_tools(body: Any) -> list[str]:
    tools = body.get("tools") if isinstance(body, dict) else None
    return [
        str((tool.get("function") or {}).get("name"))
        for tool in (tools if isinstance(tools, list) else [])
        if isinstance(tool, dict)
    ]


def _chat_results(body: Any) -> list[str]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return [
        json.dumps(m.get("content"), ensure_ascii=False)
        for m in (messages if isinstance(messages, list) else [])
        if isinstance(m, dict) and m.get("role") == "tool"
    ]


def _system_text(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    return json.dumps(
        [m for m in messages if isinstance(m, dict) and m.get("role") == "system"]
        if isinstance(messages, list)
        else [],
        ensure_ascii=False,
    )


def opencode_uses(world: World, model: ScriptedModel, **settings: Any) -> None:
    """opencode set up in ``world``'s HOME to talk to the scripted ``model``, with
    ``settings`` added to its opencode.json."""
    config = world.home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        json.dumps(
            {
                "model": "scripted/scripted",
                "small_model": "scripted/scripted",
                **settings,
                "provider": {
                    "scripted": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Scripted",
                        "options": {"baseURL": f"{model.url}/v1", "apiKey": "scripted"},
                        "models": {"scripted": {"name": "Scripted", "tool_call": True}},
                    }
                },
            }
        )
    )


def _run_opencode(world: World, model: ScriptedModel, prompt: str) -> Any:
    opencode_uses(world, model)
    # Whenever a plugin is present, opencode installs its plugin SDK with npm into
    # each config folder (~/.config/opencode, <repo>/.opencode) before the first
    # request, until that succeeds once. The tests run as where no registry is
    # reachable: the install fails at once (install's .npmrc turns npm's retries off).
    with NoRegistry() as registry:
        env = {**OPENCODE_QUIET, "npm_config_registry": registry.url}
        return world.run(client("opencode"), "run", prompt, timeout=180, env=env)


def _said(proc: Any, transcript: str) -> str:
    return f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}\n{transcript}"


# -- the exchange --------------------------------------------------------------

BACK_SUMMARY = "Review the batched backfill"
BACK_CONTEXT = "Batches of 1000 rows held locks for 40 ms. Check the plan for 0008 before merging."
BACK_EXPECTED = f"## Summary\n{BACK_SUMMARY}\n\n## Full Context\n{BACK_CONTEXT}"


def test_gemini_cli_and_opencode_hand_the_work_to_each_other(world: World) -> None:
    """Gemini CLI → opencode (the design's exchange), then opencode → Gemini CLI.

    One round trip, so each client both leaves a handoff and takes one with
    ``read_handoff`` (getting the design's text back); opencode starts once.
    """
    client("gemini"), client("opencode")

    # 1. Gemini CLI: the hook's output in its first request, create_handoff to opencode.
    first: list[Seen] = []
    results: list[str] = []

    world.amv("install", "gemini")
    with ScriptedModel("gemini", gemini_hands_off(first, results)) as model:
        proc = _run_gemini(
            world,
            model,
            "Hand the orders backfill to opencode.",
            "mcp_agent-mem-vault_create_handoff",
        )
        transcript = model.transcript()
    assert proc.returncode == 0, _said(proc, transcript)
    offered = [_gemini_tools(s.body) for s in model.model_requests()]
    assert first, f"Gemini CLI never offered create_handoff to the model: {offered}\n{transcript}"
    assert ":streamGenerateContent" in first[0].path, transcript
    assert BRIEF.strip() in first[0].text, transcript
    assert "Pending handoffs for gemini" in first[0].text, transcript
    assert results, f"the tool result never came back to the model\n{transcript}"
    sent = world.handoffs()
    assert [(h["to"], h["from"], h["summary"], h["status"]) for h in sent] == [
        ("opencode", "gemini", SUMMARY, "pending")
    ], sent
    assert sent[0]["id"] in results[0], transcript

    # 2. opencode: the plugin's output in its system prompt; read_handoff returns
    #    the design's text; then create_handoff back to Gemini CLI.
    opencode_first: list[Seen] = []
    outputs: list[str] = []

    def opencode_takes_and_hands_back(seen: Seen) -> Reply:
        tools = _chat_tools(seen.body)
        read, create = _ours(tools, "read_handoff"), _ours(tools, "create_handoff")
        if read is None or create is None:
            return Reply(text="Orders backfill")  # the session title: no tools
        done = _chat_results(seen.body)
        if not done:
            opencode_first.append(seen)
            return Reply(tool=read, args={"agent": "opencode", "namespace": NAMESPACE})
        if len(done) == 1:
            outputs.extend(done)
            args = {"to": "gemini", "summary": BACK_SUMMARY, "context": BACK_CONTEXT}
            return Reply(tool=create, args={**args, "namespace": NAMESPACE})
        outputs.extend(done[1:])
        return Reply(text="Took the handoff and handed the review back.")

    world.amv("install", "opencode")
    with ScriptedModel("chat", opencode_takes_and_hands_back) as model:
        proc = _run_opencode(world, model, "Continue the work.")
        transcript = model.transcript()
    assert proc.returncode == 0, _said(proc, transcript)
    offered = [_chat_tools(s.body) for s in model.model_requests()]
    assert opencode_first, f"opencode never offered read_handoff: {offered}\n{transcript}"
    system = _system_text(opencode_first[0].body)
    assert BRIEF.strip() in system, transcript
    assert "Pending handoffs for opencode" in system and SUMMARY in system, transcript
    assert len(outputs) == 2, f"tool results that came back: {outputs}\n{transcript}"
    assert json.dumps(EXPECTED)[1:-1] in outputs[0], transcript
    handoffs = {h["summary"]: h for h in world.handoffs()}
    statuses = sorted((h["to"], h["status"]) for h in handoffs.values())
    assert statuses == [("gemini", "pending"), ("opencode", "read")], handoffs
    assert handoffs[SUMMARY]["status"] == "read", handoffs
    assert handoffs[BACK_SUMMARY]["from"] == "opencode", handoffs
    assert handoffs[BACK_SUMMARY]["id"] in outputs[1], transcript

    # 3. Gemini CLI's next session: the handoff in its hook, taken with read_handoff.
    gemini_first: list[Seen] = []
    taken: list[str] = []

    def gemini_takes(seen: Seen) -> Reply:
        tool = _ours(_gemini_tools(seen.body), "read_handoff")
        if tool is None:
            return Reply(text="ok")
        done = _gemini_results(seen.body)
        if done:
            taken.extend(done)
            return Reply(text="Took the handoff.")
        gemini_first.append(seen)
        return Reply(tool=tool, args={"agent": "gemini", "namespace": NAMESPACE})

    with ScriptedModel("gemini", gemini_takes) as model:
        proc = _run_gemini(world, model, "Continue the work.", "mcp_agent-mem-vault_read_handoff")
        transcript = model.transcript()
    assert proc.returncode == 0, _said(proc, transcript)
    assert gemini_first, f"Gemini CLI never offered read_handoff\n{transcript}"
    assert BACK_SUMMARY in gemini_first[0].text and BRIEF.strip() in gemini_first[0].text, (
        transcript
    )
    assert taken, transcript
    assert json.dumps(BACK_EXPECTED)[1:-1] in taken[0], transcript
    statuses = sorted((h["to"], h["status"]) for h in world.handoffs())
    assert statuses == [("gemini", "read"), ("opencode", "read")], statuses

    # 4. Each transcript shows the explicit handoff as the session's last act,
    #    so neither session would get an automatic one.
    _check_transcripts_end_with_a_handoff(world)


def _check_transcripts_end_with_a_handoff(world: World) -> None:
    from agent_mem_vault.integrations.transcripts import (
        AssistantMessage,
        ToolCall,
        UserMessage,
        gemini_cli,
        opencode,
    )

    chats = sorted((world.home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    first = next(c for c in chats if "Hand the orders backfill" in c.read_text())
    db = opencode.default_database(world.home / ".local" / "share")
    for transcript in (gemini_cli.read(str(first), None), opencode.read(str(db), None)):
        kinds = [type(e).__name__ for e in transcript.entries]
        calls = [e for e in transcript.entries if isinstance(e, ToolCall)]
        assert isinstance(transcript.entries[0], UserMessage), transcript
        assert calls and calls[-1].kind == "handoff" and calls[-1].finished, transcript
        assert isinstance(transcript.entries[-1], AssistantMessage), kinds


def test_gemini_cli_lists_the_installed_server_as_connected(world: World) -> None:
    """Gemini CLI's own ``mcp list`` starts the server ``install gemini`` registered."""
    world.amv("install", "gemini")
    proc = world.run(
        client("gemini"), "mcp", "list", timeout=60, env={"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert re.search(r"agent-mem-vault: .*serve --agent gemini.*Connected", out), out
