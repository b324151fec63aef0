"""The JSON of a value whose keys are its fields' names in camelCase, in field order.

The harness's threads and waits, the run registry's runs and the session book's
sessions travel as JSON (HTTP, logs, stored documents, ``--json``) keyed by
their fields: ``tool_call_id`` goes out as ``toolCallId``. Written by hand,
each such mapping says every name twice and lets a key drift from its field;
here a dataclass says it once. A field's name is therefore its wire name:
renaming one changes what clients read, which the tests of each value pin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from types import MappingProxyType
from typing import Any

__all__ = ["LEFT_OUT", "ONLY_WHEN_SET", "CamelJson", "camel"]

LEFT_OUT: Mapping[str, str] = MappingProxyType({"wire": "left out"})
"""Field metadata: the field is no part of the JSON (a store's version of the value, say)."""

ONLY_WHEN_SET: Mapping[str, str] = MappingProxyType({"wire": "only when set"})
"""Field metadata: the key is absent while the value is None (an optional record field)."""


def camel(name: str) -> str:
    """A field's name as a wire key.

    >>> camel("tool_call_id"), camel("run")
    ('toolCallId', 'run')
    """
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


_PLAIN = frozenset({str, int, float, bool, type(None)})
"""The types whose values go on the wire as they are, told apart by one look-up."""

_Layout = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]
_LAYOUTS: dict[type[Any], _Layout] = {}


def _layout(cls: type[Any]) -> _Layout:
    """Per class, read once: (field, key) of each field on the wire, and the keys
    left out while None."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        on_wire = [f for f in fields(cls) if f.metadata.get("wire") != LEFT_OUT["wire"]]
        layout = _LAYOUTS[cls] = (
            tuple((f.name, camel(f.name)) for f in on_wire),
            tuple(
                camel(f.name) for f in on_wire if f.metadata.get("wire") == ONLY_WHEN_SET["wire"]
            ),
        )
    return layout


def _wire_value(value: Any) -> Any:
    """A value that is not plain, as JSON: one with a wire form of its own gives that, a
    mapping a plain dict (a copy, so the JSON does not alias the value)."""
    if isinstance(value, Mapping):
        return dict(value)
    to_json = getattr(value, "to_json", None)
    return value if to_json is None else to_json()


class CamelJson:
    """Base of a dataclass whose ``to_json`` is its fields under camelCase keys.

    Mark a field with ``field(metadata=LEFT_OUT)`` to keep it off the wire, or
    ``ONLY_WHEN_SET`` to leave its key out while it is None.
    """

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        keys, only_when_set = _layout(type(self))
        out: dict[str, Any] = {}
        for name, key in keys:
            value = getattr(self, name)
            out[key] = value if type(value) in _PLAIN else _wire_value(value)
        for key in only_when_set:
            if out[key] is None:
                del out[key]
        return out
