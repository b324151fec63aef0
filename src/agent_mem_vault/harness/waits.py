"""How a person's wait ends, as pure functions: which answer gives the thread to whom.

``{"resume": True}`` gives it back to the agent that answered before the
handoff; ``{"hand_back": "billing"}`` to that root agent; ``{"hand_back": "main"}``
to the main model. Resolve and cancel give it back like ``resume``.

Python spells it ``hand_back``, the wire form (HTTP, events, the log)
``handBack``; both are accepted, and the log keeps the wire form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .definitions import MAIN, Harness
from .errors import InvalidAnswerError, UnknownAgentError
from .state import Wait

__all__ = ["answer_target", "wire_answer"]

_WIRE_KEYS = {"hand_back": "handBack"}


def wire_answer(value: Any) -> Any:
    """The answer in the wire form: ``hand_back`` becomes ``handBack``."""
    if isinstance(value, Mapping) and any(k in _WIRE_KEYS for k in value):
        if any(wire in value for wire in _WIRE_KEYS.values()):
            raise InvalidAnswerError(
                "the answer names both hand_back and handBack; give one of them"
            )
        return {_WIRE_KEYS.get(k, k): v for k, v in value.items()}
    return value


def answer_target(harness: Harness, wait: Wait, value: Any) -> str | None:
    """The agent (None: main model) that gets the thread when ``value`` answers ``wait``."""
    value = wire_answer(value)
    if isinstance(value, Mapping) and set(value) == {"resume"} and value["resume"] is True:
        return wait.before if _still_root(harness, wait.before) else None
    if isinstance(value, Mapping) and set(value) == {"handBack"}:
        name = value["handBack"]
        if not isinstance(name, str):
            # A shape error, not a name that might exist: 400, like any answer of the wrong shape.
            raise InvalidAnswerError(
                f"handBack must be a string (an agent name, or 'main'), not {name!r}",
                field="handBack",
            )
        if name == MAIN:
            return None
        if harness.root_agent(name) is not None:
            return name
        roots = ", ".join((*harness.root_names, MAIN))
        raise UnknownAgentError(
            f"cannot hand back to {name!r}: harness {harness.name!r} has no such root agent; "
            f"use one of {roots}",
            agent=name,
        )
    raise InvalidAnswerError(
        f"{value!r} does not answer a person's wait; answer {{'resume': True}}, "
        f"{{'hand_back': '<agent>'}} or {{'hand_back': 'main'}} (handBack on the wire)"
    )


def resume_target(harness: Harness, wait: Wait) -> str | None:
    """Who gets the thread back on resolve or cancel: the agent before the handoff."""
    return wait.before if _still_root(harness, wait.before) else None


def _still_root(harness: Harness, name: str | None) -> bool:
    return name is not None and harness.root_agent(name) is not None
