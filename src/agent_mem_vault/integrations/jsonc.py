"""JSON settings edited in place: only what changes is rewritten, every other byte kept.

The clients' settings files are the person's: their comments, their order,
their indentation and line breaks stay exactly as they were, and an install
followed by an uninstall gives back the same bytes. ``parse`` reads the text
into a tree that knows where each value lies; ``edit`` turns the difference
between the old and the new data into a few text replacements.

Each client has its own dialect: Gemini CLI's settings.json takes ``//`` and
``/* */`` comments; opencode's config takes comments and trailing commas;
Claude Code and Codex read plain JSON. A file is parsed in its client's
dialect, and what the client would refuse is refused here too.

>>> text = '{\\n  // my model\\n  "model": "o3",\\n}\\n'
>>> LENIENT.edit(text, {"model": "o3", "mcp": {"x": 1}})
'{\\n  // my model\\n  "model": "o3",\\n  "mcp": {\\n    "x": 1\\n  },\\n}\\n'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

__all__ = ["GEMINI", "LENIENT", "STRICT", "Dialect", "JsoncError", "Node"]


class JsoncError(ValueError):
    """The text is not valid in the dialect; ``line`` says where."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.msg = message
        self.line = line


@dataclass
class Node:
    """A value in the text: ``text[start:end]``; objects and arrays hold their parts."""

    kind: str
    """``object``, ``array`` or ``value``."""
    start: int
    end: int
    value: Any = None
    keys: list[str] = field(default_factory=list)
    """An object's keys, in order (``children`` holds their values)."""
    key_starts: list[int] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)


_WS = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')


@dataclass(frozen=True)
class Dialect:
    """What a client's parser accepts beyond plain JSON."""

    comments: bool
    trailing_commas: bool

    def parse(self, text: str) -> Node:
        """The tree of ``text`` (one JSON value, with what this dialect allows around it)."""
        parser = _Parser(text, self)
        node = parser.value()
        parser.skip()
        if parser.pos != len(text):
            parser.fail("unexpected text after the end")
        return node

    def load(self, text: str) -> Any:
        return self.parse(text).value

    def edit(self, text: str, data: Any) -> str:
        """``text`` changed so that it holds ``data``, rewriting only what differs."""
        root = self.parse(text)
        edits: list[tuple[int, int, str]] = []
        _diff(text, root, data, edits)
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        return text


STRICT = Dialect(comments=False, trailing_commas=False)
"""Claude Code's and Codex's files."""
GEMINI = Dialect(comments=True, trailing_commas=False)
"""Gemini CLI strips comments, then parses plain JSON."""
LENIENT = Dialect(comments=True, trailing_commas=True)
"""opencode's config (and any reading where refusing helps nobody)."""


