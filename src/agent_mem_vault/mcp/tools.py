"""The vault's MCP tools: each one vault call, its docstring the prompt the model reads.

A tool's docstring says when to use it and what comes back; its body stays
short: it fills in this server's agent and namespace, and hands the call to the
:class:`~.runner.Runner` with the renderer of its answer (:mod:`.rendering`).
A vault error becomes an MCP tool error (``isError``) carrying the same message
and code the CLI prints, and the server keeps serving.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

from mcp.server import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from ..core import tracing
from ..core.errors import AccessDeniedError, AgentMemVaultError, from_os_error
from ..vault.format.notes import private_properties
from .arguments import ArgumentCheck
from .errors import tool_error
from .models import (
    BriefResult,
    CreatedHandoffResult,
    ForgottenMemoryResult,
    HandoffListResult,
    HandoffResult,
    MemoryListResult,
    MemoryResult,
    NextHandoffResult,
    SearchResult,
)
from .rendering import (
    Rendered,
    brief_text,
    created_text,
    forgotten_text,
    handoff_list_text,
    handoff_text,
    memory_list_text,
    memory_text,
    next_text,
    one_memory_text,
    search_text,
    updated_text,
    viewed,
    written,
)
from .runner import Runner

if TYPE_CHECKING:
    from ..vault import Handoff, Memory, Vault

NextFound = tuple["Handoff | None", int]

__all__ = ["add_handoff_tools", "add_memory_life_tools", "add_memory_tools"]

F = TypeVar("F", bound=Callable[..., Awaitable[CallToolResult]])


# Hints per tool: what a client may assume without asking the person. Every tool touches
# only the local vault, and only forget_memory may delete (a note, with purge); everything
# else can be undone (a read handoff reopened, a forgotten memory restored).
def _hints(*, read_only: bool, idempotent: bool, destructive: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


_READ_ONLY = _hints(read_only=True, idempotent=True)
_CREATE = _hints(read_only=False, idempotent=False)
_CONSUME = _hints(read_only=False, idempotent=False)  # each read takes the next handoff
_SET_STATE = _hints(read_only=False, idempotent=True)  # ack / reopen twice = once
_FORGET = _hints(read_only=False, idempotent=True, destructive=True)  # purge deletes a note


NamespaceArg = Annotated[
    str | None,
    Field(
        description="Path-like project namespace, e.g. project/harbor-api. "
        "Omit it to use this repository's namespace."
    ),
]
AgentArg = Annotated[
    str | None,
    Field(description="Agent name, matched exactly (e.g. codex). Omit it for yourself."),
]
IdArg = Annotated[str, Field(description="Id (TID) of the handoff, as list_handoffs shows it.")]
MemoryIdArg = Annotated[
    str, Field(description="Id (TID) of the memory, as list_memories or search_memory show it.")
]
OffsetArg = Annotated[
    int, Field(ge=0, description="Skip this many (the next_offset of the previous page).")
]


KindFilter = Annotated[str | None, Field(description="Only memories of this kind, e.g. decision.")]
TagsFilter = Annotated[
    list[str] | None, Field(description="Only memories carrying all these tags.")
]
ListLimit = Annotated[int, Field(ge=1, le=500, description="At most this many.")]


def _guarded(fn: F) -> F:
    """Turn a vault error (or a path the OS refuses) anywhere in a tool into a tool error."""

    name = fn.__name__
    span_name = f"execute_tool {name}"
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}

    @functools.wraps(fn)
    async def tool(*args: Any, **kwargs: Any) -> Any:
        # A span per tool call (a no-op without opentelemetry-api; nothing is
        # imported for it before the first call, so start-up stays as fast).
        with tracing.span(span_name, attributes, kind="server") as span:
            try:
                return await fn(*args, **kwargs)
            except AgentMemVaultError as exc:
                span.set_attribute("error.type", exc.code)
                return tool_error(exc)
            except OSError as exc:  # a vault folder the OS refuses: the CLI's message
                error = from_os_error(exc)
                span.set_attribute("error.type", error.code)
                return tool_error(error)

    return tool  # type: ignore[return-value]


class _Note(Protocol):
    @property
    def path(self) -> str: ...


N = TypeVar("N", bound=_Note)

PrivateArg = Annotated[
    bool,
    Field(
        description="Keep it on this machine: it never goes to a remote, by any route "
        "(for what only this person should see)."
    ),
]


async def _write(
    run: Runner, make: Callable[[], N], render: Callable[[N], Rendered]
) -> CallToolResult:
    """A tool that writes a note: its answer says first whether the note stays on this
    machine (``Vault.held_back``: a secret in it), and what to do (``written``)."""

    def made() -> tuple[str | None, N]:
        note = make()
        return run.vault.held_back(note.path), note

    return await run.call(made, written(render))


def _registrar(server: MCPServer[Any]) -> Callable[[ToolAnnotations], Callable[[F], F]]:
    """``@tool(hints)``: register a tool on ``server`` with its hints, vault errors guarded."""

    # Unknown or bad arguments are answered before a tool runs (see .arguments).
    check = next((m for m in server.middleware if isinstance(m, ArgumentCheck)), None)
    if check is None:
        check = ArgumentCheck()
        server.middleware.append(check)

    def tool(annotations: ToolAnnotations) -> Callable[[F], F]:
        def register(fn: F) -> F:
            server.tool(annotations=annotations)(_guarded(fn))
            check.add(fn.__name__, fn)
            return fn

        return register

    return tool


def _left_out(vault: Vault, found: Handoff | None, agent: str, namespace: str) -> NextFound:
    """What ``read_handoff`` or ``peek_handoff`` found, and, when nothing, how many were
    left out for this agent (written outside the team; never which)."""
    if found is not None:
        return found, 0
    return None, vault.count_quarantined(agent=agent, namespace=namespace)


def _not_quarantined(vault: Vault, id: str, change: Callable[[str], Handoff]) -> Handoff:
    """``change(id)``, unless the handoff waits for a person: an agent neither dismisses it
    for the team nor is handed its text by acking it."""
    if vault.is_quarantined(id):
        raise AccessDeniedError(
            f"handoff {id} was written outside the team (no listed key signed it) and waits "
            "for a person: 'agent-mem-vault trust quarantine'; it was not changed",
            code="quarantined",
        )
    return change(id)


def _given_memory(vault: Vault, id: str, then: Callable[[str], Memory] | None = None) -> Memory:
    """Memory ``id`` (or what ``then(id)`` makes of it), unless it waits for a person:
    written outside the team, on a route whose policy is ``require`` (search and the
    listing leave it out too). An agent neither reads it nor, by updating, restoring or
    forgetting it, gets its text back or makes its words this machine's."""
    memory = vault.get_memory(id)
    if vault.quarantined_paths([memory]):
        raise AccessDeniedError(
            f"memory {id} was written outside the team (no listed key signed it) and waits "
            "for a person: 'agent-mem-vault trust quarantine'; it was not changed",
            code="quarantined",
        )
    return memory if then is None else then(id)


