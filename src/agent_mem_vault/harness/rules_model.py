"""A deterministic, offline ``Model`` that follows keyword rules: the demo runs without a key.

``agent-mem-vault demo support`` must show the whole support-desk story (the
desk hands a refund to billing, billing answers, the user asks for a person)
on a machine with no model configured. This model does that with plain
rules over the latest user message, and it says that it is rule-based in
every free-text answer, so nobody mistakes it for a language model.

It reads the tools it is offered: it calls ``handoff`` only when the request
has that tool and the tool's ``to`` accepts the target (an agent name,
``main``, or ``{"human": true}``); otherwise the rule is skipped.

    >>> desk = support_desk_model()
    >>> billing = billing_model()
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .messages import Message, ToolResultPart
from .model import ModelEvent, ModelRequest, TextDelta, ToolCallRequest, ToolSpec

__all__ = [
    "HUMAN_KEYWORDS",
    "Rule",
    "RuleBasedModel",
    "billing_model",
    "support_desk_model",
]

HANDOFF = "handoff"

HUMAN_KEYWORDS = (
    "person",
    "human",
    "agent please",
    "real agent",
    "operator",
    "someone real",
    "talk to someone",
    "speak to someone",
)
BILLING_KEYWORDS = ("refund", "invoice", "payment", "charge", "charged", "billing", "bill", "paid")


@dataclass(frozen=True, slots=True)
class Rule:
    """When the latest user message has one of ``keywords`` (any, if empty), act.

    The action is a ``handoff`` to a target (an agent name, ``"main"`` or
    ``{"human": True}``) with ``note``, said first in ``reply`` when the rule
    has one (what the user reads: "a person will answer here"), or else the
    text ``reply`` alone. Both are templates: ``{text}`` is the user's message,
    ``{order}`` the order it names ("your order" if none).
    """

    keywords: tuple[str, ...] = ()
    reply: str | None = None
    handoff: str | Mapping[str, bool] | None = None
    note: str | None = None

    def matches(self, text: str) -> bool:
        return not self.keywords or any(_has_word(text, k) for k in self.keywords)


class RuleBasedModel:
    """A model that answers from keyword ``rules``, first match wins.

    A rule whose handoff is not offered in the request is skipped, so the
    same rules work whether or not the harness gives models a ``handoff``
    tool or allows a handoff to a person. When the last message is the result
    of a (non-handoff) tool this model called, it reports that result rather
    than matching again, so it never loops on a tool; a handoff that was
    refused is explained in text, not tried again.

    >>> model = RuleBasedModel([Rule(("hello",), reply="Hi! (rule-based)")], fallback="?")
    """

    def __init__(self, rules: Sequence[Rule], *, fallback: str, name: str = "rule-based") -> None:
        self.rules = tuple(rules)
        self.fallback = fallback
        self.name = name

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer one request: one ``handoff`` tool call, or text in word-sized deltas."""
        for event in self.answer(request):
            yield event

    def answer(self, request: ModelRequest) -> list[ModelEvent]:
        """The whole answer to ``request`` at once (``stream`` yields these)."""
        last = request.messages[-1] if request.messages else None
        result = _tool_result(last)
        if result is not None and result.is_error and result.name == HANDOFF:
            # Asking again would fail the same way and loop the turn.
            return _text(f"I could not hand you over: {_plain(result.output)}" + NOTE)
        if result is not None and result.name != HANDOFF:
            return _text(f"The tool {result.name} answered: {_plain(result.output)}")
        text = _latest_user_text(request.messages)
        values = {"text": _shorten(text), "order": _order(text)}
        offered = _offered_targets(request.tools)
        for rule in self.rules:
            if not rule.matches(text):
                continue
            if rule.handoff is not None:
                if not _accepts(offered, rule.handoff):
                    continue
                arguments: dict[str, Any] = {
                    "to": dict(rule.handoff) if isinstance(rule.handoff, Mapping) else rule.handoff
                }
                if rule.note:
                    arguments["note"] = rule.note.format(**values)
                said = _text(rule.reply.format(**values)) if rule.reply is not None else []
                return [*said, ToolCallRequest(f"call_{uuid.uuid4().hex[:16]}", HANDOFF, arguments)]
            if rule.reply is not None:
                return _text(rule.reply.format(**values))
        return _text(self.fallback.format(**values))

    def __repr__(self) -> str:
        return f"RuleBasedModel({self.name!r}, {len(self.rules)} rules)"


@dataclass(frozen=True, slots=True)
class _Offered:
    names: frozenset[str]
    human: bool