class _Parser:
    def __init__(self, text: str, dialect: Dialect) -> None:
        self.text = text
        self.pos = 0
        self.dialect = dialect

    def fail(self, what: str) -> NoReturn:
        raise JsoncError(what, self.text.count("\n", 0, self.pos) + 1)

    def skip(self) -> None:
        text = self.text
        while True:
            self.pos = _WS.match(text, self.pos).end()  # type: ignore[union-attr]
            if text.startswith("//", self.pos) or text.startswith("/*", self.pos):
                if not self.dialect.comments:
                    self.fail("a comment, which this file may not hold")
                if text.startswith("//", self.pos):
                    end = text.find("\n", self.pos)
                    self.pos = len(text) if end < 0 else end
                else:
                    end = text.find("*/", self.pos + 2)
                    if end < 0:
                        self.fail("a comment that is never closed")
                    self.pos = end + 2
                continue
            return

    def value(self) -> Node:
        self.skip()
        text, start = self.text, self.pos
        if start >= len(text):
            self.fail("the text ends where a value belongs")
        char = text[start]
        if char == "{":
            return self._container("object", "}")
        if char == "[":
            return self._container("array", "]")
        if char == '"':
            found = _STRING.match(text, start)
            if found is None:
                self.fail("a string that is not closed or holds a control character")
            try:
                string = json.loads(found.group())
            except json.JSONDecodeError as exc:  # an escape JSON lacks: \x, or \u and 2 digits
                self.pos = start + exc.pos
                self.fail("a string with an invalid escape")
            self.pos = found.end()
            return Node("value", start, self.pos, string)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, start):
                self.pos = start + len(word)
                return Node("value", start, self.pos, val)
        number = _NUMBER.match(text, start)
        if number is None or number.end() == start:
            self.fail(f"unexpected {char!r}")
        self.pos = number.end()
        return Node("value", start, self.pos, json.loads(number.group()))

    def _container(self, kind: str, close: str) -> Node:
        node = Node(kind, self.pos, self.pos)
        self.pos += 1
        values: dict[str, Any] | list[Any] = {} if kind == "object" else []
        self.skip()
        if self.text.startswith(close, self.pos):
            self.pos += 1
            node.end, node.value = self.pos, values
            return node
        while True:
            self.skip()
            if kind == "object":
                key_start = self.pos
                key = self.value()
                if not isinstance(key.value, str) or key.kind != "value":
                    self.fail("an object key that is not a string")
                self.skip()
                if not self.text.startswith(":", self.pos):
                    self.fail("a key without ':'")
                self.pos += 1
                child = self.value()
                node.keys.append(key.value)
                node.key_starts.append(key_start)
                assert isinstance(values, dict)
                values[key.value] = child.value
            else:
                child = self.value()
                assert isinstance(values, list)
                values.append(child.value)
            node.children.append(child)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                self.skip()
                if self.text.startswith(close, self.pos):
                    if not self.dialect.trailing_commas:
                        self.fail("a trailing comma, which this file may not hold")
                    break
                continue
            if self.text.startswith(close, self.pos):
                break
            self.fail(f"expected ',' or '{close}'")
        self.pos += 1
        node.end, node.value = self.pos, values
        return node


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _unit(text: str) -> str:
    """The file's own indentation step (two spaces when it has none)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            return line[: len(line) - len(stripped)]
    return "  "


def _dump(value: Any, text: str, indent: str) -> str:
    """``value`` as the file would write it, its lines indented to start at ``indent``."""
    dumped = json.dumps(value, indent=_unit(text), ensure_ascii=False)
    return dumped.replace("\n", "\n" + indent)


def _multiline(text: str, node: Node) -> bool:
    return "\n" in text[node.start : node.end]


def _diff(text: str, node: Node, new: Any, edits: list[tuple[int, int, str]]) -> None:
    old = node.value
    if old == new and type(old) is type(new):
        return
    if node.kind == "object" and isinstance(new, dict) and _object(text, node, new, edits):
        return
    if node.kind == "array" and isinstance(new, list) and _array(text, node, new, edits):
        return
    edits.append((node.start, node.end, _dump(new, text, _line_indent(text, node.start))))


def _object(text: str, node: Node, new: dict[str, Any], edits: list[tuple[int, int, str]]) -> bool:
    removed = [i for i, k in enumerate(node.keys) if k not in new]
    added = [k for k in new if k not in node.keys]
    kept = [k for k in new if k in node.keys]
    if kept != [k for k in node.keys if k in new]:
        return False  # reordered: rewrite the object
    if removed and added:
        return False
    for key in kept:
        _diff(text, node.children[node.keys.index(key)], new[key], edits)
    starts = node.key_starts
    ends = [c.end for c in node.children]
    if removed:
        edits.extend(_removals(text, node, starts, ends, removed))
    if added:
        entries = [
            json.dumps(k, ensure_ascii=False) + ": " + _dump(new[k], text, _inner(text, node))
            for k in added
        ]
        edits.append(_insertion(text, node, starts, ends, entries))
    return True


def _array(text: str, node: Node, new: list[Any], edits: list[tuple[int, int, str]]) -> bool:
    old = node.value
    starts = [c.start for c in node.children]
    ends = [c.end for c in node.children]
    if len(new) == len(old):
        for child, value in zip(node.children, new, strict=True):
            _diff(text, child, value, edits)
        return True
    if len(new) > len(old) and new[: len(old)] == old:
        entries = [_dump(v, text, _inner(text, node)) for v in new[len(old) :]]
        edits.append(_insertion(text, node, starts, ends, entries))
        return True
    # Some elements removed, the rest in order and unchanged.
    removed, j = [], 0
    for i, value in enumerate(old):
        if j < len(new) and new[j] == value:
            j += 1
        else:
            removed.append(i)
    if j != len(new):
        return False
    edits.extend(_removals(text, node, starts, ends, removed))
    return True


def _inner(text: str, node: Node) -> str:
    """The indentation of the container's members."""
    if node.children:
        first = node.key_starts[0] if node.kind == "object" else node.children[0].start
        if "\n" in text[node.start : first]:
            return _line_indent(text, first)
    return _line_indent(text, node.start) + _unit(text)


def _insertion(
    text: str, node: Node, starts: list[int], ends: list[int], entries: list[str]
) -> tuple[int, int, str]:
    if not starts:
        inside = text[node.start + 1 : node.end - 1]
        outer = _line_indent(text, node.start)
        body = (",\n" + _inner(text, node)).join(entries)
        if inside.strip():  # only comments inside: keep them, ours after the opening
            return (node.start + 1, node.start + 1, f"\n{_inner(text, node)}{body}")
        return (node.start + 1, node.end - 1, f"\n{_inner(text, node)}{body}\n{outer}")
    sep = ",\n" + _line_indent(text, starts[-1]) if _multiline(text, node) else ", "
    return (ends[-1], ends[-1], "".join(sep + e for e in entries))


def _removals(
    text: str, node: Node, starts: list[int], ends: list[int], removed: list[int]
) -> list[tuple[int, int, str]]:
    """Edits that take out the members ``removed``, each run of them with one separator."""
    count = len(starts)
    if len(removed) == count and not _has_comment(text[node.start + 1 : node.end - 1]):
        return [(node.start + 1, node.end - 1, "")]
    runs: list[list[int]] = []
    for i in sorted(removed):
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    out = []
    for run in runs:
        first, last = run[0], run[-1]
        if first > 0:
            out.append((ends[first - 1], ends[last], ""))  # ", <ours>" after one that stays
        elif last + 1 < count:
            out.append((starts[0], starts[last + 1], ""))  # "<ours>, " before the next
        else:
            end = ends[last]
            after = _WS.match(text, end).end()  # type: ignore[union-attr]
            out.append((starts[0], after + 1 if text.startswith(",", after) else end, ""))
    return out


def _has_comment(text: str) -> bool:
    return "//" in text or "/*" in text
