"""Tool arguments checked before a tool runs: unknown ones refused, problems in one line.

The SDK validates a call's arguments with a pydantic model built from the
tool's signature, but it ignores arguments the tool does not take (``tags`` on
``create_handoff`` would vanish without a word) and reports problems as
pydantic's multi-line text with documentation URLs. A model reading that
cannot tell what to change. So every ``tools/call`` goes through
:class:`ArgumentCheck` first (an SDK middleware, added after the tools are
registered): it refuses unknown arguments and reports each missing or invalid
one as ``field: what was expected``, in one line, as a tool error
(``isError``, code ``invalid_arguments``) the model can act on. A call that
passes goes on to the SDK unchanged. The same middleware makes ``tools/list``
say so: each checked tool's input schema carries ``additionalProperties:
false``, so a client that validates before calling (or a model API in strict
mode) learns the rule from the schema instead of from a refused call. A string
argument holding a NUL is refused here too (code ``invalid_string``), by the
rule HTTP bodies follow (:mod:`agent_mem_vault.core.text`). The error is made
as every error of the package is, so it quotes at most 200 characters of any
value it names.

>>> check = ArgumentCheck()  # doctest: +SKIP
>>> check.add("create_handoff", create_handoff)  # doctest: +SKIP
>>> server.middleware.append(check)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult, ListToolsResult
from pydantic import BaseModel, ValidationError

from ..core.errors import InvalidInputError
from ..core.text import describe_char, unstorable_char
from .errors import tool_error

__all__ = ["ArgumentCheck", "argument_problems"]

_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "object": "an object",
    "array": "a list",
}


class ArgumentCheck:
    """SDK middleware: a ``tools/call`` with bad arguments gets a one-line tool error."""

    def __init__(self) -> None:
        self._functions: dict[str, Callable[..., Any]] = {}
        self._models: dict[str, tuple[type[BaseModel], Callable[[dict[str, Any]], Any]]] = {}

    def add(self, name: str, fn: Callable[..., Any]) -> None:
        """Check the arguments of tool ``name`` against the signature of ``fn``."""
        self._functions[name] = fn

    def _model(self, name: str) -> tuple[type[BaseModel], Callable[[dict[str, Any]], Any]]:
        # Built on the first call of each tool, not at start-up: the SDK has built
        # the same model already, and a server that is never called pays nothing.
        if name not in self._models:
            from mcp.server.mcpserver.utilities.func_metadata import func_metadata

            meta = func_metadata(self._functions[name])
            self._models[name] = (meta.arg_model, meta.pre_parse_json)
        return self._models[name]

    def problems(self, name: str, arguments: Mapping[str, Any]) -> list[str]:
        """What is wrong with ``arguments`` for tool ``name``, one entry per argument."""
        model, pre_parse = self._model(name)
        return argument_problems(model, pre_parse(dict(arguments)))

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method == "tools/list":
            return self._closed(await call_next(ctx))
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping):
            name = params.get("name")
            arguments = params.get("arguments") or {}
            if isinstance(name, str) and name in self._functions and isinstance(arguments, Mapping):
                problems = self.problems(name, arguments)
                if problems:
                    return _error(name, problems)
                found = unstorable_char(dict(arguments))
                if found is not None:
                    path, char = found
                    problem = f"{path}: holds {describe_char(char)}, which cannot be stored"
                    return _error(name, [problem + "; remove it"], code="invalid_string")
        return await call_next(ctx)

    def _closed(self, result: HandlerResult) -> HandlerResult:
        """``result`` with ``additionalProperties: false`` in the schema of each checked tool."""
        # The SDK hands middleware the wire form (a dict); a model is handled too,
        # so that an SDK release that changes this keeps the schemas closed.
        if isinstance(result, ListToolsResult):
            for tool in result.tools:
                if tool.name in self._functions:
                    tool.input_schema = _closed_schema(tool.input_schema)
        elif isinstance(result, dict) and isinstance(result.get("tools"), list):
            for tool in result["tools"]:
                if isinstance(tool, dict) and tool.get("name") in self._functions:
                    tool["inputSchema"] = _closed_schema(tool.get("inputSchema", {}))
        return result


def argument_problems(model: type[BaseModel], arguments: dict[str, Any]) -> list[str]:
    """Unknown, missing and invalid arguments of ``model``, each as ``field: expected …``."""
    properties = _properties(model)
    known = ", ".join(properties) or "none"
    problems = [
        f"{key}: unknown argument (this tool takes: {known})"
        for key in arguments
        if key not in properties
    ]
    try:
        model.model_validate(arguments)
    except ValidationError as exc:
        for err in exc.errors(include_url=False, include_input=False, include_context=False):
            field = ".".join(str(part) for part in err["loc"]) or "(arguments)"
            top = str(err["loc"][0]) if err["loc"] else ""
            expected = _expected(properties.get(top, {}))
            if err["type"] == "missing":
                problems.append(f"{field}: missing, expected {expected}")
            elif err["type"].endswith(("_type", "_parsing")) and field == top:
                problems.append(f"{field}: expected {expected}")
            elif err["msg"].startswith("Input should be "):
                problems.append(f"{field}: expected {err['msg'].removeprefix('Input should be ')}")
            else:
                said = err["msg"].removeprefix("Value error, ")
                problems.append(f"{field}: {said[:1].lower()}{said[1:]} (expected {expected})")
    return problems


@functools.cache
def _properties(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of each argument of ``model``, built once per tool: building it
    costs about a millisecond, more than the rest of a call's own work."""
    schema = model.model_json_schema(by_alias=True)
    properties: dict[str, Any] = schema.get("properties", {})
    return properties


def _closed_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    if schema.get("type") != "object":
        return dict(schema)
    return {**schema, "additionalProperties": False}


def _expected(schema: Mapping[str, Any]) -> str:
    """A JSON schema in a few words: ``a string``, ``a list of strings``, ``one of a, b``."""
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    if "anyOf" in schema:
        options = [_expected(s) for s in schema["anyOf"] if s.get("type") != "null"]
        return " or ".join(options) or "null"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(_TYPES.get(str(k), str(k)) for k in kind if k != "null")
    if kind == "array":
        items = schema.get("items", {})
        inner = _TYPES.get(items.get("type", ""), "")
        return (
            "a list of " + inner.removeprefix("a ").removeprefix("an ") + "s" if inner else "a list"
        )
    return _TYPES.get(str(kind), "a value")


def _error(tool: str, problems: list[str], *, code: str = "invalid_arguments") -> CallToolResult:
    return tool_error(
        InvalidInputError(
            f"{tool}: " + "; ".join(problems), code=code, tool=tool, problems=problems
        )
    )