def _offered_targets(tools: Iterable[ToolSpec]) -> _Offered | None:
    """What the ``handoff`` tool's ``to`` accepts, or None when there is no such tool."""
    for spec in tools:
        if spec.name == HANDOFF:
            to = spec.parameters.get("properties", {}).get("to", {})
            names: set[str] = set()
            human = False
            for branch in (to, *to.get("anyOf", ()), *to.get("oneOf", ())):
                names.update(str(v) for v in branch.get("enum", ()))
                if "const" in branch and isinstance(branch["const"], str):
                    names.add(branch["const"])
                if branch.get("type") == "object" and "human" in branch.get("properties", {}):
                    human = True
            return _Offered(frozenset(names), human)
    return None


def _accepts(offered: _Offered | None, target: str | Mapping[str, bool]) -> bool:
    if offered is None:
        return False
    if isinstance(target, Mapping):
        return offered.human and target.get("human") is True
    return target in offered.names


def _tool_result(message: Message | None) -> ToolResultPart | None:
    if message is None:
        return None
    results = [p for p in message.parts if isinstance(p, ToolResultPart)]
    return results[-1] if results else None


def _latest_user_text(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.role != "user":
            continue
        harness = message.metadata.get("harness")
        # Files an operator attached travel in a user message of their own;
        # they are not something the user said.
        if isinstance(harness, Mapping) and harness.get("operatorAttachment"):
            continue
        return message.text
    return ""


def _has_word(text: str, keyword: str) -> bool:
    return re.search(rf"\b{re.escape(keyword)}\b", text, re.IGNORECASE) is not None


_ORDER = re.compile(r"\border\s*(?:number\s*|no\.?\s*)?#?\s*([A-Za-z0-9-]*\d[A-Za-z0-9-]*)", re.I)


def _order(text: str) -> str:
    found = _ORDER.search(text)
    return f"order {found.group(1)}" if found else "your order"


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _text(text: str) -> list[ModelEvent]:
    # Word-sized deltas, so that a live view shows the reply arriving.
    return [TextDelta(piece) for piece in re.findall(r"\S+\s*|\s+", text)]


NOTE = " (I am a rule-based demo model, not a language model.)"

TO_A_PERSON = (
    "I am handing you to a person from our team. They will answer here; "
    "anything you write meanwhile is kept for them." + NOTE
)
"""What the demo's models tell a user they hand to a person."""


_TO_A_PERSON_RULE = Rule(
    HUMAN_KEYWORDS,
    reply=TO_A_PERSON,
    handoff={"human": True},
    note="The user asks for a person: {text}",
)
"""Both demo models hand a user who asks for a person to one."""


def support_desk_model() -> RuleBasedModel:
    """The main model of the support-desk demo: billing to ``billing``, people to a person."""
    return RuleBasedModel(
        [
            _TO_A_PERSON_RULE,
            Rule(
                BILLING_KEYWORDS, handoff="billing", note="Billing question about {order}: {text}"
            ),
            Rule(
                ("thanks", "thank you", "bye", "goodbye"),
                reply="You are welcome. Write again any time." + NOTE,
            ),
            Rule(
                ("hello", "hi", "hey"),
                reply="Hello! This is the support desk. I can pass refund, invoice and payment "
                "questions to billing, or get you a person." + NOTE,
            ),
        ],
        fallback="I can pass refund, invoice and payment questions to billing, or get you a "
        "person; for anything else I have no answer." + NOTE,
        name="rule-based/support-desk",
    )


def billing_model() -> RuleBasedModel:
    """The billing agent's model in the demo: answers refunds, invoices and payments."""
    return RuleBasedModel(
        [
            _TO_A_PERSON_RULE,
            Rule(
                ("refund",),
                reply="I have noted a refund request for {order}. Refunds go back to the "
                "original payment method within 5 to 10 business days. This demo moves no "
                "money." + NOTE,
            ),
            Rule(
                ("invoice", "bill"),
                reply="Invoices for {order} are in your account under Billing, and I can "
                "resend one to your email." + NOTE,
            ),
            Rule(
                ("payment", "charge", "charged", "paid", "billing"),
                reply="I see your question about a payment for {order}. If you were charged "
                "twice, one charge is a hold that disappears within 3 days." + NOTE,
            ),
            Rule(handoff="main", note="Not a billing question: {text}"),
        ],
        fallback="I only handle refunds, invoices and payments." + NOTE,
        name="rule-based/billing",
    )
