"""App tools: a function the harness runs for a model, with the schema the model sees.

The schema comes from the function itself, as in the OpenAI Agents SDK's
``@function_tool`` and pydantic-ai's tools: each parameter is an argument
(its type hint and default make the JSON Schema, the docstring's ``Args:``
describe it), the docstring's text is the description, and a parameter typed
:class:`ToolContext` (or named ``ctx``) receives the context instead. pydantic
builds the schema and validates the model's arguments before the function
runs; a bad argument is refused with a message naming the field.

>>> from agent_mem_vault.harness import ToolContext, tool
>>> @tool
... async def refund(order_id: str, amount: float = 0.0, *, ctx: ToolContext) -> str:
...     '''Refund an order.
...
...     Args:
...         order_id: The order to refund, e.g. "42".
...         amount: How much; 0 refunds it all.
...     '''
...     await ctx.run.handoff(to="billing", note=f"Refund for order {order_id}")
...     return "Billing answers next."
>>> refund.spec().parameters["required"]
['order_id']
>>> refund.description
'Refund an order.'

An explicit pydantic model still works: ``run(args, ctx)`` then gets the
validated model.

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
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..core.errors import InvalidInputError
from .errors import InvalidToolArgumentsError
from .model import ToolSpec
from .run_context import ToolContext

__all__ = ["HANDOFF_TOOL", "Tool", "tool"]

HANDOFF_TOOL = "handoff"
CONTEXT_NAMES = ("ctx", "context")

ToolFn = Callable[..., Awaitable[Any] | Any]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the harness runs for a model. Build it with :func:`tool`."""

    name: str
    description: str
    input: type[BaseModel]
    run: ToolFn
    context: str | None = ""
    """How ``run`` is called: ``""`` — ``run(args, ctx)`` with the input model;
    a parameter name — ``run(**arguments)`` with the context under that name;
    None — ``run(**arguments)`` without the context."""

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
        parsed = self.parse(arguments)
        if self.context == "":
            result = self.run(parsed, ctx)
        else:
            kwargs = {field: getattr(parsed, field) for field in type(parsed).model_fields}
            if self.context is not None:
                kwargs[self.context] = ctx
            result = self.run(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, BaseModel):
            return result.model_dump(mode="json")
        return result


@overload
def tool(fn: ToolFn, /, *, name: str | None = None, description: str | None = None) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    input: type[BaseModel],
    run: ToolFn,
) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[ToolFn], Tool]: ...


def tool(
    fn: ToolFn | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input: type[BaseModel] | None = None,
    run: ToolFn | None = None,
) -> Tool | Callable[[ToolFn], Tool]:
    """A tool from a function: ``tool(fn)``, ``@tool`` or ``@tool(name=..., description=...)``.

    The name defaults to the function's, the description to its docstring.
    With ``input=Model, run=fn`` the schema is the model's and ``fn(args, ctx)``
    gets the validated model.
    """
    if fn is not None and run is not None:
        raise InvalidInputError("pass the tool's function once: tool(fn) or tool(run=fn, ...)")
    if fn is None and run is None:
        if input is not None:
            raise InvalidInputError(
                "tool(input=...) needs run=: the function that takes (args, ctx)"
            )
        return lambda f: _build(f, name, description, None)
    return _build(fn if fn is not None else run, name, description, input)


def _build(
    fn: ToolFn | None, name: str | None, description: str | None, input: type[BaseModel] | None
) -> Tool:
    if not callable(fn):
        raise InvalidInputError(
            f"tool {name!r}: run must be callable, got {type(fn).__name__}; pass a "
            "function (with an explicit input model it takes (args, ctx))"
        )
    name = name if name is not None else getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name or len(name) > 64 or name == "<lambda>":
        raise InvalidInputError(
            f"a tool name must be 1 to 64 characters, got {name!r}; pass name=..."
        )
    if description is not None and not isinstance(description, str):
        raise InvalidInputError(f"tool {name!r}: description must be text")
    if input is not None:
        if not (isinstance(input, type) and issubclass(input, BaseModel)):
            raise InvalidInputError(
                f"tool {name!r}: input must be a pydantic BaseModel subclass, got {input!r}"
            )
        if description is None:
            description = _doc(fn)[0]
        return Tool(name=name, description=description, input=input, run=fn)
    summary, arguments = _doc(fn)
    model, context = _input_model(fn, name, arguments)
    return Tool(
        name=name,
        description=summary if description is None else description,
        input=model,
        run=fn,
        context=context,
    )


def _doc(fn: ToolFn) -> tuple[str, dict[str, str]]:
    """The docstring's description and each argument's (Google, NumPy, reST or Epydoc style)."""
    from docstring_parser import parse

    doc = parse(inspect.getdoc(fn) or "")
    text = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
    return text, {p.arg_name: p.description or "" for p in doc.params}


def _input_model(
    fn: ToolFn, name: str, described: Mapping[str, str]
) -> tuple[type[BaseModel], str | None]:
    """The pydantic model of ``fn``'s arguments, and the parameter that takes the context."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"tool {name!r}: cannot read the function's signature") from exc
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # a hint that names what only a type checker sees
        hints = {}
    fields: dict[str, Any] = {}
    context: str | None = None
    for param in signature.parameters.values():
        hint = hints.get(param.name, param.annotation)
        if hint is ToolContext or (
            param.name in CONTEXT_NAMES
            and (hint is inspect.Parameter.empty or isinstance(hint, str))
        ):
            context = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise InvalidInputError(
                f"tool {name!r}: *{param.name} cannot be described to a model; name each "
                "argument, or pass input=<pydantic model>"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise InvalidInputError(
                f"tool {name!r}: argument {param.name!r} is positional-only; a model "
                "passes arguments by name"
            )
        if isinstance(hint, str):
            raise InvalidInputError(
                f"tool {name!r}: the type hint {hint!r} of {param.name!r} does not resolve at "
                "run time; import it outside `if TYPE_CHECKING:`"
            )
        annotation = Any if hint is inspect.Parameter.empty else hint
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            annotation,
            Field(default, description=described.get(param.name) or None),
        )
    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(title=name), **fields)
    except Exception as exc:
        raise InvalidInputError(
            f"tool {name!r}: its arguments cannot make a schema ({exc}); rename the "
            "argument, or pass input=<pydantic model>"
        ) from exc
    return model, context