def add_handoff_tools(server: MCPServer[Any], run: Runner) -> None:
    """The vault design's handoff tools: create, read, peek, list, ack, reopen."""
    vault, me = run.vault, run.settings.agent
    tool = _registrar(server)

    @tool(_CREATE)
    async def create_handoff(
        to: Annotated[str, Field(description="Agent that should continue, e.g. codex.")],
        summary: Annotated[str, Field(description="One line: what should happen next.")],
        context: Annotated[
            str, Field(description="Everything the next agent needs: state, files, next steps.")
        ],
        namespace: NamespaceArg = None,
        supersedes: Annotated[
            list[str] | None,
            Field(description="Ids of your earlier handoffs this one replaces (they become read)."),
        ] = None,
        private: PrivateArg = False,
    ) -> Annotated[CallToolResult, CreatedHandoffResult]:
        """Leave a handoff for another agent: work that should continue after you stop.

        Use it before stopping when work is unfinished, or to pass a task to another
        tool. If your plan changed before the earlier handoff was read, pass its id in
        `supersedes` so the queue holds one live thread instead of a pile. The sender
        is you; returns its id, where it went (namespace, note path) and its status.
        """
        ns = run.namespace(namespace)
        return await _write(
            run,
            lambda: vault.create_handoff(
                to=to,
                summary=summary,
                context=context,
                namespace=ns,
                supersedes=tuple(supersedes or ()),
                from_=me,
                properties=private_properties(private),
            ),
            created_text,
        )

    @tool(_CONSUME)
    async def read_handoff(
        agent: AgentArg = None, namespace: NamespaceArg = None
    ) -> Annotated[CallToolResult, NextHandoffResult]:
        """Take the newest pending handoff for an agent and mark it read.

        Call it at the start of work. Returns '## Summary\\n…\\n\\n## Full Context\\n…';
        the handoff is then consumed (read: true), so another session will not get it
        again. To look without consuming, use peek_handoff.
        """
        who, ns = agent or me, run.namespace(namespace)
        return await run.call(
            lambda: _left_out(vault, vault.read_handoff(agent=who, namespace=ns), who, ns),
            next_text(who, ns),
        )

    @tool(_READ_ONLY)
    async def peek_handoff(
        agent: AgentArg = None, namespace: NamespaceArg = None
    ) -> Annotated[CallToolResult, NextHandoffResult]:
        """Look at the newest pending handoff for an agent without consuming it.

        Same text as read_handoff, but the handoff stays pending.
        """
        who, ns = agent or me, run.namespace(namespace)
        return await run.call(
            lambda: (
                vault.catch_up(ns, doing="this shows"),
                _left_out(vault, vault.peek_handoff(agent=who, namespace=ns), who, ns),
            ),
            viewed(next_text(who, ns)),
            read_only=True,
            slow=vault.has_route,  # then it may fetch from the remote first
        )

    @tool(_READ_ONLY)
    async def list_handoffs(
        namespace: NamespaceArg = None,
        status: Annotated[
            Literal["pending", "read", "all"],
            Field(description="pending (waiting), read (consumed or superseded) or all."),
        ] = "pending",
        agent: Annotated[
            str | None, Field(description="Only handoffs to this agent (exact name); omit for all.")
        ] = None,
        sender: Annotated[
            str | None,
            Field(description="Only handoffs from this agent (exact name), e.g. what you sent."),
        ] = None,
        limit: ListLimit = 50,
        offset: OffsetArg = 0,
    ) -> Annotated[CallToolResult, HandoffListResult]:
        """See what is waiting (agent = you), or what was sent (sender = you), newest first.

        Use it to find the id to pass to ack_handoff, reopen_handoff or supersedes.
        The result says how many match in all; when more match than limit, pass
        next_offset as offset for the next page.
        """
        ns = run.namespace(namespace)
        return await run.call(
            lambda: (
                vault.catch_up(ns, doing="this shows"),
                vault.page_handoffs(
                    namespace=ns,
                    status=status,
                    agent=agent,
                    sender=sender,
                    limit=limit,
                    offset=offset,
                ),
            ),
            viewed(handoff_list_text),
            read_only=True,
            slow=vault.has_route,  # then it may fetch from the remote first
        )

    @tool(_SET_STATE)
    async def ack_handoff(id: IdArg) -> Annotated[CallToolResult, HandoffResult]:
        """Mark a handoff read without reading it: close one that was handled elsewhere."""
        return await run.call(lambda: _not_quarantined(vault, id, vault.ack_handoff), handoff_text)

    @tool(_SET_STATE)
    async def reopen_handoff(id: IdArg) -> Annotated[CallToolResult, HandoffResult]:
        """Bring a read handoff back: it becomes pending again and read_at is removed."""
        return await run.call(
            lambda: _not_quarantined(vault, id, vault.reopen_handoff), handoff_text
        )


