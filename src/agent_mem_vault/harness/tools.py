"""App tools: a name, a description, a pydantic input model and a function.

The input model is the edge: a model's arguments are validated by it before the
function runs, and its JSON Schema is what the model sees.

>>> from pydantic import BaseModel
>>> class Order(BaseModel):
...     order_id: str
>>> async def escalate(args: Order, ctx: ToolContext) -> str:
...     await ctx.run.handoff(to="billing", note=f"Refund for order {args.order_id}")
...     return "Billing answers next."
>>> escalate_tool = tool(name="escalate", description="Send the user to billing",
...                      input=Order, run=escalate)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..core.errors import InvalidInputError
from .errors import InvalidToolArgumentsError
from .model import ToolSpec

if TYPE_CHECKING:
    from .context import ToolContext

__all__ = ["HANDOFF_TOOL", "Tool", "tool"]

HANDOFF_TOOL = "handoff"

ToolFn = Callable[[Any, "ToolContext"], Awaitable[Any] | Any]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the harness runs for a model. Build it with :func:`tool`."""

    name: str
    description: str
    input: type[BaseModel]
    run: ToolFn

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input.model_json_schema())

    def parse(self, arguments: Mapping[str, Any]) -> BaseModel:
        """Validate a model's arguments; the error names every wrong field."""
        try:
            return self.input.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(input)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise InvalidToolArgumentsError(
                f"arguments for tool {self.name!r} are invalid ({problems}); "
                "call it again with arguments that match its schema",
                tool=self.name,
            ) from None

    async def call(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
        result = self.run(self.parse(arguments), ctx)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, BaseModel):
            return result.model_dump(mode="json")
        return result


def tool(*, name: str, description: str, input: type[BaseModel], run: ToolFn) -> Tool:
    """Define a tool; ``run(args, ctx)`` gets the validated input model and a ToolContext."""
    if not isinstance(name, str) or not name or len(name) > 64:
        raise InvalidInputError(f"a tool name must be 1 to 64 characters, got {name!r}")
    if not (isinstance(input, type) and issubclass(input, BaseModel)):
        raise InvalidInputError(
            f"tool {name!r}: input must be a pydantic BaseModel subclass, got {input!r}"
        )
    if not callable(run):
        raise InvalidInputError(
            f"tool {name!r}: run must be callable, got {type(run).__name__}; pass a "
            "function that takes (args, ctx)"
        )
    return Tool(name=name, description=description, input=input, run=run)
