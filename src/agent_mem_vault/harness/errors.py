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


class InvalidAnswerError(InvalidInputError):
    """A wait's answer is not resume / handBack; nothing changed."""

    code = "invalid_answer"


class InvalidToolArgumentsError(InvalidInputError):
    """A model called a tool with arguments its input model refuses."""

    code = "invalid_tool_arguments"


class ThreadNotFoundError(NotFoundError):
    """No such thread in the user's tenant (another tenant's threads are not found)."""

    code = "thread_not_found"


class UnknownAgentError(NotFoundError):
    """A hand back names an agent that is not a root agent of the harness."""

    code = "unknown_agent"


class NotARootAgentError(NotFoundError):
    """A handoff target is not a root agent (a subagent, or unknown)."""

    code = "not_a_root_agent"


class WaitNotFoundError(NotFoundError):
    """The thread has no wait with that id."""

    code = "wait_not_found"


class DuplicateToolError(ConflictError):
    """An app tool is named ``handoff`` while models get the handoff tool."""

    code = "duplicate_tool"


class HandoffOutsideTurnError(ConflictError):
    """A handoff was asked for outside a turn, or in a harness without routing."""

    code = "handoff_outside_turn"


class HandoffToHumanNotAllowedError(ConflictError):
    """A handoff to a person without ``allow_handoff_to_human``."""

    code = "handoff_to_human_not_allowed"


class ChildCannotHandOffError(ConflictError):
    """A child agent (started by another agent) tried to hand off."""

    code = "child_cannot_hand_off"


class TooManyHandoffsError(ConflictError):
    """The turn already handed off ``MAX_HANDOFFS_PER_TURN`` times."""

    code = "too_many_handoffs"


class NoHumanWaitError(ConflictError):
    """An operator reply on a thread that does not wait for a person."""

    code = "no_human_wait"


class ThreadPausedError(ConflictError):
    """The thread waits for a person; answer the wait first."""

    code = "thread_paused"


class InputConflictError(ConflictError):
    """An input id was used before with another payload."""

    code = "input_conflict"


class WrongHarnessError(ConflictError):
    """The thread belongs to another harness."""

    code = "wrong_harness"


class TransferConflictError(ConflictError):
    """A transfer id was used before with other endpoints or envelope."""

    code = "transfer_conflict"


class LogOwnedElsewhereError(ConflictError):
    """Another host holds the lease on this thread's log; send there or wait for it to lapse."""

    code = "log_owned_elsewhere"


class TransferTimeoutError(UnavailableError):
    """The summary model of a transfer did not answer in time."""

    code = "transfer_timeout"