def add_memory_tools(server: MCPServer[Any], run: Runner) -> None:
    """save_memory, search_memory and get_project_brief."""
    vault, me = run.vault, run.settings.agent
    tool = _registrar(server)

    @tool(_CREATE)
    async def save_memory(
        title: Annotated[str, Field(description="Short title, e.g. 'Batch size for backfills'.")],
        content: Annotated[str, Field(description="The decision or note, with its reason.")],
        namespace: NamespaceArg = None,
        kind: Annotated[
            str, Field(description="decision, note, task, risk (or another lowercase word).")
        ] = "note",
        tags: Annotated[list[str] | None, Field(description="Tags, without '#'.")] = None,
        private: PrivateArg = False,
    ) -> Annotated[CallToolResult, MemoryResult]:
        """Record a decision, note, task or risk so later sessions and other agents know it.

        Decisions appear in get_project_brief. Save before stopping.
        """
        ns = run.namespace(namespace)
        return await _write(
            run,
            lambda: vault.save_memory(
                namespace=ns,
                title=title,
                content=content,
                kind=kind,
                tags=tuple(tags or ()),
                agent=me,
                properties=private_properties(private),
            ),
            memory_text,
        )

    @tool(_READ_ONLY)
    async def search_memory(
        query: Annotated[
            str,
            Field(description="What to look for: words, or a question (matched by meaning too)."),
        ],
        namespace: Annotated[
            str | None, Field(description="Limit to this namespace; omit for this repository's.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many.")] = 10,
        offset: OffsetArg = 0,
        kind: KindFilter = None,
        tags: TagsFilter = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Search saved memories (decisions, notes, tasks, risks), best match first.

        Finds memories by their words and, when embeddings are set up, by meaning;
        the result's mode says which answered. Every match is ranked; the result
        says how many match in all, and next_offset (pass it as offset) gives the
        next page.
        """
        ns = run.namespace(namespace)
        return await run.call(
            lambda: vault.search_page(
                query=query,
                namespace=ns,
                limit=limit,
                offset=offset,
                kind=kind,
                tags=tags or (),
            ),
            search_text,
            read_only=True,
            slow=vault.search_may_embed,
        )

    @tool(_READ_ONLY)
    async def get_project_brief(
        namespace: NamespaceArg = None,
    ) -> Annotated[CallToolResult, BriefResult]:
        """Load the project brief: the brief note, recent decisions and pending handoffs.

        Call it at the start of work, before read_handoff.
        """
        ns = run.namespace(namespace)
        return await run.call(
            lambda: vault.get_project_brief(namespace=ns), brief_text, read_only=True
        )


def add_memory_life_tools(server: MCPServer[Any], run: Runner) -> None:
    """list_memories, get_memory, update_memory, forget_memory and restore_memory."""
    vault, me = run.vault, run.settings.agent
    tool = _registrar(server)

    @tool(_READ_ONLY)
    async def list_memories(
        namespace: NamespaceArg = None,
        status: Annotated[
            Literal["live", "superseded", "forgotten", "all"],
            Field(
                description="live (searched and briefed), superseded (earlier versions), "
                "forgotten, or all."
            ),
        ] = "live",
        kind: KindFilter = None,
        tags: TagsFilter = None,
        limit: ListLimit = 50,
        offset: OffsetArg = 0,
    ) -> Annotated[CallToolResult, MemoryListResult]:
        """List saved memories, newest first: what was decided and noted here.

        Use it to find the id to pass to get_memory, update_memory or forget_memory.
        The result says how many match in all; pass next_offset as offset for the
        next page.
        """
        ns = run.namespace(namespace)
        return await run.call(
            lambda: vault.page_memories(
                namespace=ns,
                status=status,
                kind=kind,
                tags=tags or (),
                limit=limit,
                offset=offset,
            ),
            memory_list_text,
            read_only=True,
        )

    @tool(_READ_ONLY)
    async def get_memory(id: MemoryIdArg) -> Annotated[CallToolResult, MemoryResult]:
        """Read one memory in full by its id, whatever its status (an earlier version
        is kept as history and can still be read)."""
        return await run.call(lambda: _given_memory(vault, id), one_memory_text, read_only=True)

    @tool(_CREATE)
    async def update_memory(
        id: MemoryIdArg,
        title: Annotated[str | None, Field(description="A new title; omit to keep it.")] = None,
        content: Annotated[
            str | None, Field(description="The corrected text, in full; omit to keep it.")
        ] = None,
        kind: Annotated[str | None, Field(description="A new kind; omit to keep it.")] = None,
        tags: Annotated[
            list[str] | None, Field(description="The new tags (they replace the old).")
        ] = None,
    ) -> Annotated[CallToolResult, MemoryResult]:
        """Correct a memory when a decision or fact changed: a new version replaces it.

        The old version stays readable as history (get_memory), but only the new one
        is searched and in the brief. Update the live version (the one search shows);
        returns the new version with its new id.
        """
        return await _write(
            run,
            lambda: _given_memory(
                vault,
                id,
                lambda id: vault.update_memory(
                    id,
                    title=title,
                    content=content,
                    kind=kind,
                    tags=None if tags is None else tuple(tags),
                    agent=me,
                ),
            ),
            updated_text,
        )

    @tool(_FORGET)
    async def forget_memory(
        id: MemoryIdArg,
        purge: Annotated[
            bool,
            Field(
                description="Delete the note for good instead (only for a secret or personal "
                "data saved by mistake)."
            ),
        ] = False,
    ) -> Annotated[CallToolResult, ForgottenMemoryResult]:
        """Take a memory that no longer holds out of search and the brief.

        Its note is kept and restore_memory brings it back. With purge the note is
        deleted for good: use it only for a secret written by mistake.
        """
        return await run.call(
            lambda: _given_memory(vault, id, lambda id: vault.forget_memory(id, purge=purge)),
            forgotten_text(purge),
        )

    @tool(_SET_STATE)
    async def restore_memory(id: MemoryIdArg) -> Annotated[CallToolResult, MemoryResult]:
        """Bring a forgotten memory back into search and the brief."""
        return await run.call(
            lambda: _given_memory(vault, id, vault.restore_memory), one_memory_text
        )
