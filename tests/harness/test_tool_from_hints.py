"""Tools from type hints and docstrings: ``tool(fn)``, ``@tool`` and ``@tool(...)``."""

from __future__ import annotations

import re
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.harness import (
    HarnessHost,
    Tool,
    ToolContext,
    ToolResultPart,
    define_harness,
    tool,
)
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call


def test_a_tool_without_arguments_needs_no_model() -> None:
    @tool
    def ping() -> str:
        """Check that the desk answers."""
        return "pong"

    assert isinstance(ping, Tool)
    assert (ping.name, ping.description) == ("ping", "Check that the desk answers.")
    assert ping.spec().parameters["properties"] == {}


def test_the_schema_comes_from_the_signature_and_the_docstring() -> None:
    @tool(name="refund_order")
    async def refund(
        order_id: str,
        reason: Literal["damaged", "late"],
        amount: Annotated[float, Field(ge=0)] = 0.0,
        *,
        ctx: ToolContext,
    ) -> str:
        """Refund an order.

        Only for orders that arrived damaged or late.

        Args:
            order_id: The order to refund, e.g. "42".
            reason: Why it is refunded.
            amount: How much; 0 refunds it all.
        """
        return order_id

    schema = refund.spec().parameters
    assert refund.name == "refund_order"
    assert refund.description == "Refund an order.\n\nOnly for orders that arrived damaged or late."
    assert schema["required"] == ["order_id", "reason"]
    assert set(schema["properties"]) == {"order_id", "reason", "amount"}  # no ctx
    assert schema["properties"]["order_id"]["description"] == 'The order to refund, e.g. "42".'
    assert schema["properties"]["reason"]["enum"] == ["damaged", "late"]
    assert schema["properties"]["amount"]["minimum"] == 0
    assert schema["properties"]["amount"]["default"] == 0.0


def test_an_explicit_description_wins_over_the_docstring() -> None:
    def lookup(order_id: int) -> str:
        """Docstring text."""
        return str(order_id)

    assert tool(lookup, description=None).description == "Docstring text."
    assert tool(description="Find an order")(lookup).description == "Find an order"


def test_an_explicit_pydantic_model_is_still_accepted() -> None:
    class Order(BaseModel):
        order_id: str

    def escalate(args: Order, ctx: ToolContext) -> str:
        return args.order_id

    built = tool(name="escalate", description="Escalate", input=Order, run=escalate)
    assert built.input is Order
    assert built.spec().parameters["required"] == ["order_id"]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: tool(lambda: "x"), "a tool name must be 1 to 64 characters"),
        (lambda: tool(name="x", description="d", input=dict, run=print), "BaseModel"),  # type: ignore[arg-type]
        (lambda: tool(_splat), "*args cannot be described"),
        (lambda: tool(42), "must be callable"),  # type: ignore[call-overload]
    ],
    ids=["lambda-without-name", "input-not-a-model", "var-args", "not-callable"],
)
def test_a_tool_that_cannot_be_described_is_refused_with_why(make: object, says: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(says)):
        make()  # type: ignore[operator]


def _splat(*args: str) -> str:
    return ""


async def test_the_tool_runs_with_validated_arguments_and_its_context() -> None:
    seen: list[object] = []

    @tool
    async def refund(order_id: int, ctx: ToolContext, amount: float = 1.5) -> str:
        """Refund an order."""
        seen.append((order_id, amount, ctx.thread_id))
        return "refunded"

    first = [tool_call("refund", {"order_id": "42"}), text("Done.")]
    main = ScriptedModel([*first, tool_call("refund", {}), text("Sorry.")])
    harness = define_harness(name="acme/desk", model=main, tools=[refund])
    async with HarnessHost() as host:
        session = await host.open(harness, thread_id="t1")
        assert (await session.send("refund 42")).text == "Done."
        assert seen == [(42, 1.5, "t1")]  # "42" coerced to the hinted int, default filled

        await session.send("refund it")

    # The model is told which field was wrong, and the tool did not run.
    results = [p for m in main.calls[-1].messages for p in m.parts if isinstance(p, ToolResultPart)]
    [result] = results[-1:]
    assert result.is_error
    assert "order_id" in str(result.output) and "Field required" in str(result.output)
    assert len(seen) == 1
