"""Errors of the run registry: codes on the project's one error tree."""

from __future__ import annotations

from ..core.errors import ConflictError

__all__ = ["RunStillCurrent", "RunStopped", "RunTakenOver"]


class RunTakenOver(ConflictError, code="run_taken_over"):
    """Another run took the agent over: stop acting, then call ``run.write_handoff()``.

    ``by`` is the TID of the run that replaced this one.
    """

    def __init__(self, agent: str, run: str, by: str) -> None:
        super().__init__(
            f"run {run} of agent {agent!r} was taken over by run {by}: stop acting and "
            "write the handoff record (run.write_handoff())",
            agent=agent,
            run=run,
            by=by,
        )
        self.agent = agent
        self.run = run
        self.by = by


class RunStillCurrent(ConflictError, code="run_still_current"):
    """A handoff was asked of a run that nobody has taken over."""


class RunStopped(ConflictError, code="run_stopped"):
    """A stopped run was asked to go on (``heartbeat``): start a new run instead."""
