"""What a tool is handed while a turn runs, and the part of the turn it is bound to.

Each context is bound to one part of one turn (the main model's, or one
agent's). When that part ends the context closes, and a late
``handoff`` call rejects with ``handoff_outside_turn``: a handoff always
belongs to the turn that made it.

This module knows nothing of agents or tools, so that :mod:`.tools` can
recognise a ``ToolContext`` parameter; the contexts of agents and routers,
which name agents and tools, are in :mod:`.context`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ChildCannotHandOffError, HandoffOutsideTurnError

if TYPE_CHECKING:
    from .access import User

__all__ = ["HarnessAgentContext", "HarnessRunContext", "ToolContext"]


class _HandsOff(Protocol):
    """The part of a running turn that hands off (implemented in turn.py)."""

    thread_id: str
    run_id: str

    def request_handoff(self, source: str | None, to: Any, note: str | None, by: str) -> None: ...


class _Part:
    """One part of a turn; open while it runs."""

    def __init__(self, source: str | None, *, child: bool = False) -> None:
        self.source = source
        self.child = child
        self.open = True

    def check(self) -> None:
        if self.child:
            raise ChildCannotHandOffError(
                "a child that an agent started cannot hand off; return a result to its parent"
            )
        if not self.open:
            raise HandoffOutsideTurnError(
                "this part of the turn has ended, so it cannot hand off; hand off while it runs"
            )


class OnTurn:
    """A context of one part of a running turn: which run and which thread it is."""

    def __init__(self, turn: _HandsOff, part: _Part) -> None:
        self._turn = turn
        self._part = part

    @property
    def run_id(self) -> str:
        return self._turn.run_id

    @property
    def thread_id(self) -> str:
        return self._turn.thread_id


class HarnessRunContext(OnTurn):
    """``ctx.run`` in a tool: ``await ctx.run.handoff(to="billing", note=...)``."""

    async def handoff(self, *, to: Any, note: str | None = None) -> None:
        """Hand the conversation over when this part ends; rejects if ``to`` is no root agent."""
        self._part.check()
        self._turn.request_handoff(self._part.source, to, note, "code")


class HarnessAgentContext(HarnessRunContext):
    """``ctx.harness`` in an agent that answers a turn of a harness."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool's ``run(args, ctx)`` gets."""

    run: HarnessRunContext
    agent: str | None
    """The agent whose model called the tool (None: the main model)."""
    user: User | None
    thread_id: str
