"""Copies of a conversation: the messages that are settled, copied with new ids, and forks.

A transfer's envelope (``messages="all"``) and a fork both copy a transcript
into another thread. Only settled messages move: a tool call without a result
yet (the one running the transfer or fork, say) stays behind. Each copy notes
where it came from in ``metadata.harness.copiedFrom``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.clock import format_datetime
from ..core.errors import InvalidInputError
from .access import User
from .definitions import Harness
from .errors import WrongHarnessError
from .index import create_entry, get_entry, update_entry
from .log import MESSAGE
from .messages import FilePart, Message, Part, ToolCallPart, ToolResultPart

if TYPE_CHECKING:
    from .threads import Threads

__all__ = ["copy_messages", "run_fork", "settled_messages"]


def settled_messages(messages: Sequence[Message]) -> list[Message]:
    """The transcript without tool calls that have no result yet. Pure."""
    answered = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolResultPart)}
    settled = []
    for message in messages:
        parts = tuple(
            p for p in message.parts if not (isinstance(p, ToolCallPart) and p.id not in answered)
        )
        if parts:
            settled.append(
                Message(message.id, message.role, parts, message.metadata, message.created_at)
            )
    return settled


def copy_messages(
    messages: Sequence[Message],
    *,
    new_id: Any,
    thread_id: str,
    created_at: str,
    extra: dict[str, Any],
) -> list[Message]:
    """Copies with new ids; each file part is its own copy; the origin is noted."""
    copies = []
    for message in messages:
        parts: tuple[Part, ...] = tuple(
            FilePart(p.media_type, p.data, p.url, p.name) if isinstance(p, FilePart) else p
            for p in message.parts
        )
        metadata = dict(message.metadata)
        harness = dict(metadata.get("harness") or {})
        harness["copiedFrom"] = {"threadId": thread_id, "messageId": message.id, **extra}
        metadata["harness"] = harness
        copies.append(
            Message(new_id(), message.role, parts, metadata, message.created_at or created_at)
        )
    return copies


async def run_fork(
    host: Threads,
    harness: Harness,
    *,
    thread_id: str,
    user: User | None,
    new_thread_id: str | None,
) -> str:
    """Fork into a new thread (its id is returned); a fork stays in its harness.

    A thread of another harness raises ``wrong_harness``. A tool may fork the
    thread its turn runs in: the fork only reads the source.
    """
    tenant = host.tenant(user)
    entry = await host.check(tenant, thread_id, user, "read")
    if entry.harness != harness.name:
        raise WrongHarnessError(
            f"thread {thread_id!r} belongs to harness {entry.harness!r}; a fork stays in its "
            f"harness, so use host.transfer to move it to {harness.name!r}",
        )
    state = await host.read_state(tenant, thread_id)
    new_id = host.check_thread_id(new_thread_id) if new_thread_id else host.next_id()
    if await get_entry(host.persistence, tenant, new_id) is not None:
        raise InvalidInputError(f"thread {new_id!r} exists already; fork into a new thread id")
    _, created = await create_entry(
        host.persistence, host.new_entry(tenant, new_id, harness.name, user)
    )
    if not created:
        raise InvalidInputError(f"thread {new_id!r} exists already; fork into a new thread id")
    await update_entry(
        host.persistence,
        tenant,
        new_id,
        lambda v: v.setdefault("metadata", {}).update(
            {"harness:forkedFrom": {"threadId": thread_id}}
        ),
    )
    copies = copy_messages(
        settled_messages(state.messages),
        new_id=host.next_id,
        thread_id=thread_id,
        created_at=format_datetime(host.clock.now()),
        extra={"fork": True},
    )
    async with host.writing(tenant, new_id) as log:
        await log.append([(MESSAGE, {"message": m.to_json()}) for m in copies])
    return new_id
