"""The harness: agents that hand a conversation to each other, to a person, and
to another harness, on a durable per-thread log.

>>> from agent_mem_vault.harness import (
...     HarnessHost, Routing, define_agent, define_harness, memory_persistence)
>>> from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call
>>> billing = define_agent(name="billing", description="Refunds", run=lambda ctx: ctx.chat())
>>> support = define_harness(
...     name="acme/support",
...     model=ScriptedModel([tool_call("handoff", {"to": "billing"}), text("Refunded.")]),
...     agents=[billing], routing=Routing())
>>> host = HarnessHost(persistence=memory_persistence())
"""

from __future__ import annotations

from ..store import memory_persistence, sqlite_persistence
from .access import ACTIONS, Access, Action, Rules, User, members_only
from .context import AgentContext, RouterContext
from .definitions import MAIN, Agent, Harness, Routing, define_agent, define_harness
from .errors import (
    ChildCannotHandOffError,
    DuplicateToolError,
    HandoffOutsideTurnError,
    HandoffToHumanNotAllowedError,
    InputConflictError,
    InvalidAnswerError,
    InvalidToolArgumentsError,
    LogOwnedElsewhereError,
    NoHumanWaitError,
    NotARootAgentError,
    ThreadNotFoundError,
    ThreadPausedError,
    TooManyHandoffsError,
    TransferConflictError,
    TransferTimeoutError,
    UnknownAgentError,
    WaitNotFoundError,
    WrongHarnessError,
)
from .events import HARNESS_EVENTS, Event, HostEvent
from .handoff import HUMAN, MAX_HANDOFFS_PER_TURN
from .host import HarnessHost, Sessions, ThreadSummary
from .index import ThreadEntry
from .messages import FilePart, Message, TextPart, ToolCallPart, ToolResultPart
from .model import Model, ModelRequest, TextDelta, ToolCallRequest, ToolSpec, Usage, UsageReport
from .run_context import HarnessAgentContext, HarnessRunContext, ToolContext
from .session import Session, Snapshot, TurnResult
from .state import Refusal, Wait
from .tools import Tool, tool
from .transfer import Endpoint, Envelope, TransferResult

__all__ = [
    "ACTIONS",
    "HARNESS_EVENTS",
    "HUMAN",
    "MAIN",
    "MAX_HANDOFFS_PER_TURN",
    "Access",
    "Action",
    "Agent",
    "AgentContext",
    "ChildCannotHandOffError",
    "DuplicateToolError",
    "Endpoint",
    "Envelope",
    "Event",
    "FilePart",
    "HandoffOutsideTurnError",
    "HandoffToHumanNotAllowedError",
    "Harness",
    "HarnessAgentContext",
    "HarnessHost",
    "HarnessRunContext",
    "HostEvent",
    "InputConflictError",
    "InvalidAnswerError",
    "InvalidToolArgumentsError",
    "LogOwnedElsewhereError",
    "Message",
    "Model",
    "ModelRequest",
    "NoHumanWaitError",
    "NotARootAgentError",
    "Refusal",
    "RouterContext",
    "Routing",
    "Rules",
    "Session",
    "Sessions",
    "Snapshot",
    "TextDelta",
    "TextPart",
    "ThreadEntry",
    "ThreadNotFoundError",
    "ThreadPausedError",
    "ThreadSummary",
    "TooManyHandoffsError",
    "Tool",
    "ToolCallPart",
    "ToolCallRequest",
    "ToolContext",
    "ToolResultPart",
    "ToolSpec",
    "TransferConflictError",
    "TransferResult",
    "TransferTimeoutError",
    "TurnResult",
    "UnknownAgentError",
    "Usage",
    "UsageReport",
    "User",
    "Wait",
    "WaitNotFoundError",
    "WrongHarnessError",
    "define_agent",
    "define_harness",
    "members_only",
    "memory_persistence",
    "sqlite_persistence",
    "tool",
]
