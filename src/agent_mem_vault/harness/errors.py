"""Harness rejection codes, each a subclass of one branch of ``core.errors``.

The harness adds codes, never branches: a caller (CLI, HTTP handler) that
knows the core tree knows how to render every error below.

    InvalidInputError
    ├── InvalidAnswerError         invalid_answer        a wait answer of the wrong shape
    └── InvalidToolArgumentsError  invalid_tool_arguments
    NotFoundError
    ├── ThreadNotFoundError        thread_not_found      (also: another tenant's thread)
    ├── UnknownAgentError          unknown_agent         hand back to an agent that is not there
    ├── NotARootAgentError         not_a_root_agent      handoff target is no root agent
    └── WaitNotFoundError          wait_not_found
    ConflictError
    ├── DuplicateToolError         duplicate_tool        an app tool is named ``handoff``
    ├── HandoffOutsideTurnError    handoff_outside_turn
    ├── HandoffToHumanNotAllowedError handoff_to_human_not_allowed
    ├── ChildCannotHandOffError    child_cannot_hand_off
    ├── TooManyHandoffsError       too_many_handoffs
    ├── NoHumanWaitError           no_human_wait         operator reply without a person's wait
    ├── ThreadPausedError          thread_paused
    ├── InputConflictError         input_conflict        same input id, another payload
    ├── WrongHarnessError          wrong_harness         thread belongs to another harness
    ├── TransferConflictError      transfer_conflict     same transfer id, other endpoints
    └── LogOwnedElsewhereError     log_owned_elsewhere   another host holds the thread's log
    UnavailableError
    └── TransferTimeoutError       transfer_timeout      the summary model did not answer in time
"""

from __future__ import annotations

from ..core.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    UnavailableError,
)

__all__ = [
    "ChildCannotHandOffError",
    "DuplicateToolError",
    "HandoffOutsideTurnError",
    "HandoffToHumanNotAllowedError",
    "InputConflictError",
    "InvalidAnswerError",
    "InvalidToolArgumentsError",
    "LogOwnedElsewhereError",
    "NoHumanWaitError",
    "NotARootAgentError",
    "ThreadNotFoundError",
    "ThreadPausedError",
    "TooManyHandoffsError",
    "TransferConflictError",
    "TransferTimeoutError",
    "UnknownAgentError",
    "WaitNotFoundError",
    "WrongHarnessError",
]


class InvalidAnswerError(InvalidInputError, code="invalid_answer"):
    """A wait's answer is not resume / handBack; nothing changed."""


class InvalidToolArgumentsError(InvalidInputError, code="invalid_tool_arguments"):
    """A model called a tool with arguments its input model refuses."""


class ThreadNotFoundError(NotFoundError, code="thread_not_found"):
    """No such thread in the user's tenant (another tenant's threads are not found)."""


class UnknownAgentError(NotFoundError, code="unknown_agent"):
    """A hand back names an agent that is not a root agent of the harness."""


class NotARootAgentError(NotFoundError, code="not_a_root_agent"):
    """A handoff target is not a root agent (a subagent, or unknown)."""


class WaitNotFoundError(NotFoundError, code="wait_not_found"):
    """The thread has no wait with that id."""


class DuplicateToolError(ConflictError, code="duplicate_tool"):
    """An app tool is named ``handoff`` while models get the handoff tool."""


class HandoffOutsideTurnError(ConflictError, code="handoff_outside_turn"):
    """A handoff was asked for outside a turn, or in a harness without routing."""


class HandoffToHumanNotAllowedError(ConflictError, code="handoff_to_human_not_allowed"):
    """A handoff to a person without ``allow_handoff_to_human``."""


class ChildCannotHandOffError(ConflictError, code="child_cannot_hand_off"):
    """A child agent (started by another agent) tried to hand off."""


class TooManyHandoffsError(ConflictError, code="too_many_handoffs"):
    """The turn already handed off ``MAX_HANDOFFS_PER_TURN`` times."""


class NoHumanWaitError(ConflictError, code="no_human_wait"):
    """An operator reply on a thread that does not wait for a person."""


class ThreadPausedError(ConflictError, code="thread_paused"):
    """The thread waits for a person; answer the wait first."""


class InputConflictError(ConflictError, code="input_conflict"):
    """An input id was used before with another payload."""


class WrongHarnessError(ConflictError, code="wrong_harness"):
    """The thread belongs to another harness."""


class TransferConflictError(ConflictError, code="transfer_conflict"):
    """A transfer id was used before with other endpoints or envelope."""


class LogOwnedElsewhereError(ConflictError, code="log_owned_elsewhere"):
    """Another host holds the lease on this thread's log; send there or wait for it to lapse."""


class TransferTimeoutError(UnavailableError, code="transfer_timeout"):
    """The summary model of a transfer did not answer in time."""
